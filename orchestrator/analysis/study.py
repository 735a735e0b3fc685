"""The explained study (issue 32), declared once as data: which cells answer "how much faster, and why".

    from orchestrator.analysis.study import STUDY, matches, missing_cells, sweep_settings
    [c.kind for c in STUDY]          # paper, device, best, what-if
    sweep_settings()                 # (kinds, SweepSpec fields) of the sweeps that run every cell of STUDY
    missing_cells(variants)          # analysis.variants rows -> the expected cells not measured

The report's three speedups per model (analysis.answer) are chosen from measured cells of these kinds:
    paper    DataLoader (the paper's 2 workers), fp32, eager, batch 128: the paper's conditions
    device   the data resident on each device (no input pipeline), fp32, eager, batch 128
    best     candidates for each device's fastest cell at batch 128 (GPU: resident, bf16 autocast,
             compiled; CPU: resident with bf16 autocast, resident compiled); analysis.answer picks the
             fastest measured cell whose accuracy stays within answer.BEST_ACC_POINTS of the paper cell
    what-if  counterfactual cells the bottleneck verdicts need (analysis.bottleneck): a GPU DataLoader
             with 8 workers and 9 CPUs (`--workers 8 --gpu-cpus 9`), the paper cell's input-bound fix

A later `benchctl sweep --preset paper-explained` can run sweep_settings(): one sweep per group of
cells that differ only in their device (a grid is a product, so cells that differ in two axes cannot
share one sweep without adding cells no kind needs). Pure data and functions: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import pandas as pd

from orchestrator.plan.axes import AXES
from trainables.config import BATCH_SIZE, EPOCHS, PAPER_MODELS, WORKERS, Compile, Device, Pipeline, Precision

PAPER, DEVICE, BEST, WHAT_IF = "paper", "device", "best", "what-if"
KINDS = (PAPER, DEVICE, BEST)  # the three speedups per model


@dataclass(frozen=True)
class ExpectedCell:
    """One cell of the study, for every model: what a measured cell must have to be it."""

    kind: str
    device: Device
    pipeline: Pipeline
    precision: Precision
    compile: Compile
    workers: int | None = None  # DataLoader workers (loader only); None: any
    gpu_cpus: int | None = None  # CPUs of a GPU cell; None: the default (1 + workers)
    batch_size: int = BATCH_SIZE

    @property
    def label(self) -> str:
        """e.g. "gpu/bs128/loader(8 workers)/fp32/eager"."""
        loader = f"({self.workers} workers)" if self.pipeline is Pipeline.loader and self.workers else ""
        step = "compiled" if self.compile is Compile.on else "eager"
        pipeline = f"{self.pipeline.value}{loader}"
        return f"{self.device.value}/bs{self.batch_size}/{pipeline}/{self.precision.value}/{step}"


_L, _R = Pipeline.loader, Pipeline.resident
_F, _A = Precision.fp32, Precision.amp
_OFF, _ON = Compile.off, Compile.on
STUDY: tuple[ExpectedCell, ...] = (
    ExpectedCell(PAPER, Device.cpu, _L, _F, _OFF, workers=WORKERS),
    ExpectedCell(PAPER, Device.gpu, _L, _F, _OFF, workers=WORKERS),
    ExpectedCell(DEVICE, Device.cpu, _R, _F, _OFF),
    ExpectedCell(DEVICE, Device.gpu, _R, _F, _OFF),
    ExpectedCell(BEST, Device.gpu, _R, _A, _ON),
    ExpectedCell(BEST, Device.cpu, _R, _A, _OFF),
    ExpectedCell(BEST, Device.cpu, _R, _F, _ON),
    ExpectedCell(WHAT_IF, Device.gpu, _L, _F, _OFF, workers=8, gpu_cpus=9),
)  # fmt: skip
# what every sweep of the study shares: real CIFAR-10, the paper's epochs, no step caps
BASE_SETTINGS = {"dataset": "cifar10", "epochs": EPOCHS, "max_steps": None, "max_eval_steps": None}


def of_kind(kind: str, device: str, study: tuple[ExpectedCell, ...] = STUDY) -> list[ExpectedCell]:
    return [c for c in study if c.kind == kind and c.device == device]


# the axes (plan/axes.py) an ExpectedCell does not name (every model is in the study): their default value
_UNNAMED = [a for a in AXES if a.trial_field not in {"model", *(f.name for f in fields(ExpectedCell))}]


def matches(expected: ExpectedCell, cell) -> bool:
    """Whether a measured cell (a row with device, batch_size, pipeline, precision, compile and
    data_workers, e.g. of analysis.variants) is `expected`: every axis equal, and the DataLoader's
    workers where the expected cell names them; an axis it does not name at its default."""
    same = (
        cell["device"] == expected.device
        and _int(cell.get("batch_size")) == expected.batch_size
        and cell["pipeline"] == expected.pipeline
        and cell["precision"] == expected.precision
        and cell["compile"] == expected.compile
        and all(str(cell.get(a.trial_field, a.before)) == a.default for a in _UNNAMED)
    )
    if not same or expected.workers is None or expected.pipeline is not Pipeline.loader:
        return bool(same)
    return _int(cell.get("data_workers")) == expected.workers


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


def sweep_settings(
    models: tuple[str, ...] = PAPER_MODELS, study: tuple[ExpectedCell, ...] = STUDY
) -> list[tuple[tuple[str, ...], dict]]:
    """(kinds, SweepSpec fields) of the sweeps that together run every cell of `study` for `models`:
    cells equal but for their device share one sweep (devices: both), and each sweep's grid is exactly
    its cells; kinds says which kinds of cell the sweep measures."""
    groups: dict[tuple, list[ExpectedCell]] = {}
    for c in study:
        key = (c.pipeline, c.precision, c.compile, c.workers, c.gpu_cpus, c.batch_size)
        groups.setdefault(key, []).append(c)
    out = []
    for (pipeline, precision, compile_, workers, gpu_cpus, batch), cells in groups.items():
        settings = dict(
            BASE_SETTINGS,
            models=tuple(models),
            devices=tuple(dict.fromkeys(c.device for c in cells)),
            batch_sizes=(batch,),
            pipelines=(pipeline,),
            precisions=(precision,),
            compiles=(compile_,),
        )
        if workers is not None:
            settings["workers"] = workers
        if gpu_cpus is not None:
            settings["gpu_cpus"] = gpu_cpus
        out.append((tuple(dict.fromkeys(c.kind for c in cells)), settings))
    return out
