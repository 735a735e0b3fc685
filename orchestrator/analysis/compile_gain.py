"""What compiling the training step buys: per cell measured both ways, eager against compiled.

    from orchestrator.analysis.compile_gain import compile_gain_table
    gain = compile_gain_table(epochs, trials)   # epochs: stats.ok_epochs(...)

One row per (model, device, batch_size, pipeline, precision, hw_class) that holds an eager (`compile`
off) and a compiled (`on`) cell:

    eager_ips, compiled_ips   median images/s over the cell's steady epochs (epoch_s / images differ
                              by the dropped last partial batch of compiled epochs, images/s does not)
    gain                      compiled_ips / eager_ips: above 1, compiling made training faster
    compile_s                 median over the compiled cell's trials of their compile_s (outside every
                              epoch; a node's Inductor cache makes later trials' shorter)
    payoff_epochs             compile_s / (eager epoch time - compiled epoch time), both per full epoch
                              of the compiled cell's images: the epochs after which compiling has paid
                              for itself; NaN when compiling made epochs no faster
Pure pandas: no I/O, no display code.
"""

from __future__ import annotations

import math

import pandas as pd

from orchestrator.analysis.stats import steady_epochs
from orchestrator.results import rows

KEY = [c for c in rows.CELL if c != "compile"] + [rows.HW_CLASS]
COLUMNS = KEY + ["eager_ips", "compiled_ips", "gain", "compile_s", "payoff_epochs"]


def compile_gain_table(epochs: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    steady = steady_epochs(epochs)
    steady = steady[~steady["warmup_only"]] if "warmup_only" in steady else steady
    if steady.empty or not (steady["compile"] == "on").any():
        return pd.DataFrame(columns=COLUMNS)
    cells = steady.groupby([*KEY, "compile"], dropna=False).agg(
        ips=("images_per_s", "median"), epoch_s=("epoch_s", "median")
    )
    compile_s = _compile_seconds(trials)
    out = []
    for key, g in cells.groupby(level=KEY, dropna=False, sort=False):
        by = g.droplevel(KEY)
        if not {"off", "on"} <= set(by.index):
            continue
        eager_ips, compiled_ips = float(by.at["off", "ips"]), float(by.at["on", "ips"])
        seconds = compile_s.get(tuple(key), math.nan)
        images = float(by.at["on", "epoch_s"]) * compiled_ips  # a full compiled epoch's images
        saved = images / eager_ips - images / compiled_ips  # seconds compiling saves per epoch
        out.append({
            **dict(zip(KEY, key, strict=True)), "eager_ips": eager_ips, "compiled_ips": compiled_ips,
            "gain": compiled_ips / eager_ips, "compile_s": seconds,
            "payoff_epochs": seconds / saved if saved > 0 else math.nan,
        })  # fmt: skip
    return pd.DataFrame(out, columns=COLUMNS)


def _compile_seconds(trials: pd.DataFrame) -> dict[tuple, float]:
    """Median compile_s of the compiled trials that finished, per KEY."""
    if trials.empty or "compile_s" not in trials:
        return {}
    done = rows.with_cell_defaults(trials[(trials["status"] == "ok") & trials["compile_s"].notna()])
    return {tuple(k): float(v) for k, v in done.groupby(KEY, dropna=False)["compile_s"].median().items()}
