"""The paper's answer in three speedups per model and hardware pair, each naming its two cells.

    from orchestrator.analysis.answer import kind_speedups, pair_table
    v = variants(ok_epochs(epochs, trials))
    kind_speedups(v)     # per model, (CPU class, GPU class) and kind: paper, device, best
    pair_table(v)        # every CPU variant cell against every GPU variant cell of the same configuration

Definitions (the kinds' cells are declared in analysis.study):
    paper    the paper's conditions on both sides: DataLoader with the study's workers (else the
             fewest measured), fp32, eager, batch 128. The workers and CPUs are in the cell names.
    device   the same with the data resident on each device (no input pipeline): device / paper says
             how much the input pipeline hid
    best     on each side, the fastest measured batch-128 cell (lowest median steady epoch_s) whose
             final test accuracy is at most BEST_ACC_POINTS below that side's paper cell (capped cells
             only against a capped paper cell). A cell that ran fewer epochs than the paper cell is held
             to the paper cell's accuracy at the same epoch (paper_accuracies), since accuracy still
             grows in later epochs. The accuracy check names the TOST (analysis.parity, margin
             BEST_ACC_POINTS) where both cells have parity.MIN_REPEATS runs, else says they are too few.
    speedup, speedup_low, speedup_high   speedups.speedup and bootstrap_speedup_ci of the two cells'
             steady epoch_s samples: the same numbers the speedup table gives the same two cells.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from orchestrator.analysis import parity
from orchestrator.analysis.speedups import bootstrap_speedup_ci, capped, speedup
from orchestrator.analysis.stats import RUN
from orchestrator.analysis.study import BEST, KINDS, PAPER, STUDY, ExpectedCell, matches, of_kind
from orchestrator.analysis.variants import VARIANT, Variants
from orchestrator.results.rows import CONFIG, HW_CLASS
from trainables.config import BATCH_SIZE

BEST_ACC_POINTS = 1.5  # a best cell's final accuracy may be at most this many points below the paper cell's

SIDE = ("cell", "epoch_s", "acc", "workers", "cpus")  # per side: cpu_cell, gpu_cell, cpu_epoch_s, ...
KIND_COLUMNS = ["model", "params", "cpu_class", "gpu_class", "kind", "speedup", "speedup_low", "speedup_high"]
KIND_COLUMNS += [f"{d}_{s}" for s in SIDE for d in ("cpu", "gpu")]
KIND_COLUMNS += ["cpu_accuracy_check", "gpu_accuracy_check", "note"]
PAIR_COLUMNS = ["model", "params", *CONFIG, "cpu_class", "gpu_class", "cpu_workers", "cpu_cpus"]
PAIR_COLUMNS += ["gpu_workers", "gpu_cpus", "cpu_cell", "gpu_cell", "cpu_acc", "gpu_acc", "speedup"]
PAIR_COLUMNS += ["speedup_low", "speedup_high"]


def _side(cell: pd.Series | None, device: str) -> dict:
    if cell is None:
        return {f"{device}_{s}": (None if s == "cell" else math.nan) for s in SIDE}
    return {
        f"{device}_cell": cell["name"],
        f"{device}_epoch_s": float(cell["epoch_s"]),
        f"{device}_acc": float(cell["test_acc"]),
        f"{device}_workers": int(cell["data_workers"]),
        f"{device}_cpus": int(cell["cpus_allotted"]),
    }


def _ratio(v: Variants, cpu: pd.Series | dict | None, gpu: pd.Series | dict | None) -> dict:
    if cpu is None or gpu is None:
        return dict(speedup=math.nan, speedup_low=math.nan, speedup_high=math.nan)
    c, g = v.samples[cpu["name"]], v.samples[gpu["name"]]
    low, high = bootstrap_speedup_ci(c, g)
    return dict(speedup=speedup(c, g), speedup_low=low, speedup_high=high)


def _pick(cells: pd.DataFrame, kind: str, device: str, study: tuple[ExpectedCell, ...]) -> pd.Series | None:
    """The measured cell of `kind` (paper or device) on `device` among `cells` (one model, one class):
    an exact match of the study's cell, else one that differs only in its workers (the fewest)."""
    rows = [r for _, r in cells.iterrows()]
    for expected in of_kind(kind, device, study):
        exact = [r for r in rows if matches(expected, r)]
        loose = [r for r in rows if matches(_any_workers(expected), r)]
        found = exact or sorted(loose, key=lambda r: int(r["data_workers"]))
        if found:
            return found[0]
    return None


