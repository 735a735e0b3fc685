"""Every `benchctl sweep` option, declared once, as data.

    from orchestrator.plan.options import OPTIONS, option
    option("max_failures").default          # 1: the CLI's, SweepSpec's and the README's
    option("max_steps").shown_default       # "none: no cap", as --help and the README say it
    print(markdown_table())                 # the README's options table

Each row names an option, the type its text parses to, its default, its --help text and the SweepSpec
field it sets. Everything else is derived from this table: the command's parameters and --help
(commands/sweep.py), SweepSpec's field defaults and the fields a --resume may change (spec.py), the
fields a preset may set (checked at import, below), and the README's options table (`python -m
orchestrator.plan.options README.md` rewrites it; tests/test_options.py checks that all of them agree).
The grid axes are orchestrator/plan/axes.py's rows, taken in here as options. A new option is a row here
and its SweepSpec field.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from orchestrator.plan.axes import AXES, Axis
from orchestrator.plan.presets import PRESETS, Preset
from trainables import config as d
from trainables.config import StartMethod


class Placement(str, Enum):
    """How trials share a node (see orchestrator/plan/matrix.py for the resources each mode asks for)."""

    exclusive = "exclusive"  # a CPU cell has its node's CPUs to itself; GPU cells share only with GPU cells
    partitioned = "partitioned"  # cells share nodes on disjoint CPU shares, pinned with CPU affinity
    packed = "packed"  # one CPU per trial in Ray's books: fast and unfair, for smoke runs only


class TrialProcess(str, Enum):
    """Where a trial's training loop runs (trainables/launch/isolated.py says why `child` is the default)."""

    child = "child"  # a fresh process under the Ray trial: nothing of Ray or Tune shares the timed loop
    inline = "inline"  # in the Ray worker itself (as before schema 3; 10-15% slower on launch-bound cells)


def default_name() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


@dataclass(frozen=True)
class Option:
    param: str  # the command's parameter: `max_failures` is `--max-failures`
    type: Any  # what the option's text parses to (typer reads it); `| None` is added where default is None
    default: Any  # the option's value when it is not given
    help: str  # the --help text; never the default, which --help and the README state once, apart
    field: str | None  # the SweepSpec field it sets; None: it steers the command only
    shown: str | None = None  # the default in words, where its value does not say it (what None means)
    resumable: bool = False  # a --resume may change it: how the sweep runs, not what it measures
    doc: str = ""  # the README's meaning ("" = `help`); "{resumable}": the options a resume may change
    axis: Axis | None = None  # a grid axis (orchestrator/plan/axes.py): parsed by parse.parse_axis
    to_field: Callable[[Any], Any] | None = None  # the value as its SweepSpec field holds it (None: as is)

    def __post_init__(self) -> None:
        if self.default is None and self.shown is None:
            raise ValueError(f"{self.flag}: a default of None needs `shown`, saying what None means")

    @property
    def flag(self) -> str:
        return "--" + self.param.replace("_", "-")

    @property
    def shown_default(self) -> str:
        """The default as --help and the README state it."""
        if self.shown is not None:
            return self.shown
        if isinstance(self.default, bool):
            return "on" if self.default else "off"
        return self.default.value if isinstance(self.default, Enum) else str(self.default)

    @property
    def field_default(self) -> Any:
        """What the SweepSpec field holds when the option is not given."""
        if self.axis is not None:
            return self.axis.default_values
        return self.default if self.to_field is None else self.to_field(self.default)


def _axis(axis: Axis) -> Option:
    """A grid axis as a sweep option: a comma list, parsed into its SweepSpec field's tuple."""
    return Option(axis.param, str, axis.default, axis.help, axis.spec_field, shown=axis.shown, doc=axis.doc,
                  axis=axis)  # fmt: skip


_PRESETS_HELP = "; ".join(f"{p.value}: {PRESETS[p].about}" for p in Preset)

