"""The sweep's grid axes, declared once, as data.

    from orchestrator.plan.axes import AXES, GRID_AXES
    [a.spec_field for a in AXES]      # models, devices, batch_sizes, pipelines, precisions
    GRID_AXES                         # the same, plus repeats: the spec keys that pick a sweep's trials

Each row ties a SweepSpec field (a tuple of values, validated in orchestrator/plan/spec.py) to the
TrialConfig field each of its values sets (trainables/config.py) and to the `benchctl sweep` option
that gives it. Everything else is derived from this table: the options, their help and defaults
(orchestrator/plan/options.py takes each row in as a sweep option), the spec's validation, its spec.json
keys and what a --resume compares (spec.py), the grid's product (matrix.py), the trial ids a stored
spec plans (sweepstate.py), the result rows' columns, their types and the schema version that promises
each (rows.py, tune_glue.py), and what the analysis and the report key, name and show a cell by (cell
names, pairing, compare, estimates, the study's cells, tables, labels, figure slots).

So a new axis touches: this table (a row), spec.py (its typed SweepSpec field), the trainable code
(its TrialConfig field and the code that honours it), the tests, the README's options table (generated)
and, as its result column is new, the next results schema version (results/schema.py, CHANGELOG.md).

`repeats` is a grid axis too, but a count, not a list: repeat r of 0..N-1 sets TrialConfig.repeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from trainables.config import BATCH_SIZE, PAPER_MODELS, Compile, Device, Pipeline, Precision


class Kind(str, Enum):
    """How an axis's option text reads (parse.parse_axis)."""

    names = "names"  # a comma list of names (models: checked against the registry by SweepSpec)
    ints = "ints"  # a comma list of integers >= 1
    choices = "choices"  # a comma list of an enum's values


@dataclass(frozen=True)
class Axis:
    spec_field: str  # the SweepSpec field: a tuple of this axis's values
    trial_field: str  # the TrialConfig field one value sets
    param: str  # the `benchctl sweep` parameter: `batch_size` is `--batch-size`
    kind: Kind
    help: str  # the option's --help text (its default is stated apart, once: options.py)
    default: str | None  # the option's default text; None: decided once the nodes are known (devices)
    choices: type[Enum] | None = None  # Kind.choices: the enum of its values
    shown: str | None = None  # the default in words where `default` is None (what None means)
    doc: str = ""  # the README's meaning of the option; "" = `help`
    # how the report shows a value: its table column's header ("" = param), value -> word (compile:
    # on -> compiled), a label's text ("batch {}") and a short one for slots and names ("bs{}"), the
    # value labels leave out (compile off: eager, the paper's, said nowhere), and what results written
    # before the axis existed read as (None: the axis was always recorded)
    header: str = ""
    words: tuple[tuple[str, str], ...] = ()
    label: str = "{}"
    short: str = "{}"
    unmarked: str | None = None
    before: str | None = None
    schema: str = "1"  # the results schema version (results/schema.py) whose rows first held its column
    name_unmarked: bool = False  # cell names (analysis/variants.py) say the unmarked value too: ".../eager"

    @property
    def column(self) -> str:
        return self.header or self.param

    def word(self, value) -> str:
        """A value as the report's tables say it (`on` -> `compiled` for compile)."""
        return dict(self.words).get(str(value), str(value))

    def tag(self, value, short: bool = False, keep_unmarked: bool = False) -> str:
        """A value as labels ("batch 128") or, `short`, slots and names ("bs128") say it; "" for the
        unmarked value unless `keep_unmarked`."""
        if self.unmarked is not None and str(value) == self.unmarked and not keep_unmarked:
            return ""
        return (self.short if short else self.label).format(self.word(value))

    @property
    def option(self) -> str:
        return "--" + self.param.replace("_", "-")

    @property
    def default_values(self) -> tuple | None:
        """The default as SweepSpec's field holds it: `"128"` -> (128,), enums as enums (None: unresolved)."""
        if self.default is None:
            return None
        items = self.default.split(",")
        if self.kind is Kind.ints:
            return tuple(int(item) for item in items)
        if self.kind is Kind.choices:
            return tuple(self.choices(item) for item in items)
        return tuple(items)


AXES: tuple[Axis, ...] = (
    Axis("models", "model", "models", Kind.names, "Comma list of model names (`benchctl models`).",
         ",".join(PAPER_MODELS),
         doc="comma list of model names (`benchctl models`); any torchvision classifier that takes 32x32 "
         "input also works"),
    Axis("devices", "device", "devices", Kind.choices, "Comma list of devices: cpu, gpu.", None, Device,
         shown="cpu, plus gpu if a node has one",
         doc="comma list of `cpu`, `gpu`; left out, they are said in one line as the sweep starts "
         "(`--resume`: the stored ones). A gpu cell asks Ray for 1 GPU; a cpu cell for CPUs only. `gpu` "
         "asked for with no GPU anywhere: refused up front (exit 2)"),
    Axis("batch_sizes", "batch_size", "batch_size", Kind.ints, "Batch size; a comma list is a grid axis.",
         str(BATCH_SIZE), doc="images per optimizer step; a comma list is a grid axis", header="batch",
         label="batch {}", short="bs{}"),
    Axis("pipelines", "pipeline", "pipeline", Kind.choices,
         "Input pipeline(s): loader (DataLoader, per-sample transforms), resident.", "loader", Pipeline,
         doc="`loader`: paper-style DataLoader, per-sample crop+flip+normalize, `--workers` processes; "
         "`resident`: data set on the device, augmentation there"),
    Axis("precisions", "precision", "precision", Kind.choices, "Precision(s): fp32, amp (bf16 autocast).",
         "fp32", Precision, doc="`amp` = bf16 autocast"),
    Axis("compiles", "compile", "compile", Kind.choices,
         "Training step(s): off (eager, the paper's), on (torch.compile).", "off", Compile,
         doc="`on`: the training step through torch.compile (GPU: CUDA graphs, channels_last; CPU: Inductor "
         "C++), compiled before epoch 1 and timed apart as `compile_s`; full batches only "
         "(`trainables/compiled.py`). A comma list is a grid axis; the report pairs eager with eager, "
         "compiled with compiled, and shows the gain (`reports/h200-compile`)", header="step",
         words=(("on", "compiled"), ("off", "eager")), unmarked="off", before="off",
         schema="6", name_unmarked=True),
)  # fmt: skip

# Spec fields that pick which trials a sweep plans (its grid), not the conditions each trial runs under.
GRID_AXES: tuple[str, ...] = (*(a.spec_field for a in AXES), "repeats")

# the axes that set a model's configuration apart (all but the model and the device): the report's
# configuration columns, labels and figure slots
CONFIG_AXES: tuple[Axis, ...] = tuple(a for a in AXES if a.trial_field not in ("model", "device"))
