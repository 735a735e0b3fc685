"""The explained study (issue 32), declared once as data: which cells answer "how much faster, and why".

    from orchestrator.plan.study import STUDY, grids
    [c.kind for c in STUDY]          # paper, device, best, what-if
    grids()                          # (kinds, the fields each grid sets) of the grids that hold STUDY
    grids(keep={"devices": ("cpu",)})   # the same for the study's cpu cells only
    kept(STUDY, {"compiles": ("off",)})  # the cells an axis option beside the preset keeps
    kinds_of(plan.trial)             # "paper": the kinds of cell a planned trial is (the dry run's column)

The report's three speedups per model (analysis.answer) are chosen from measured cells of these kinds:
    paper    DataLoader (the paper's 2 workers), fp32, eager, batch 128: the paper's conditions
    device   the data resident on each device (no input pipeline), fp32, eager, batch 128
    best     candidates for each device's fastest cell at batch 128 (GPU: resident, bf16 autocast,
             compiled; CPU: resident with bf16 autocast, resident compiled); analysis.answer picks the
             fastest measured cell whose accuracy stays within answer.BEST_ACC_POINTS of the paper cell
    what-if  counterfactual cells the bottleneck verdicts need (analysis.bottleneck): a GPU DataLoader
             with 8 workers and 9 CPUs (`--workers 8 --gpu-cpus 9`), the paper cell's input-bound fix

The cells differ in more than one axis, and the what-if cell in its workers and CPUs, which are sweep
conditions rather than axes; so no one grid (a product of axes) holds them without adding cells no
kind needs. `grids` splits them into grids that are exactly the study's cells: cells equal but for
their device share one. `benchctl sweep --preset paper-explained` (presets.py) runs the union of those
grids as one sweep (matrix.expand). Which measured cell is which expected one: analysis/study.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from orchestrator.plan.axes import AXES
from trainables.config import BATCH_SIZE, WORKERS, Compile, Device, Pipeline, Precision

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

# The SweepSpec fields a grid of the study sets (`grids`); the rest apply to every cell alike. Of these,
# the axes (SweepSpec field -> ExpectedCell attribute) filter the cells when given beside the preset
# (`--compile off` keeps its eager cells); the conditions cannot be given, each cell setting its own.
CELL_AXES = {"devices": "device", "batch_sizes": "batch_size", "pipelines": "pipeline",
             "precisions": "precision", "compiles": "compile"}  # fmt: skip
CELL_CONDITIONS = ("workers", "gpu_cpus")
PER_CELL = (*CELL_AXES, *CELL_CONDITIONS)


def of_kind(kind: str, device: str, study: tuple[ExpectedCell, ...] = STUDY) -> list[ExpectedCell]:
    return [c for c in study if c.kind == kind and c.device == device]


def kept(
    study: tuple[ExpectedCell, ...], keep: Mapping[str, Collection] | None = None
) -> tuple[ExpectedCell, ...]:
    """The cells of `study` whose axis values are among `keep`'s (a CELL_AXES field -> the values given,
    enums or their strings; a field not in `keep`: any value)."""
    wanted = {CELL_AXES[f]: {_text(v) for v in vs} for f, vs in (keep or {}).items() if f in CELL_AXES}
    return tuple(c for c in study if all(_text(getattr(c, attr)) in vs for attr, vs in wanted.items()))


def _text(value) -> str:
    return str(getattr(value, "value", value))  # an enum's value; an int (batch size) as text


def grids(
    study: tuple[ExpectedCell, ...] = STUDY, keep: Mapping[str, Collection] | None = None
) -> list[tuple[tuple[str, ...], dict]]:
    """(kinds, fields) of the grids that together hold every cell of `study` that `keep` keeps (kept):
    cells equal but for their device share one grid, whose fields (of PER_CELL; `workers`/`gpu_cpus`
    only where the cells name them) make its product exactly those cells; kinds says which kinds of
    cell it holds. In the order of `study`'s first cell of each grid."""
    groups: dict[tuple, list[ExpectedCell]] = {}
    for c in kept(study, keep):
        key = (c.pipeline, c.precision, c.compile, c.workers, c.gpu_cpus, c.batch_size)
        groups.setdefault(key, []).append(c)
    out = []
    for (pipeline, precision, compile_, workers, gpu_cpus, batch), cells in groups.items():
        fields = dict(
            devices=tuple(dict.fromkeys(c.device for c in cells)),
            batch_sizes=(batch,),
            pipelines=(pipeline,),
            precisions=(precision,),
            compiles=(compile_,),
        )
        if workers is not None:
            fields["workers"] = workers
        if gpu_cpus is not None:
            fields["gpu_cpus"] = gpu_cpus
        out.append((tuple(dict.fromkeys(c.kind for c in cells)), fields))
    return out


# the axes (plan/axes.py) an ExpectedCell does not name (every model is in the study): held at their default
_NAMED = {"model", *(f.name for f in dataclasses.fields(ExpectedCell))}
_UNNAMED = [a for a in AXES if a.trial_field not in _NAMED]


def has_axes(expected: ExpectedCell, cell: Mapping) -> bool:
    """Whether `cell` (TrialConfig field -> value or its text: a measured row of analysis.variants, a
    planned trial's to_dict()) has `expected`'s device, batch size, pipeline, precision and compile, and
    every axis the study does not name at its default (a row older than the axis: its `before` value)."""
    return (
        _text(cell.get("device")) == expected.device.value
        and _int(cell.get("batch_size")) == expected.batch_size
        and _text(cell.get("pipeline")) == expected.pipeline.value
        and _text(cell.get("precision")) == expected.precision.value
        and _text(cell.get("compile")) == expected.compile.value
        and all(_text(cell.get(a.trial_field, a.before)) == a.default for a in _UNNAMED)
    )


def _int(x) -> int | None:
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def kinds_of(trial, study: tuple[ExpectedCell, ...] = STUDY) -> str:
    """The kinds of `study`'s cells a planned trial (a TrialConfig) is, e.g. "paper" ("" for none): its
    axes as has_axes says, and its workers where the cell names them."""
    axes = trial.to_dict()
    return ",".join(
        dict.fromkeys(
            c.kind
            for c in study
            if has_axes(c, axes)
            and (c.workers is None or c.pipeline is not Pipeline.loader or c.workers == trial.workers)
        )
    )


def union_values(study: tuple[ExpectedCell, ...] = STUDY) -> dict:
    """The axis fields of PER_CELL (devices .. compiles) as the union of `study`'s values, in their order:
    what a sweep of the whole study records as its axes (spec.json), though it runs only its cells."""
    union: dict[str, dict] = {}
    for _kinds, fields in grids(study):
        for name, values in fields.items():
            if isinstance(values, tuple):
                union.setdefault(name, {}).update(dict.fromkeys(values))
    return {name: tuple(values) for name, values in union.items()}
