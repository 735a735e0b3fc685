"""The sweep's grid axes, declared once, as data.

    from orchestrator.plan.axes import AXES, GRID_AXES
    [a.spec_field for a in AXES]      # models, devices, batch_sizes, pipelines, precisions
    GRID_AXES                         # the same, plus repeats: the spec keys that pick a sweep's trials

Each row ties a SweepSpec field (a tuple of values, validated in orchestrator/plan/spec.py) to the
TrialConfig field each of its values sets (trainables/config.py) and to the `benchctl sweep` option
that gives it. Everything else is derived from this table: the options (commands/sweep.py), the
spec's validation, its spec.json keys and what a --resume compares (spec.py), the grid's product
(matrix.py), the option a preset's field yields to (presets.py), the trial ids a stored spec plans
and the columns each result row names its cell by (sweepstate.py, rows.py, tune_glue.py). So a new axis is a
row here, its SweepSpec field and its TrialConfig field.

`repeats` is a grid axis too, but a count, not a list: repeat r of 0..N-1 sets TrialConfig.repeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from trainables.config import BATCH_SIZE, PAPER_MODELS, Compile, Device, Pipeline, Precision


class Kind(str, Enum):
    """How an axis's option text reads (spec.parse_axis)."""

    names = "names"  # a comma list of names (models: checked against the registry by SweepSpec)
    ints = "ints"  # a comma list of integers >= 1
    choices = "choices"  # a comma list of an enum's values


@dataclass(frozen=True)
class Axis:
    spec_field: str  # the SweepSpec field: a tuple of this axis's values
    trial_field: str  # the TrialConfig field one value sets
    param: str  # the `benchctl sweep` parameter: `batch_size` is `--batch-size`
    kind: Kind
    help: str  # the option's --help text
    default: str | None  # the option's default text; None: decided once the nodes are known (devices)
    choices: type[Enum] | None = None  # Kind.choices: the enum of its values

    @property
    def option(self) -> str:
        return "--" + self.param.replace("_", "-")


AXES: tuple[Axis, ...] = (
    Axis("models", "model", "models", Kind.names, "Comma list of model names (`benchctl models`).",
         ",".join(PAPER_MODELS)),
    Axis("devices", "device", "devices", Kind.choices,
         "Comma list of devices: cpu, gpu (default: cpu, plus gpu if a node has one).", None, Device),
    Axis("batch_sizes", "batch_size", "batch_size", Kind.ints, "Batch size; a comma list is a grid axis.",
         str(BATCH_SIZE)),
    Axis("pipelines", "pipeline", "pipeline", Kind.choices,
         "Input pipeline(s): loader (DataLoader, per-sample transforms), resident.", "loader", Pipeline),
    Axis("precisions", "precision", "precision", Kind.choices, "Precision(s): fp32, amp (bf16 autocast).",
         "fp32", Precision),
    Axis("compiles", "compile", "compile", Kind.choices,
         "Training step(s): off (eager, the paper's), on (torch.compile).", "off", Compile),
)  # fmt: skip

# Spec fields that pick which trials a sweep plans (its grid), not the conditions each trial runs under.
GRID_AXES: tuple[str, ...] = (*(a.spec_field for a in AXES), "repeats")
