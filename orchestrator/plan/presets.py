"""Named sweep settings (`benchctl sweep --preset NAME`), declared as data.

    from orchestrator.plan.presets import PRESETS, Preset
    PRESETS[Preset.paper].settings     # SweepSpec fields the preset sets
    preset_fields(Preset.paper, given={"dataset"})   # its settings minus the fields the user gave

A preset only fills in options: every option given on the command line overrides it, and the spec
records both the preset's name and the options in effect (spec.json `preset` beside the fields). So a
preset sets only SweepSpec fields that a sweep option sets (orchestrator/plan/options.py checks it).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from trainables.config import BATCH_SIZE, EPOCHS, PAPER_MODELS, Compile, Device, Pipeline, Precision


class Preset(str, Enum):
    """The presets `--preset` takes."""

    paper = "paper"  # the paper's study: real CIFAR-10, its three models, CPU and GPU, 10 full epochs


@dataclass(frozen=True)
class PresetSettings:
    about: str  # one line for --help and the README
    settings: MappingProxyType  # SweepSpec field -> value, in SweepSpec's own types


PRESETS = {
    Preset.paper: PresetSettings(
        about="the paper's study: cifar10, simple_cnn/resnet18/resnet50 on cpu and gpu, batch 128, "
        "loader, fp32, 10 full epochs (no step caps)",
        settings=MappingProxyType(
            {
                # real CIFAR-10, downloaded into --data-dir; `--dataset folder:PATH` points at a local export
                "dataset": "cifar10",
                "models": PAPER_MODELS,
                "devices": (Device.cpu, Device.gpu),
                "batch_sizes": (BATCH_SIZE,),
                "pipelines": (Pipeline.loader,),
                "precisions": (Precision.fp32,),
                "compiles": (Compile.off,),  # eager, as the paper ran it
                "epochs": EPOCHS,
                # the paper timed whole epochs and the whole test set: a cap would make them extrapolated
                "max_steps": None,
                "max_eval_steps": None,
            }
        ),
    ),
}


def preset_fields(preset: Preset | str, given: Collection[str] = ()) -> dict:
    """The SweepSpec fields `preset` sets, leaving out those the user gave an option for (`given`: field
    names such as `batch_sizes`; options.fields_given names them), since an explicit option always wins."""
    settings = PRESETS[Preset(preset)].settings
    return {name: value for name, value in settings.items() if name not in given}
