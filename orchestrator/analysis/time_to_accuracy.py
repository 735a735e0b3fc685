"""Time to accuracy: how long each device trains until its test accuracy first reaches a target.

    from orchestrator.analysis.time_to_accuracy import time_to_accuracy
    tta = time_to_accuracy(pairs, v, target_acc=0.79)   # pairs: answer.pair_table (+ kind pairs)

Definitions (per CPU/GPU pair of variant cells):
    target        target_acc when given (`benchctl report --target-acc`, a fraction like test_acc), else
                  the lower of the two cells' final accuracies (cell_summary's test_acc) minus
                  DEFAULT_MARGIN; target_source says which
    run time      sum of epoch_s over the run's epochs up to and including the first whose test_acc >=
                  target, in epoch order. The warm-up epoch counts (the user waits for it); eval_s,
                  checkpoint_s and data_s_load do not (they are the harness's choices, outside epoch_s)
    epochs        how many epochs that took (the run's epochs up to and including that one)
    cpu_s, gpu_s  median run time over the side's runs that reached the target; cpu_epochs, gpu_epochs
                  the median epochs; cpu_reached / cpu_runs: runs that reached it, of all runs
    speedup       cpu_s / gpu_s
    converged_alike  False when the two sides' median epochs differ by more than their repeats'
                  spread (the larger max - min of a side's epochs over its runs), or when one side's
                  runs all reached the target and the other's did not; True when they differ by no more
                  than that (or not at all); None (unknown) when they differ and a side has < 2 runs
                  reaching it (no spread), or neither side reached it
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from orchestrator.analysis.variants import Variants
from orchestrator.results.rows import CONFIG, RUN

DEFAULT_MARGIN = 0.01  # the default target: the lower final accuracy minus 1 point
GIVEN, DEFAULT = "--target-acc", "default"
COLUMNS = ["model", "params", "kind", *CONFIG, "cpu_class"]  # CONFIG: batch_size, pipeline, ..., compile
COLUMNS += ["gpu_class", "cpu_cell", "gpu_cell", "target_acc", "target_source", "cpu_s", "gpu_s"]
COLUMNS += ["speedup", "cpu_epochs", "gpu_epochs", "cpu_reached", "cpu_runs", "gpu_reached", "gpu_runs"]
COLUMNS += ["converged_alike"]


@dataclass(frozen=True)
class Curves:
    """One cell's runs as arrays, in run then epoch order: run (a code per run), seconds (the run's epoch_s
    summed up to each epoch), epochs (1, 2, ... per run), test_acc; n_runs."""

    run: np.ndarray
    seconds: np.ndarray
    epochs: np.ndarray
    test_acc: np.ndarray
    n_runs: int


NO_RUNS = Curves(*(np.array([]) for _ in range(4)), n_runs=0)


def curves(v: Variants, names) -> dict[str, Curves]:
    """Curves of each named cell of v.runs: one group-by over all of them (a group-by per cell cost
    ~14 ms, 240 of them at 100,800 rows)."""
    frames = [v.runs[n].assign(_cell=n) for n in dict.fromkeys(names) if n in v.runs and len(v.runs[n])]
    if not frames:
        return {}
    rows = pd.concat(frames, ignore_index=True)
    by_run = rows.groupby(["_cell", *RUN], sort=False, dropna=False)
    rows = rows.assign(_s=by_run["epoch_s"].cumsum(), _k=by_run.cumcount() + 1, _run=by_run.ngroup())
    out = {}
    for name, g in rows.groupby("_cell", sort=False):
        run = g["_run"].to_numpy()
        out[name] = Curves(
            run, g["_s"].to_numpy(dtype=float), g["_k"].to_numpy(dtype=float),
            g["test_acc"].to_numpy(dtype=float), len(np.unique(run)),
        )  # fmt: skip
    return out


def reached(c: Curves, target: float) -> tuple[np.ndarray, np.ndarray, int]:
    """(seconds, epochs) of each run of `c` that reached `target` (at its first epoch at or above it),
    and the number of runs."""
    if not c.n_runs or math.isnan(target):
        return np.array([]), np.array([]), c.n_runs
    hit = np.flatnonzero(c.test_acc >= target - 1e-12)  # NaN accuracy never reaches it
    first = hit[np.r_[True, c.run[hit][1:] != c.run[hit][:-1]]] if len(hit) else hit
    return c.seconds[first], c.epochs[first], c.n_runs


def _median(values: np.ndarray) -> float:
    return float(np.median(values)) if len(values) else math.nan


def converged_alike(cpu_epochs: np.ndarray, cpu_runs: int, gpu_epochs: np.ndarray, gpu_runs: int):
    """The module docstring's converged_alike for the epochs of the runs that reached the target."""
    c_all, g_all = len(cpu_epochs) == cpu_runs > 0, len(gpu_epochs) == gpu_runs > 0
    if not len(cpu_epochs) and not len(gpu_epochs):
        return None
    if c_all != g_all and (c_all or g_all):
        return False
    if not len(cpu_epochs) or not len(gpu_epochs):
        return None
    gap = abs(_median(cpu_epochs) - _median(gpu_epochs))
    if gap == 0:
        return True
    if len(cpu_epochs) < 2 or len(gpu_epochs) < 2:
        return None
    spread = max(np.ptp(cpu_epochs), np.ptp(gpu_epochs))
    return bool(gap <= spread)


def time_to_accuracy(pairs: pd.DataFrame, v: Variants, target_acc: float | None = None) -> pd.DataFrame:
    """One row per row of `pairs` (columns model, params, cpu_cell, gpu_cell, cpu_acc, gpu_acc and, where
    known, kind and the configuration): COLUMNS."""
    rows = []
    named = curves(v, [*pairs["cpu_cell"], *pairs["gpu_cell"]]) if len(pairs) else {}
    for r in pairs.to_dict("records"):
        if target_acc is None:
            target, source = min(float(r["cpu_acc"]), float(r["gpu_acc"])) - DEFAULT_MARGIN, DEFAULT
        else:
            target, source = float(target_acc), GIVEN
        cs, ce, cn = reached(named.get(r["cpu_cell"], NO_RUNS), target)
        gs, ge, gn = reached(named.get(r["gpu_cell"], NO_RUNS), target)
        cpu_s, gpu_s = _median(cs), _median(gs)
        rows.append(
            {
                **{c: r.get(c) for c in COLUMNS[: COLUMNS.index("target_acc")]},
                "target_acc": target, "target_source": source, "cpu_s": cpu_s, "gpu_s": gpu_s,
                "speedup": cpu_s / gpu_s if gpu_s > 0 else math.nan,
                "cpu_epochs": _median(ce), "gpu_epochs": _median(ge),
                "cpu_reached": len(cs), "cpu_runs": cn, "gpu_reached": len(gs), "gpu_runs": gn,
                "converged_alike": converged_alike(ce, cn, ge, gn),
            }
        )  # fmt: skip
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["batch_size"] = pd.to_numeric(out["batch_size"], errors="coerce").astype("Int64")
    return out