def _any_workers(expected: ExpectedCell) -> ExpectedCell:
    return dataclasses.replace(expected, workers=None)


def last_epoch(v: Variants, name: str) -> int | None:
    """The epochs every run of a cell reached (the fewest over its runs); None without epoch rows."""
    runs = v.runs.get(name)
    if runs is None or runs.empty:
        return None
    return int(runs.groupby(RUN, dropna=False)["epoch"].max().min())


def paper_accuracies(v: Variants, paper_cell: pd.Series, epoch: int | None) -> tuple[np.ndarray, int | None]:
    """The paper cell's per-run test accuracies that a cell reaching `epoch` epochs is held to, and the
    epoch they were taken at: the paper cell's finals (None) unless `epoch` is fewer than it ran."""
    name = paper_cell["name"]
    ran = last_epoch(v, name)
    if epoch is None or ran is None or epoch >= ran:
        return v.finals[name], None
    runs = v.runs[name]
    return runs.loc[(runs["epoch"] == epoch).to_numpy(), "test_acc"].dropna().to_numpy(dtype=float), epoch


def _floor(v: Variants, cell: pd.Series, paper_cell: pd.Series) -> float:
    """The lowest test accuracy `cell` may have to count as a best cell (module docstring)."""
    if cell["name"] == paper_cell["name"]:
        return float(paper_cell["test_acc"]) - BEST_ACC_POINTS / 100
    accs, _ = paper_accuracies(v, paper_cell, last_epoch(v, cell["name"]))
    return (float(np.median(accs)) if len(accs) else math.nan) - BEST_ACC_POINTS / 100


def _best(v: Variants, cells: pd.DataFrame, paper_cell: pd.Series | None) -> tuple[pd.Series | None, str]:
    """(best cell, why none) among one side's cells of one model and class (module docstring)."""
    if paper_cell is None:
        return None, "no paper cell to hold its accuracy to"
    if math.isnan(float(paper_cell["test_acc"])):
        return None, "the paper cell has no accuracy"
    fit = cells[
        (cells["batch_size"] == BATCH_SIZE).to_numpy() & np.isfinite(cells["epoch_s"].to_numpy(dtype=float))
    ]
    fit = fit[
        [
            capped(r) == capped(paper_cell) and float(r["test_acc"]) >= _floor(v, r, paper_cell) - 1e-12
            for _, r in fit.iterrows()
        ]
    ]
    if fit.empty:
        return None, "no cell within the accuracy bound"
    return fit.sort_values(["epoch_s", "name"], kind="stable").iloc[0], ""


def accuracy_check(v: Variants, best: pd.Series | None, paper_cell: pd.Series | None) -> str:
    """How the best cell's accuracy compares with the paper cell's, in words."""
    if best is None or paper_cell is None:
        return ""
    if best["name"] == paper_cell["name"]:
        return "is the paper cell"
    paper_accs, at = paper_accuracies(v, paper_cell, last_epoch(v, best["name"]))
    a, b = 100 * paper_accs, 100 * v.finals[best["name"]]
    held_to = float(np.median(a)) if at else 100 * float(paper_cell["test_acc"])
    diff = 100 * float(best["test_acc"]) - held_to
    text = f"{diff:+.1f} points vs paper cell" + (f" at epoch {at} (the best cell's last)" if at else "")
    label = parity.verdict(a, b, margin=BEST_ACC_POINTS)
    if label == parity.TOO_FEW:
        return f"{text}; too few runs for the TOST (n={len(a)}/{len(b)}, needs {parity.MIN_REPEATS})"
    p = parity.tost_p(a, b, margin=BEST_ACC_POINTS)
    return f"{text}; TOST (±{BEST_ACC_POINTS} points): {label}, p={p:.3f}"