OPTIONS: tuple[Option, ...] = (
    Option("preset", Preset, None,
           f"Named settings; options given beside it override it. {_PRESETS_HELP}.", "preset",
           shown="none", resumable=True,
           doc="`paper`: the paper's study, `cifar10` (downloaded into `--data-dir`; or `--dataset "
           "folder:PATH`), the three models, `cpu,gpu`, batch 128, loader, fp32, 10 epochs, no step caps. "
           "`paper-explained`: every cell of the explained answer (`orchestrator/plan/study.py`: paper, "
           "device, best candidates, the 8-worker what-if) as one sweep, with the paper's data, models and "
           "epochs; axis options beside it keep the cells with their values (`--devices cpu`: the CPU "
           "cells; `--compile off`: the eager ones), `--workers` and `--gpu-cpus` are refused (each cell "
           "sets its own). "
           "Options given beside a preset override it; spec.json records the preset and the options in "
           "effect"),
    *(_axis(axis) for axis in AXES),
    Option("epochs", int, d.EPOCHS, "Epochs per trial; epoch 1 is warm-up.", "epochs",
           doc="epochs per trial; epoch 1 is warm-up and left out of statistics"),
    Option("repeats", int, 1, "Repeats per cell (seeds seed..seed+N-1).", "repeats",
           doc="repeats per cell: repeat r trains with seed + r"),
    Option("dataset", str, "synthetic", "synthetic, cifar10 or folder:PATH (train/ and test/).", "dataset",
           doc="`synthetic` (CIFAR-shaped, learnable, no download), `cifar10` (downloads into `--data-dir` "
           "when online), `folder:PATH` (ImageFolder `train/` + `test/`)"),
    Option("data_dir", Path, None, "Where cifar10 is (or is downloaded to).", "data_dir",
           shown="$BENCHCTL_DATA, else ~/.cache/benchctl/data",
           doc="where `cifar10` is cached, or downloaded to; without $BENCHCTL_DATA the cache folder is "
           "under $XDG_CACHE_HOME when that is set",
           to_field=lambda path: str(path) if path else ""),
    Option("workers", int, d.WORKERS, "DataLoader worker processes (loader pipeline).", "workers",
           doc="DataLoader worker processes per trial (`loader` pipeline only); a CPU cell keeps a core for "
           "its torch threads, so it runs at most its cores - 1 (2 cores: 1 thread + 1 worker, measured "
           "fastest there: `reports/cpu-split/`)"),
    Option("max_steps", int, None,
           "Cap training steps per epoch; epoch time is extrapolated (marked).", "max_steps",
           shown="none: no cap",
           doc="cap steps per epoch; epoch time is extrapolated and the row says `extrapolated`"),
    Option("max_eval_steps", int, None, "Cap test-pass steps (accuracy marked partial).", "max_eval_steps",
           shown="none: no cap",
           doc="cap steps of each test pass; the row marks its accuracy `eval_partial`"),
    Option("train_size", int, d.TRAIN_SIZE, "Synthetic training images.", "train_size",
           doc="training images of `--dataset synthetic` (other data sets are what they are)"),
    Option("test_size", int, d.TEST_SIZE, "Synthetic test images.", "test_size",
           doc="test images of `--dataset synthetic`"),
    Option("seed", int, d.SEED, "Base seed.", "seed", doc="base seed of weights and data order"),
    Option("cpus_per_trial", int, None, "CPU cores per CPU cell.", "cpus_per_trial",
           shown="all cores of the node it runs on (partitioned: half)",
           doc="a CPU cell's cores: torch threads + DataLoader workers fit inside it. No core is left idle "
           "for Ray's daemons: the trial runs at a better priority than they do (`trainables/priority.py`). "
           "On a 2-core host all cores ran 1.58x the images/s of all but one (median of 4 paired rounds, "
           "`reports/cpu-default/`)"),
    Option("gpu_cpus", int, None, "CPU cores per GPU cell.", "gpu_cpus", shown="1 + DataLoader workers",
           doc="a GPU cell's cores"),
    Option("max_failures", int, 1, "Retries of a trial whose process crashed or whose node died.",
           "max_failures", resumable=True,
           doc="retries of a trial whose process crashed or whose node died; the failed attempt stays on "
           "record"),
    Option("placement", Placement, Placement.exclusive,
           "How trials share nodes: exclusive (fair), partitioned (disjoint pinned cores), packed (fast, "
           "unfair: smoke runs).", "placement",
           doc="how trials share a node: `exclusive` (fair), `partitioned` (disjoint pinned cores), `packed` "
           "(fast, unfair: smoke runs)"),
    Option("trial_process", TrialProcess, TrialProcess.child,
           "Where each trial's loop runs: child (a fresh process under the Ray trial) or inline (in the Ray "
           "worker; slower on launch-bound cells, kept for comparison).", "trial_process",
           doc="where a trial's training loop runs: `child`, a fresh process under the Ray trial (which only "
           "holds the resources, pins cores and relays epochs), or `inline` in the Ray worker itself, "
           "measured 10-15% slower on launch-bound H200 cells (`reports/h200/README.md`)"),
    Option("start_method", StartMethod, None,
           "How a child trial process starts: prestarted (a new Python per trial, started and importing "
           "before the trial asks for it), fresh (a new Python started when the trial starts) or forkserver "
           "(forked from a per-worker server that imported torch once). prestarted and forkserver reuse Ray "
           "workers.", "start_method",
           # None: the default for a child trial; an inline trial starts no process (stored as fresh)
           shown=d.START_METHOD.value,
           doc="how a `child` trial process starts: `prestarted`, a new Python per trial started before the "
           "trial asks for it, which imports meanwhile (`trainables/launch/prestart.py`); `fresh`, a new "
           "Python started when the trial starts (imports in the trial's start); `forkserver`, forked from "
           "a per-worker server that imported torch once (`trainables/launch/forkserver.py`; its steady "
           "epochs differ from a fresh trial's by 3-12%). `prestarted` and `forkserver` reuse Ray workers "
           "between trials. Start times and parity pairs: `reports/trial-start/README.md`"),
    Option("checkpoint", bool, True,
           "Persist trials' state through Ray Tune (see --checkpoint-every), so a retried or resumed trial "
           "continues after its last checkpoint.", "checkpoint", resumable=True,
           doc="after each epoch (or as `--checkpoint-every`/`--checkpoint-every-s` say), the trial's state "
           "goes to Ray Tune (`trainables/checkpoint.py` says what it holds), so a retry or a `--resume` "
           "continues after the last checkpoint; on a cluster it lands on the driver's node unless "
           "`--storage` is given (`cluster/README.md`)"),
    Option("checkpoint_every", int, None, "Checkpoint every N epochs; the last epoch always.",
           "checkpoint_every", shown="1 (every epoch), or none with only --checkpoint-every-s given",
           resumable=True,
           doc="checkpoint after every N epochs, counted from the trial's last checkpoint; the last epoch "
           "is always checkpointed, only the latest checkpoint per trial is kept, and an epoch without one "
           "has null `checkpoint_s`/`checkpoint_mb`. A retry or `--resume` re-runs the epochs after the "
           "last checkpoint. With `--checkpoint-every-s`, whichever rule comes first"),
    Option("checkpoint_every_s", float, None,
           "Checkpoint once S seconds have passed since the trial's last checkpoint; the last epoch always.",
           "checkpoint_every_s", shown="none", resumable=True,
           doc="checkpoint after the first epoch that ends S seconds or more after the trial's last "
           "checkpoint (or its start); the last epoch always"),
    Option("storage", str, None,
           "Where Ray Tune keeps checkpoints and experiment state: a path every node mounts, or a URI "
           "(s3://BUCKET/PREFIX).", "storage",
           shown="none: OUT/NAME/.tune on the driver, reached through Ray",
           doc="where Ray Tune keeps checkpoints and experiment state (`STORAGE/NAME`): an absolute path "
           "or `file:///PATH` every node mounts (NFS), or a URI pyarrow opens (`s3://BUCKET/PREFIX`; an "
           "S3-compatible server with `?endpoint_override=HOST:PORT&scheme=http` or `$AWS_ENDPOINT_URL`). "
           "Checked before the sweep starts; recorded in spec.json and kept by `--resume`; results stay in "
           "`OUT/NAME`. A local sweep with remote storage runs its Ray outside the private network namespace "
           "(`--network-isolation`), which would cut it off. When to use it: `cluster/README.md`"),
    Option("per_class", bool, False,
           "One column per hardware class in the cluster (GPU model; CPU model + cores), cells pinned to "
           "nodes of that class.", "per_class",
           doc="with a cluster: one column per hardware class (GPU model; CPU model + cores), each cell "
           "pinned to nodes of its class"),
    Option("uniform_cells", bool, False,
           "Size every CPU cell to the largest node, as before: smaller nodes then run no CPU cell.",
           "uniform_cells", resumable=True,
           doc="every CPU cell sized to the largest node, as before issue 35: smaller nodes run no CPU cell. "
           "Left out, on a lab whose nodes differ in cores, each CPU trial is sized to one node size and "
           "pinned to its nodes, spread so that every size works; rows record the cores and the node's "
           "class, which the report never pools (`orchestrator/plan/sizing.py`)"),
    Option("network_isolation", bool, True,
           "Local runs as root: Ray in a private network namespace, so none of its ports is reachable from "
           "other machines (Ray 2.60 cannot bind them to loopback).", "isolate_network", resumable=True,
           doc="local runs as root: Ray runs in a private network namespace (loopback only), since Ray 2.60 "
           "listens on all interfaces whatever its node address; otherwise Ray's token authentication "
           "guards those ports"),
    Option("resume", bool, False, "Complete OUT/NAME with its stored options; runs only cells not done.",
           "resume", resumable=True,
           doc="completes the interrupted sweep `OUT/NAME` (give `--name`), running only its unfinished "
           "cells, each cut trial continuing from its last epoch checkpoint. Options not given come from its "
           "`spec.json`; one given again must match it, except those a resume may change ({resumable})"),
    Option("dry_run", bool, False, "List the planned trials and where each can run; start nothing.", None,
           doc="list the planned trials (id, Ray resources, placement, threads + workers, an estimated "
           "time, the nodes that can take each) and the sweep's estimated time, after every check a sweep "
           "makes before it trains (data set, devices, sizes, names); nothing is started or written. The "
           "estimate comes from this machine's earlier runs under `--out`, else from FLOPs and a measured "
           "rate (`orchestrator/analysis/estimate.py`; rough). Without `--cluster` no Ray starts (this "
           "machine's CPU count and NVIDIA device files); with it, the nodes that can run no cell are named "
           "with the reason, as at the start of a real sweep"),
    Option("keep_ray_logs", bool, False,
           "Keep a local sweep's Ray session folder (logs), which is otherwise removed.", None,
           doc="a local sweep removes the Ray session folder (`/tmp/ray/session_*`) it created; this keeps "
           "it"),
    Option("out", Path, Path("results"), "Parent directory of results.", "out", resumable=True,
           doc="parent directory of results: a sweep writes `OUT/NAME`"),
    Option("name", str, None, "Results go to OUT/NAME.", "name", shown="a timestamp", resumable=True,
           doc="results go to `OUT/NAME`; a name that exists is refused unless `--resume`",
           to_field=lambda name: name or default_name()),
    Option("cluster", Path, None, "Ray cluster file (cluster/lab.yaml).", "cluster",
           shown="none: a local Ray", resumable=True,
           doc="a Ray cluster file (`cluster/lab.yaml`); see `cluster/README.md`"),
    Option("port", int, None, "The head's GCS port.", "cluster_port",
           shown="the cluster file's, else 6379", resumable=True,
           doc="the head's GCS port, overriding the cluster file's (only with `--cluster`)"),
)  # fmt: skip

