""" "The answer": the explained answer (analysis.explained) rendered for report.md and the terminal.

    from orchestrator.report import answer
    print(answer.section(model))        # model: report.model.build_model(...)
    print(answer.terminal_lines(model))

Three speedups per model, the size exponent with its interval and a plain sentence, time to accuracy,
the verdict table with its evidence and what-ifs, and the study's cells that were not measured. Every
number comes from model.explained; nothing is computed here but its wording.
"""

from __future__ import annotations

import math

import pandas as pd

from orchestrator.analysis import scaling as fits
from orchestrator.analysis.answer import BEST_ACC_POINTS
from orchestrator.analysis.bounds import INPUT_BOUND_SHARE, LAUNCH_BOUND_UTIL_PCT
from orchestrator.analysis.pairing import pair_label
from orchestrator.analysis.speedups import CI_CONFIDENCE
from orchestrator.analysis.stats import PAPER_POINTS
from orchestrator.analysis.study import KINDS
from orchestrator.analysis.time_to_accuracy import DEFAULT_MARGIN, GIVEN
from orchestrator.plan.axes import CONFIG_AXES
from orchestrator.report.formats import (
    DASH,
    fmt_params,
    fmt_pct,
    fmt_seconds,
    fmt_speedup_ci,
    fmt_util,
    is_missing,
)
from orchestrator.report.model import ReportModel
from orchestrator.report.sections import md_table

INTRO = (
    "How much faster the GPU trains each model, three ways, each the CPU cell's median steady epoch time "
    f"over the GPU cell's, with its {CI_CONFIDENCE:.0%} bootstrap interval: **paper** = the paper's "
    "conditions (DataLoader, fp32, eager, batch 128; the DataLoader's workers and CPUs are in the cell "
    "names), **device** = the data resident on each device (no input pipeline), **best** = each device's "
    f"fastest batch-128 cell whose final accuracy is at most {BEST_ACC_POINTS} points below its paper cell's."
)
VERDICTS = (
    f"A cell is **input-bound** when it waits for data more than {INPUT_BOUND_SHARE:.0%} of the epoch; a GPU "
    f"cell that does not but keeps the GPU busy less than {LAUNCH_BOUND_UTIL_PCT:.0f}% is **launch-bound** "
    "(the host's kernel launches set its speed); otherwise it is **compute-bound** (MFU: the share of the "
    "device's peak it reaches). Memory-bound is not told apart: no results column measures memory "
    "throughput. A what-if names a measured cell that differs in one way."
)
# CPU cells only (model.cpu_only): no speedup to explain, and no GPU term in the verdicts
CPU_ONLY = "CPU cells only: no GPU speedup to explain (What this shows says how to measure one)."
VERDICTS_CPU = (
    f"A cell is **input-bound** when it waits for data more than {INPUT_BOUND_SHARE:.0%} of the epoch; "
    "otherwise it is **compute-bound** (the cores run the model). A what-if names a measured cell that "
    "differs in one way."
)


def _text(x) -> str:
    return DASH if x is None or is_missing(x) or not str(x) else str(x)


def _hw(r, several: bool) -> str:
    return pair_label(r.cpu_class, r.gpu_class) if several else ""


def _several(frame: pd.DataFrame) -> bool:
    return len(frame[["cpu_class", "gpu_class"]].drop_duplicates()) > 1 if len(frame) else False


def speedups_part(model: ReportModel) -> str:
    table = model.explained.speedups
    if table.empty:
        return "No cells to compare.\n"
    several = _several(table)
    head = ["model", "params"] + (["hardware"] if several else []) + list(KINDS)
    rows, cells = [], []
    for (_m, _c, _g), g in table.groupby(["model", "cpu_class", "gpu_class"], sort=False):
        by = {r.kind: r for r in g.itertuples()}
        first = next(g.itertuples())
        rows.append(
            [first.model, fmt_params(first.params)]
            + ([_hw(first, True)] if several else [])
            + [fmt_speedup_ci(by[k].speedup, by[k].speedup_low, by[k].speedup_high) for k in KINDS]
        )
        for k in KINDS:
            r = by[k]
            checks = "; ".join(
                f"{d} {c}" for d, c in (("CPU", r.cpu_accuracy_check), ("GPU", r.gpu_accuracy_check)) if c
            )
            cells.append(
                [
                    r.model,
                    k,
                    _text(r.cpu_cell),
                    _text(r.gpu_cell),
                    "; ".join(x for x in (checks, r.note) if x),
                ]
            )
    return (
        md_table(head, rows)
        + "\n\nThe cells each speedup compares:\n\n"
        + md_table(["model", "kind", "CPU cell", "GPU cell", "accuracy check / note"], cells)
        + "\n"
    )


