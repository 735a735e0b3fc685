"""Which measured cells are the explained study's (issue 32): the study's declaration read against results.

    from orchestrator.analysis.study import STUDY, matches, missing_cells
    [c.kind for c in STUDY]          # paper, device, best, what-if (declared in orchestrator/plan/study.py)
    missing_cells(variants)          # analysis.variants rows -> the expected cells not measured
    measured_cells(variants)         # ... -> the measured cells that are the study's, with their kind

The study's cells, their kinds and what each kind means are declared once, in orchestrator/plan/study.py
(the planner runs them: `benchctl sweep --preset paper-explained`); this module matches measured cells
against them. Pure data and functions: no I/O.
"""

from __future__ import annotations

import pandas as pd

from orchestrator.plan.study import (
    BEST,
    DEVICE,
    KINDS,
    PAPER,
    STUDY,
    WHAT_IF,
    ExpectedCell,
    has_axes,
    of_kind,
)
from trainables.config import PAPER_MODELS, Device, Pipeline, TrialConfig

__all__ = ["BEST", "DEVICE", "KINDS", "PAPER", "STUDY", "WHAT_IF", "ExpectedCell", "matches",
           "measured_cells", "missing_cells", "of_kind", "study_models"]  # fmt: skip


def matches(expected: ExpectedCell, cell) -> bool:
    """Whether a measured cell (a row with device, batch_size, pipeline, precision, compile and
    data_workers, e.g. of analysis.variants) is `expected`: its axes as plan.study.has_axes says, and
    the DataLoader's workers where the expected cell names them (a CPU cell's: as many as its cores
    leave, as TrialConfig.data_workers gives them, so the paper's 2 workers are 1 on 2 cores)."""
    same = has_axes(expected, cell)
    if not same or expected.workers is None or expected.pipeline is not Pipeline.loader:
        return bool(same)
    workers, cpus = expected.workers, _int(cell.get("cpus_allotted"))
    if expected.device is Device.cpu and cpus and cpus > 0:  # those workers on its cores (2 cores: 1)
        workers = TrialConfig(model="m", pipeline=Pipeline.loader, workers=workers, cpus=cpus).data_workers
    return _int(cell.get("data_workers")) == workers


def _int(x) -> int | None:
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def study_models(measured) -> list[str]:
    """The models the study expects: those measured, plus the paper's three where any of them was
    measured (the paper's study names them all), the paper's first, in their order."""
    measured = [str(m) for m in dict.fromkeys(measured)]
    wanted = list(PAPER_MODELS) if set(measured) & set(PAPER_MODELS) else []
    return wanted + [m for m in measured if m not in wanted]


def missing_cells(variants: pd.DataFrame, study: tuple[ExpectedCell, ...] = STUDY) -> pd.DataFrame:
    """One row per (model, expected cell) with no measured cell: model, kind, device, cell (the expected
    cell's label). Models: study_models of the measured ones."""
    columns = ["model", "kind", "device", "cell"]
    if variants.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for model in study_models(variants["model"]):
        mine = [r for _, r in variants[(variants["model"] == model).to_numpy()].iterrows()]
        for expected in study:
            if not any(matches(expected, r) for r in mine):
                rows.append(
                    dict(model=model, kind=expected.kind, device=expected.device.value, cell=expected.label)
                )
    return pd.DataFrame(rows, columns=columns)


def measured_cells(variants: pd.DataFrame, study: tuple[ExpectedCell, ...] = STUDY) -> pd.DataFrame:
    """One row per (measured cell, expected cell it is): model, kind, device, cell (the measured cell's
    name, analysis.variants.cell_name), in the order of `study`, then of the cells."""
    columns = ["model", "kind", "device", "cell"]
    rows = [
        dict(model=r["model"], kind=expected.kind, device=expected.device.value, cell=r["name"])
        for model in study_models(variants["model"]) if not variants.empty
        for expected in study
        for _, r in variants[(variants["model"] == model).to_numpy()].iterrows()
        if matches(expected, r)
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)