_BY_PARAM = {o.param: o for o in OPTIONS}
FIELD_DEFAULTS = {o.field: o.field_default for o in OPTIONS if o.field is not None and o.param != "name"}
RESUMABLE_FIELDS = tuple(o.field for o in OPTIONS if o.resumable)


def option(param: str) -> Option:
    """The row of a sweep parameter (`max_failures`), KeyError for none."""
    return _BY_PARAM[param]


def fields_given(params: set[str]) -> set[str]:
    """The SweepSpec fields that the given sweep parameters set (`batch_size` -> `batch_sizes`)."""
    return {o.field for o in OPTIONS if o.param in params and o.field is not None}


def _check_presets() -> None:
    """A preset sets only fields that an option sets, so that an option given beside it can override it."""
    fields = {o.field for o in OPTIONS}
    for preset, settings in PRESETS.items():
        if unknown := sorted(set(settings.settings) - fields):
            raise TypeError(f"preset {preset.value}: {', '.join(unknown)} is no sweep option's field")


_check_presets()


_IDENTITY = ("name", "out", "resume")  # which sweep a resume completes: not a change it makes
BEGIN = "<!-- sweep options: `python -m orchestrator.plan.options README.md` writes them from options.py -->"
END = "<!-- end of sweep options -->"


def markdown_table() -> str:
    """The README's table of sweep options: option, default, meaning; one row per option, in order."""
    changeable = ", ".join(f"`{o.flag}`" for o in OPTIONS if o.resumable and o.param not in _IDENTITY)
    lines = ["| option | default | meaning |", "| --- | --- | --- |"]
    for o in OPTIONS:
        flag = f"`{o.flag}` / `--no-{o.flag[2:]}`" if o.default is True else f"`{o.flag}`"
        value = o.shown is None and not isinstance(o.default, bool)
        default = f"`{o.shown_default}`" if value else o.shown_default
        lines.append(f"| {flag} | {default} | {(o.doc or o.help).replace('{resumable}', changeable)} |")
    return "\n".join(lines) + "\n"


def with_table(readme: str) -> str:
    """`readme` with the text between BEGIN and END replaced by the generated table."""
    head, begin, rest = readme.partition(BEGIN + "\n")
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"the README lacks the lines {BEGIN} and {END}")
    return f"{head}{BEGIN}\n{markdown_table()}{END}{tail}"


if __name__ == "__main__":  # python -m orchestrator.plan.options README.md: rewrite its options table
    readme = Path(sys.argv[1])
    readme.write_text(with_table(readme.read_text(encoding="utf-8")), encoding="utf-8")
