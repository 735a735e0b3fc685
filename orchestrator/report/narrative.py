""" "What this shows": a short paragraph written from the speedup table, for the top of report.md.

    from orchestrator.report.narrative import what_this_shows
    print(what_this_shows(model))   # model: report.model.build_model(...), or ReportModel.of_table(table)

A pure function of the model's speedup table and its facts: no I/O, no randomness. Each sentence
comes from one helper that returns "" when its condition does not hold:
    range        the spread of speedups over the cells measured on both devices, and the largest
    slower       cells where the GPU was slower than the CPU (speedup < 1)
    input-bound  cells whose GPU data-wait share exceeds stats.INPUT_BOUND_SHARE
    trend        per (batch, pipeline, precision) and hardware pair with 2+ paired models: does speedup
                 grow with parameter count (strictly, in params order), compared with the paper's points
    flagged      cells whose epoch times carry a timing flag (noisy, extrapolated, ...)
"""

from __future__ import annotations

import pandas as pd

from orchestrator.analysis.pairing import VARIANT_COLUMNS, pair_label
from orchestrator.analysis.stats import INPUT_BOUND_SHARE, PAPER_POINTS
from orchestrator.report.formats import (
    config_label,
    config_name,
    fmt_pct,
    fmt_speedup,
    is_missing,
    variant_label,
)
from orchestrator.report.model import ReportModel
from orchestrator.results import rows
from orchestrator.results.rows import with_cell_defaults

CONFIG = list(rows.CONFIG)  # batch, pipeline, precision, compile: a model's configuration
# Flags that make an epoch time (and so a speedup) less certain; partial-eval concerns accuracy only.
TIMING_FLAGS = ("noisy", "extrapolated", "warm-up only", "single-sample", "mixed", "steal")
PAPER_TREND = " → ".join(stated.split(" ")[0] for *_, stated in PAPER_POINTS)  # "~2x → >7x → 40.6x"


def _config(r, hw: bool = False, fed: bool = False) -> str:
    return (
        config_label(r)
        + (f", {pair_label(r.cpu_class, r.gpu_class)}" if hw else "")
        + (f" ({variant_label(r)})" if fed else "")
    )


def _namer(model: ReportModel):
    """Cell names: the model alone when the table holds one configuration, else model/bsN/pipeline/
    precision (the trial-name style, formats.config_name: "/compiled" for --compile on); followed by
    " (gpu:H200 vs cpu:...)" when the table compares several hardware pairs (model.several_pairs) and
    by what fed each side, " (CPU 2 workers, 16 CPUs; GPU 8 workers, 9 CPUs)", when a configuration was
    fed several ways (model.several_variants)."""
    several, hw, fed = model.several_configs, model.several_pairs, model.several_variants

    def name(r) -> str:
        base = config_name(r) if several else str(r.model)
        base += f" ({pair_label(r.cpu_class, r.gpu_class)})" if hw else ""
        return base + (f" ({variant_label(r)})" if fed else "")

    return name


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _paired(table: pd.DataFrame) -> pd.DataFrame:
    values = pd.to_numeric(table["speedup"], errors="coerce")
    return table[values.notna().to_numpy() & (values > 0).to_numpy()]


CPU_ONLY = (
    "These results hold CPU cells only, so they give no GPU speedup. To measure one, run the sweep on a "
    "machine with a GPU with `--devices cpu,gpu` (e.g. `benchctl sweep --devices cpu,gpu ...` with the "
    "same options): each model is then timed on both, and the report pairs them."
)


def range_sentence(model: ReportModel) -> str:
    paired, name = _paired(model.table), _namer(model)
    if model.cpu_only:
        return CPU_ONLY
    if paired.empty:
        return "No cell was measured on both CPU and GPU, so these results give no speedup."
    if len(paired) == 1:
        r = next(paired.itertuples())
        return f"The one cell measured on both devices, {name(r)}, has a speedup of {fmt_speedup(r.speedup)}."
    ordered = paired.sort_values("speedup", kind="stable")
    low, high = next(ordered.head(1).itertuples()), next(ordered.tail(1).itertuples())
    return (
        f"Across the {len(paired)} cells measured on both devices, the GPU speedup ranges from "
        f"{fmt_speedup(low.speedup)} for {name(low)} to {fmt_speedup(high.speedup)} for {name(high)}; "
        f"{high.model} has the largest."
    )


def slower_sentence(model: ReportModel) -> str:
    paired, name = _paired(model.table), _namer(model)
    slower = [f"{name(r)} ({fmt_speedup(r.speedup)})" for r in paired.itertuples() if r.speedup < 1]
    return f"The GPU was slower than the CPU for {_join(slower)}." if slower else ""


