"""Named sweep settings (`benchctl sweep --preset NAME`), declared as data.

    from orchestrator.plan.presets import PRESETS, Preset
    PRESETS[Preset.paper].settings     # SweepSpec fields the preset sets
    preset_fields(Preset.paper, given={"dataset"})   # its settings minus the fields the user gave
    PRESETS[Preset.paper_explained].cells            # the study's cells (plan/study.py); None: a grid

A preset only fills in options: every option given on the command line overrides it, and the spec
records both the preset's name and the options in effect (spec.json `preset` beside the fields). So a
preset sets only SweepSpec fields that a sweep option sets (orchestrator/plan/options.py checks it).

A preset with `cells` is not one grid but the union of the grids that hold exactly those cells
(study.grids; matrix.expand plans it, as one sweep). Its settings record the union's axis values and
the default workers and CPUs. An axis option given beside it (study.CELL_AXES: `--devices`,
`--batch-size`, `--pipeline`, `--precision`, `--compile`) keeps the cells with those values (a CPU-only
machine runs the study's cpu half, `--compile off` its eager cells); the workers and CPUs its cells set
(study.CELL_CONDITIONS) cannot be given, each cell setting its own (SweepSpec refuses them).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from orchestrator.plan.study import STUDY, ExpectedCell, grids, union_values
from trainables.config import BATCH_SIZE, EPOCHS, PAPER_MODELS, WORKERS, Compile, Device, Pipeline, Precision


class Preset(str, Enum):
    """The presets `--preset` takes."""

    paper = "paper"  # the paper's study: real CIFAR-10, its three models, CPU and GPU, 10 full epochs
    paper_explained = "paper-explained"  # every cell of the explained study (plan/study.py), one sweep


@dataclass(frozen=True)
class PresetSettings:
    about: str  # one line for --help and the README
    settings: MappingProxyType  # SweepSpec field -> value, in SweepSpec's own types
    cells: tuple[ExpectedCell, ...] | None = None  # a union of these cells' grids; None: one grid


# what the paper's study and the explained one share: real CIFAR-10, its models, 10 full epochs
_PAPER_RUN = {
    # real CIFAR-10, downloaded into --data-dir; `--dataset folder:PATH` points at a local export
    "dataset": "cifar10",
    "models": PAPER_MODELS,
    "epochs": EPOCHS,
    # the paper timed whole epochs and the whole test set: a cap would make them extrapolated
    "max_steps": None,
    "max_eval_steps": None,
}


PRESETS = {
    Preset.paper: PresetSettings(
        about="the paper's study: cifar10, simple_cnn/resnet18/resnet50 on cpu and gpu, batch 128, "
        "loader, fp32, 10 full epochs (no step caps)",
        settings=MappingProxyType(
            {
                **_PAPER_RUN,
                "devices": (Device.cpu, Device.gpu),
                "batch_sizes": (BATCH_SIZE,),
                "pipelines": (Pipeline.loader,),
                "precisions": (Precision.fp32,),
                "compiles": (Compile.off,),  # eager, as the paper ran it
            }
        ),
    ),
    Preset.paper_explained: PresetSettings(
        about="every cell of the explained study (the paper's, data resident, each device's best "
        "candidates, gpu loader with 8 workers and 9 CPUs) for simple_cnn/resnet18/resnet50, cifar10, "
        "10 full epochs, as one sweep; --devices keeps one device's cells",
        # the union's axis values (recorded in spec.json) and the default workers and CPUs, which the
        # what-if cell sets for itself
        settings=MappingProxyType(
            {**_PAPER_RUN, **union_values(STUDY), "workers": WORKERS, "gpu_cpus": None}
        ),
        cells=STUDY,
    ),
}


def preset_fields(preset: Preset | str, given: Collection[str] = ()) -> dict:
    """The SweepSpec fields `preset` sets, leaving out those the user gave an option for (`given`: field
    names such as `batch_sizes`; options.fields_given names them), since an explicit option always wins."""
    settings = PRESETS[Preset(preset)].settings
    return {name: value for name, value in settings.items() if name not in given}


def union_grids(preset: Preset | str | None, keep: Mapping[str, Collection] | None) -> list[dict] | None:
    """The fields of each grid a preset with cells runs, of its cells that `keep` keeps (the sweep's axis
    values: study.kept; None: all), each over the spec's own; None for no preset or a preset that is one
    grid."""
    cells = PRESETS[Preset(preset)].cells if preset is not None else None
    if cells is None:
        return None
    return [fields for _kinds, fields in grids(cells, keep)]