def _config(r) -> str:
    """A scaling row's configuration as cell names say it (axes.CONFIG_AXES; an unmarked value only where
    its Axis.name_unmarked), the DataLoader's workers after its pipeline: "batch 128, loader (2 workers),
    fp32, eager"."""
    fed = {"pipeline": f" ({int(r.gpu_workers)} workers)" if r.pipeline == "loader" else ""}
    tags = [
        a.tag(getattr(r, a.trial_field), keep_unmarked=a.name_unmarked) + fed.get(a.trial_field, "")
        for a in CONFIG_AXES
    ]
    return ", ".join(filter(None, tags))


def _exponent(b, low, high) -> str:
    if is_missing(b):
        return DASH
    return f"{b:.2f}" + ("" if is_missing(low) or is_missing(high) else f" [{low:.2f}–{high:.2f}]")


PLAIN = {
    fits.GROWS: "the data show the speedup growing with model size",
    fits.SHRINKS: "the data show the speedup shrinking as models grow",
    fits.NO_EVIDENCE: "the data show no evidence that the speedup grows or shrinks with size "
    "(the interval holds 0)",
    fits.NO_INTERVAL: "no interval: a side has fewer than 2 epoch samples",
}


def scaling_part(model: ReportModel) -> str:
    table, paper = model.explained.scaling, model.explained.paper_scaling
    several = _several(table)
    lines = [
        f"- At {_config(r)}{'; ' + _hw(r, True) if several else ''} ({r.n_models} models): speedup ∝ "
        f"params^b, b = {_exponent(r.exponent, r.exponent_low, r.exponent_high)}: {PLAIN[r.verdict]}."
        for r in table.itertuples()
    ]
    if not lines:
        lines = [
            f"- No configuration has {fits.MIN_MODELS} models measured on both devices, "
            "so no exponent is fitted."
        ]
    trend = " → ".join(f"{p[3]:g}x" for p in PAPER_POINTS)
    lines.append(
        f"- The paper's three points ({trend}) fitted the same way: "
        f"b = {_exponent(paper['exponent'], math.nan, math.nan)} "
        "(one number per model, so no interval)."
    )
    return (
        "**Scaling with size** (log speedup = a + b log params, least squares; the interval refits b on the "
        f"{CI_CONFIDENCE:.0%} bootstrap resamples of every model's speedup):\n\n" + "\n".join(lines) + "\n"
    )


def _alike(x) -> str:
    return {True: "yes", False: "**no: did not converge alike**"}.get(x, "too few runs to tell")


def tta_part(model: ReportModel) -> str:
    table = model.explained.time_to_accuracy
    if table.empty:
        return ""
    shown = table[(table["kind"].fillna("") != "").to_numpy()]
    shown = shown if len(shown) else table
    given = model.explained.target_acc
    target = (
        f"target `{GIVEN} {given:g}` ({fmt_pct(given)})"
        if given is not None
        else "target per pair: the lower of its two final accuracies minus "
        f"{DEFAULT_MARGIN * 100:g} point (default)"
    )
    rows = [
        [
            r.model, r.kind or DASH, fmt_pct(r.target_acc),
            f"{fmt_seconds(r.cpu_s)} ({_epochs(r.cpu_epochs, r.cpu_reached, r.cpu_runs)})",
            f"{fmt_seconds(r.gpu_s)} ({_epochs(r.gpu_epochs, r.gpu_reached, r.gpu_runs)})",
            fmt_speedup_ci(r.speedup, None, None), _alike(r.converged_alike),
        ]
        for r in shown.itertuples()
    ]  # fmt: skip
    head = ["model", "kind", "target", "CPU s (epochs)", "GPU s (epochs)", "speedup", "converged alike"]
    return (
        f"**Time to accuracy** ({target}): training seconds until test accuracy first reaches the target, "
        "warm-up epoch included, test passes and checkpoints not; median over runs.\n\n"
        + md_table(head, rows)
        + "\n"
    )