def input_bound_sentence(model: ReportModel) -> str:
    name = _namer(model)
    bound = [
        f"{name(r)} ({fmt_pct(r.gpu_data_share, 0)})"
        for r in model.table.itertuples()
        if not is_missing(r.gpu_data_share) and float(r.gpu_data_share) > INPUT_BOUND_SHARE
    ]
    if not bound:
        return ""
    return (
        f"The GPU waited for input more than {INPUT_BOUND_SHARE:.0%} of the epoch in {_join(bound)}: "
        f"{'this cell is' if len(bound) == 1 else 'these cells are'} input-bound, so "
        f"{'its' if len(bound) == 1 else 'their'} speedup is limited by the input pipeline, not the device."
    )


def trend_sentences(model: ReportModel) -> list[str]:
    """Over each config (and hardware pair, when the table has class columns) with 2+ paired models of
    different sizes: one sentence for the configs where speedup grows strictly with parameter count, one
    for those where it does not; none when no config has two sizes to compare."""
    paired = _paired(model.table)
    hw = model.several_pairs  # several_pairs counts only paired rows, so the same for `paired`
    paired = with_cell_defaults(paired)
    keys = CONFIG + (["cpu_class", "gpu_class"] if {"cpu_class", "gpu_class"} <= set(paired.columns) else [])
    fed = model.several_variants  # then a trend follows one variant: models fed alike
    keys += VARIANT_COLUMNS if fed else []
    several = len(paired[keys].drop_duplicates()) > 1
    # the rows in one itertuples pass, by config in key order, null keys left out (as a sorted
    # group-by; one with an itertuples per group cost ~0.7 s at 100,800 rows)
    groups: dict[tuple, list] = {}
    for r in paired.itertuples():
        key = tuple(getattr(r, k) for k in keys)
        if not any(pd.isna(v) for v in key):
            groups.setdefault(key, []).append(r)
    grows, not_grows = [], []
    for key in sorted(groups):
        g = sorted(
            groups[key], key=lambda r: (pd.isna(r.params), 0 if pd.isna(r.params) else r.params, r.model)
        )
        if len({r.params for r in g if not pd.isna(r.params)}) < 2:
            continue
        steps = " → ".join(f"{r.model} {fmt_speedup(r.speedup)}" for r in g)
        where = f"at {_config(g[0], hw, fed)} ({steps})" if several else f"({steps})"
        speedups = [float(r.speedup) for r in g]
        increasing = all(b > a for a, b in zip(speedups, speedups[1:], strict=False))
        (grows if increasing else not_grows).append(where)
    out = []
    if grows:
        out.append(f"Speedup grows with parameter count {_join(grows)}, as in the paper ({PAPER_TREND}).")
    if not_grows:
        out.append(
            f"Speedup does not grow steadily with parameter count {_join(not_grows)}, unlike the paper, "
            f"where it rises with model size ({PAPER_TREND})."
        )
    return out


def flagged_sentence(model: ReportModel) -> str:
    """Timing flags (TIMING_FLAGS) with the cells that carry them; flags carried by the same cells are
    named together, and a set covering every row of the table is called "all N cells"."""
    name, table = _namer(model), model.table
    cells: dict[str, list[str]] = {}  # flag -> cell names, in table order
    for r in table.itertuples():
        for flag in str(r.flags or "").split(", "):
            if flag.startswith(TIMING_FLAGS):
                cells.setdefault(flag, []).append(name(r))
    if not cells:
        return ""
    groups: dict[tuple[str, ...], list[str]] = {}  # cell names -> the flags they all carry
    for flag, names in cells.items():
        groups.setdefault(tuple(names), []).append(flag)
    parts = [
        f"{_join(flags)} in "
        + (f"all {len(table)} cells" if len(names) == len(table) > 1 else _join(list(names)))
        for names, flags in groups.items()
    ]
    return f"Some epoch times are less certain: {'; '.join(parts)} (see How to read this and Notes)."


def what_this_shows(model: ReportModel) -> str:
    """The paragraph: the sentences above that apply, in that order, space-joined."""
    sentences = [
        range_sentence(model),
        slower_sentence(model),
        input_bound_sentence(model),
        *trend_sentences(model),
        flagged_sentence(model),
    ]
    return " ".join(s for s in sentences if s)


def section(model: ReportModel) -> str:
    return "## What this shows\n\n" + what_this_shows(model) + "\n"
