"""The explained answer (issue 32), computed once: what report.model holds and every format renders.

from orchestrator.analysis.explained import explain
answer = explain(ok_epochs(epochs, trials), target_acc=None)
answer.speedups, answer.bottlenecks, answer.scaling, answer.paper_scaling, answer.time_to_accuracy

speedups          analysis.answer.kind_speedups: paper, device and best per model and hardware pair
pairs             analysis.answer.pair_table: every CPU/GPU pair of variant cells of one configuration
bottlenecks       analysis.bottleneck.bottleneck_table: a verdict, its evidence and a what-if per cell
scaling           analysis.fits.scaling_table: the exponent of speedup ~ params^b per configuration
paper_scaling     analysis.fits.paper_scaling: the same fit over the paper's three points
time_to_accuracy  analysis.time_to_accuracy over every pair, plus the best kind's pairs (kind names
                  the pairs that are a model's paper, device or best pair; "" for the others)
missing           analysis.study.missing_cells: the study's cells that were not measured
measured          analysis.study.measured_cells: the measured cells that are the study's, by kind
target_acc        the --target-acc given, or None (each pair's default then)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from orchestrator.analysis import answer, bottleneck, study
from orchestrator.analysis import scaling as fits
from orchestrator.analysis import time_to_accuracy as tta
from orchestrator.analysis.variants import Variants, variants


@dataclass(frozen=True)
class Explained:
    speedups: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=answer.KIND_COLUMNS))
    pairs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=answer.PAIR_COLUMNS))
    bottlenecks: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=bottleneck.COLUMNS))
    scaling: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=fits.COLUMNS))
    paper_scaling: dict = field(default_factory=fits.paper_scaling)
    time_to_accuracy: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=tta.COLUMNS))
    missing: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["model", "kind", "device", "cell"])
    )
    measured: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["model", "kind", "device", "cell"])
    )
    target_acc: float | None = None


def _tta_pairs(pairs: pd.DataFrame, speedups: pd.DataFrame) -> pd.DataFrame:
    """The pairs time to accuracy covers: every same-configuration pair, kind set where it is a model's
    paper or device pair, and each best pair (its two cells may differ in configuration)."""
    kinds = speedups.dropna(subset=["cpu_cell", "gpu_cell"])
    named = {(r.cpu_cell, r.gpu_cell): r.kind for r in kinds.itertuples() if r.kind != study.BEST}
    out = pairs.assign(kind=[named.get((r.cpu_cell, r.gpu_cell), "") for r in pairs.itertuples()])
    best = kinds[(kinds["kind"] == study.BEST).to_numpy()]
    extra = []
    for r in best.itertuples():
        same = (out["cpu_cell"] == r.cpu_cell) & (out["gpu_cell"] == r.gpu_cell)
        if same.any():
            out.loc[same & (out["kind"] == ""), "kind"] = study.BEST
            continue
        extra.append(
            dict(model=r.model, params=r.params, kind=study.BEST, cpu_class=r.cpu_class,
                 gpu_class=r.gpu_class, cpu_cell=r.cpu_cell, gpu_cell=r.gpu_cell, cpu_acc=r.cpu_acc,
                 gpu_acc=r.gpu_acc)
        )  # fmt: skip
    return pd.concat([out, pd.DataFrame(extra)], ignore_index=True) if extra else out


def explain_variants(v: Variants, target_acc: float | None = None) -> Explained:
    if v.cells.empty:
        return Explained(target_acc=target_acc)
    speedups = answer.kind_speedups(v)
    pairs = answer.pair_table(v)
    return Explained(
        speedups=speedups,
        pairs=pairs,
        bottlenecks=bottleneck.bottleneck_table(v.cells),
        scaling=fits.scaling_table(pairs, v),
        paper_scaling=fits.paper_scaling(),
        time_to_accuracy=tta.time_to_accuracy(_tta_pairs(pairs, speedups), v, target_acc),
        missing=study.missing_cells(v.cells),
        measured=study.measured_cells(v.cells),
        target_acc=target_acc,
    )


def explain(
    epochs: pd.DataFrame, target_acc: float | None = None, summary: pd.DataFrame | None = None
) -> Explained:
    """Everything above from successful epochs (stats.ok_epochs); `summary`: their cell_summary, where the
    caller has it."""
    return explain_variants(variants(epochs, summary), target_acc)
