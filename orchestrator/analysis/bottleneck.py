"""Why each cell is as fast as it is: a bottleneck verdict with its evidence, and a measured what-if.

    from orchestrator.analysis.bottleneck import bottleneck_table
    print(bottleneck_table(variants(ok_epochs(epochs, trials)).cells))   # one row per variant cell

verdict, reason   analysis.bounds.verdict(device, data_share, gpu_util_pct): input-bound, launch-bound,
                  compute-bound (or not input-bound / unknown where a number is missing)
evidence          data_share (data_s / epoch_s), gpu_util_pct (NVML, %), mfu (achieved TFLOP/s over the
                  device's peak at its precision; NaN for a CPU or a GPU without a tabulated peak),
                  achieved_tflops, peak_tflops, epoch_s, images_per_s
what_if           a counterfactual that was measured: a cell of the same model, device, hardware class
                  and batch size that differs in one way (CHANGES):
                      workers   the same DataLoader cell with more workers (the fastest such cell)
                      resident  a DataLoader cell's data resident on the device instead
                      compiled  an eager cell compiled (same pipeline, workers, precision)
                  tried in the order the verdict suggests (input-bound: workers, resident; launch-bound:
                  compiled), then the others. what_if_factor = the other cell's images/s / this cell's
                  (epoch_s ratio where images/s is missing): above 1, the change makes it faster.
                  what_if is a sentence, e.g. "with 8 loader workers (9 CPUs) this cell runs 3.3x faster:
                  2.06 s/epoch instead of 6.80 (cell ...)"; null with no counterfactual measured.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from orchestrator.analysis.bounds import INPUT, LAUNCH, verdict
from orchestrator.results.rows import CONFIG, HW_CLASS

WORKERS, RESIDENT, COMPILED = "workers", "resident", "compiled"
CHANGES = (WORKERS, RESIDENT, COMPILED)
ORDER = {INPUT: (WORKERS, RESIDENT, COMPILED), LAUNCH: (COMPILED, RESIDENT, WORKERS)}
EVIDENCE = ["data_share", "gpu_util_pct", "mfu", "achieved_tflops", "peak_tflops", "epoch_s", "images_per_s"]
COLUMNS = ["cell", "model", "device", HW_CLASS, *CONFIG]  # CONFIG: batch_size, pipeline, precision, compile
COLUMNS += ["data_workers", "cpus_allotted", "verdict", "reason", *EVIDENCE]
COLUMNS += ["what_if", "what_if_change", "what_if_cell", "what_if_factor"]


def _alike(cell: dict, other: dict, but: str = "") -> bool:
    """Whether `other` holds `cell`'s value of every configuration axis (rows.CONFIG) but `but`."""
    return all(other[c] == cell[c] for c in CONFIG if c != but)


def _counterfactual(change: str, cell: dict, other: dict) -> bool:
    """Whether `other` is `cell` with `change` made (same model, device, class, batch: the caller's)."""
    if change == WORKERS:
        return (
            _alike(cell, other)
            and cell["pipeline"] == "loader"
            and int(other["data_workers"]) > int(cell["data_workers"])
        )
    if change == RESIDENT:
        loader_to_resident = cell["pipeline"] == "loader" and other["pipeline"] == "resident"
        return _alike(cell, other, "pipeline") and loader_to_resident
    return (
        _alike(cell, other, "compile")
        and cell["compile"] == "off"
        and other["compile"] == "on"
        and int(other["data_workers"]) == int(cell["data_workers"])
    )


def factor(cell: dict, other: dict) -> float:
    """How much faster `other` runs than `cell`: images/s ratio, else the epoch_s ratio (NaN if neither)."""
    a, b = float(cell["images_per_s"]), float(other["images_per_s"])
    if a > 0 and b > 0:
        return b / a
    a, b = float(cell["epoch_s"]), float(other["epoch_s"])
    return a / b if a > 0 and b > 0 else math.nan


def _seconds(x: float) -> str:
    return f"{x:.3g}" if x >= 0.01 else f"{x:.2g}"


def sentence(change: str, cell: dict, other: dict, by: float) -> str:
    """The what-if in words (module docstring)."""
    times = f"{_seconds(float(other['epoch_s']))} s/epoch instead of {_seconds(float(cell['epoch_s']))}"
    how = f"{by:.1f}x faster" if by >= 1 else f"{1 / by:.1f}x slower"
    where = f"(cell {other['name']})"
    if change == WORKERS:
        return (
            f"with {int(other['data_workers'])} loader workers ({int(other['cpus_allotted'])} CPUs) "
            f"this cell runs {how}: {times} {where}"
        )
    if change == RESIDENT:
        return f"fed from {cell['device'].upper()} memory (resident) it runs {how}: {times} {where}"
    return f"compiled it runs {how}: {times} {where}"


def what_if(cell: dict, others: list[dict], verdict_: str) -> dict:
    """what_if, what_if_change, what_if_cell, what_if_factor of one cell among its model, device, class
    and batch size's other cells (module docstring)."""
    for change in ORDER.get(verdict_, CHANGES):
        found = [o for o in others if o["name"] != cell["name"] and _counterfactual(change, cell, o)]
        found = [(factor(cell, o), o) for o in found]
        found = [(f, o) for f, o in found if not math.isnan(f)]
        if found:
            by, other = max(found, key=lambda fo: (fo[0], fo[1]["name"]))
            return dict(
                what_if=sentence(change, cell, other, by),
                what_if_change=change,
                what_if_cell=other["name"],
                what_if_factor=by,
            )
    return dict(what_if=None, what_if_change=None, what_if_cell=None, what_if_factor=math.nan)


def bottleneck_table(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per variant cell (analysis.variants' cells, in their order): COLUMNS."""
    if cells.empty:
        return pd.DataFrame(columns=COLUMNS)
    # each cell's group by number, not by key: a key holding NaN (a result without batch_size) never
    # equals itself, so it cannot be looked up in a dict; cells as records, not Series (iterrows and a
    # Series lookup per value cost ~1 s at 100,800 rows)
    group = cells.groupby(["model", "device", HW_CLASS, "batch_size"], sort=False, dropna=False).ngroup()
    records = cells.to_dict("records")
    groups: dict[int, list[dict]] = {}
    for g, cell in zip(group, records, strict=True):
        groups.setdefault(g, []).append(cell)
    rows = []
    for cell, g in zip(records, group, strict=True):
        label, reason = verdict(cell["device"], cell["data_share"], cell["gpu_util_pct"])
        rows.append(
            {
                "cell": cell["name"],
                **{c: cell[c] for c in COLUMNS[1 : COLUMNS.index("verdict")]},
                "verdict": label,
                "reason": reason,
                **{c: float(cell[c]) if not pd.isna(cell[c]) else np.nan for c in EVIDENCE},
                **what_if(cell, groups[g], label),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)