def _epochs(epochs, reached, runs) -> str:
    if not reached:
        return f"not reached in {runs} run{'s' if runs != 1 else ''}"
    text = f"{epochs:g} epochs"
    return text + (f", {reached}/{runs} runs" if reached != runs else "")


def verdicts_part(model: ReportModel) -> str:
    table = model.explained.bottlenecks
    if table.empty:
        return ""
    if model.cpu_only:  # no GPU busy, no MFU: the efficiency section is left out for CPU cells too
        rows = [[r.cell, r.verdict, fmt_pct(r.data_share, 0), r.reason, _text(r.what_if)]
                for r in table.itertuples()]  # fmt: skip
        head, about = ["cell", "verdict", "data-wait", "evidence", "what-if"], VERDICTS_CPU
    else:
        rows = [
            [
                r.cell, r.verdict, fmt_pct(r.data_share, 0), fmt_util(r.gpu_util_pct), fmt_pct(r.mfu),
                r.reason, _text(r.what_if),
            ]
            for r in table.itertuples()
        ]  # fmt: skip
        head, about = ["cell", "verdict", "data-wait", "GPU busy", "MFU", "evidence", "what-if"], VERDICTS
    return f"**Why each cell is as fast as it is.** {about}\n\n" + md_table(head, rows) + "\n"


def _cells_by_model(table: pd.DataFrame) -> str:
    """e.g. "simple_cnn: paper `cpu/...`, best `...`; resnet18: ..." (a table with model, kind, cell)."""
    return "; ".join(
        f"{m}: " + ", ".join(f"{r.kind} `{r.cell}`" for r in g.itertuples())
        for m, g in table.groupby("model", sort=False)
    )


def missing_part(model: ReportModel) -> str:
    table = model.explained.missing
    if table.empty:
        return ""
    study = "cells of the explained study, `orchestrator/plan/study.py`"
    return f"**Not measured** ({study}): {_cells_by_model(table)}.\n"


def measured_part(model: ReportModel) -> str:
    table = model.explained.measured
    if table.empty:
        return ""
    return f"**Measured** (cells of the explained study, by kind): {_cells_by_model(table)}.\n"


def section(model: ReportModel) -> str:
    if model.cpu_only:  # no pair to explain: the verdicts alone, in CPU terms (a study's: and its cells)
        study = [measured_part(model), missing_part(model)] if model.study else []
        parts = [verdicts_part(model), *study]
        return "## The answer\n\n" + CPU_ONLY + "\n\n" + "\n".join(p for p in parts if p)
    parts = [
        speedups_part(model),
        scaling_part(model),
        tta_part(model),
        verdicts_part(model),
        missing_part(model),
    ]
    return "## The answer\n\n" + INTRO + "\n\n" + "\n".join(p for p in parts if p)


def terminal_lines(model: ReportModel) -> str:
    """A few plain lines for the terminal: the three speedups per model, the exponents, the verdicts."""
    x = model.explained
    if x.speedups.empty:
        return ""
    lines = ["answer (speedup paper / device / best):"]
    several = _several(x.speedups)
    for (_m, _c, _g), g in x.speedups.groupby(["model", "cpu_class", "gpu_class"], sort=False):
        by = {r.kind: r for r in g.itertuples()}
        first = next(g.itertuples())
        values = " / ".join(
            fmt_speedup_ci(by[k].speedup, by[k].speedup_low, by[k].speedup_high) for k in KINDS
        )
        lines.append(f"  {first.model}{' (' + _hw(first, True) + ')' if several else ''}: {values}")
    for r in x.scaling.itertuples():
        lines.append(
            f"  size exponent at {_config(r)}: "
            f"b = {_exponent(r.exponent, r.exponent_low, r.exponent_high)} ({r.verdict})"
        )
    lines.append(f"  paper's exponent: b = {_exponent(x.paper_scaling['exponent'], math.nan, math.nan)}")
    counts = x.bottlenecks["verdict"].value_counts()
    lines.append(
        "  verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items()) + " (report.md: The answer)"
    )
    return "\n".join(lines)