def _classes(cells: pd.DataFrame, device: str) -> list[str]:
    return sorted(set(cells.loc[cells["device"] == device, HW_CLASS].astype(str))) or [""]


def kind_speedups(v: Variants, study: tuple[ExpectedCell, ...] = STUDY) -> pd.DataFrame:
    """One row per model (by params), (CPU class, GPU class) and kind (KINDS order): KIND_COLUMNS."""
    cells = v.cells
    if cells.empty:
        return pd.DataFrame(columns=KIND_COLUMNS)
    rows = []
    order = cells.groupby("model")["params"].max().sort_values(kind="stable")
    for model, params in order.items():
        mine = cells[(cells["model"] == model).to_numpy()]
        for cpu_class in _classes(mine, "cpu"):
            for gpu_class in _classes(mine, "gpu"):
                of = {
                    "cpu": mine[((mine["device"] == "cpu") & (mine[HW_CLASS] == cpu_class)).to_numpy()],
                    "gpu": mine[((mine["device"] == "gpu") & (mine[HW_CLASS] == gpu_class)).to_numpy()],
                }
                paper = {d: _pick(of[d], PAPER, d, study) for d in of}
                for kind in KINDS:
                    checks, notes = {"cpu": "", "gpu": ""}, []
                    if kind == BEST:
                        picked = {}
                        for d in of:
                            picked[d], why = _best(v, of[d], paper[d])
                            checks[d] = accuracy_check(v, picked[d], paper[d])
                            notes += [f"{d.upper()}: {why}"] if why and not of[d].empty else []
                    else:
                        picked = paper if kind == PAPER else {d: _pick(of[d], kind, d, study) for d in of}
                    notes += [f"no {d.upper()} {kind} cell" for d in of if picked[d] is None and kind != BEST]
                    rows.append(
                        dict(
                            model=model, params=params, cpu_class=cpu_class, gpu_class=gpu_class, kind=kind,
                            **_ratio(v, picked["cpu"], picked["gpu"]),
                            **_side(picked["cpu"], "cpu"), **_side(picked["gpu"], "gpu"),
                            cpu_accuracy_check=checks["cpu"], gpu_accuracy_check=checks["gpu"],
                            note="; ".join(notes),
                        )
                    )  # fmt: skip
    return _counts(pd.DataFrame(rows, columns=KIND_COLUMNS))


def _counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Workers and CPUs as integers (null where a side is missing), not floats."""
    for col in [c for c in frame if c.endswith(("_workers", "_cpus"))]:
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    return frame


def pair_table(v: Variants) -> pd.DataFrame:
    """Every (CPU variant cell, GPU variant cell) with the same model and configuration (rows.PAIR), one
    row each: PAIR_COLUMNS. Without workers counterfactuals these are the speedup table's pairs."""
    cells = v.cells
    if cells.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    key = ["model", *CONFIG]
    cpu = cells[(cells["device"] == "cpu").to_numpy()]
    gpu = cells[(cells["device"] == "gpu").to_numpy()]
    both = cpu.merge(gpu, on=key, suffixes=("_c", "_g"))
    rows = []
    for r in both.to_dict("records"):
        c = {col: r[f"{col}_c"] for col in ["name", "epoch_s", "test_acc", HW_CLASS, *VARIANT]}
        g = {col: r[f"{col}_g"] for col in ["name", "epoch_s", "test_acc", HW_CLASS, *VARIANT]}
        rows.append(
            dict(
                **{k: r[k] for k in key}, params=max(r["params_c"], r["params_g"]),
                cpu_class=c[HW_CLASS], gpu_class=g[HW_CLASS], cpu_workers=c["data_workers"],
                cpu_cpus=c["cpus_allotted"], gpu_workers=g["data_workers"], gpu_cpus=g["cpus_allotted"],
                cpu_cell=c["name"], gpu_cell=g["name"], cpu_acc=c["test_acc"], gpu_acc=g["test_acc"],
                **_ratio(v, c, g),
            )
        )  # fmt: skip
    out = _counts(pd.DataFrame(rows, columns=PAIR_COLUMNS))
    return out.sort_values(["params", *key, "cpu_cell", "gpu_cell"], kind="stable").reset_index(drop=True)
