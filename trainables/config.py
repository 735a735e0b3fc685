"""One frozen dataclass describes one trial; every default number lives in the block below.

    from trainables.config import TrialConfig
    cfg = TrialConfig(model="resnet18", device="cpu", epochs=2, max_steps=3, train_size=512)

The orchestrator builds a TrialConfig once per grid cell, ships it to Ray as a plain dict
(`cfg.to_dict()`), and the trial rebuilds it with `TrialConfig.from_dict`, so validation runs on
both sides and a bad value never reaches the training loop.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path


class Device(str, Enum):
    cpu = "cpu"
    gpu = "gpu"


class Pipeline(str, Enum):
    loader = "loader"  # paper-style: per-sample transforms in a torch DataLoader with worker processes
    resident = "resident"  # whole dataset as tensors on the trial's device, augmentation done there


class Precision(str, Enum):
    fp32 = "fp32"
    amp = "amp"  # bf16 autocast (GPU and CPU)


class Compile(str, Enum):
    """How the training step runs (trainables/compiled.py says what `on` compiles, and how)."""

    off = "off"  # eager PyTorch, as the paper ran it
    on = "on"  # torch.compile: Inductor + CUDA graphs on a GPU, Inductor's C++/OpenMP code on a CPU


class StartMethod(str, Enum):
    """How a trial's child process starts (trainables/launch/isolated.py says what each costs)."""

    fresh = "fresh"  # a new interpreter per trial: imports torch itself
    prestarted = "prestarted"  # a new interpreter per trial, started ahead (trainables/launch/prestart.py)
    forkserver = "forkserver"  # a fork of a server that imported torch once (trainables/launch/forkserver.py)


# ---- defaults: the one place where numbers live -------------------------------------------
PAPER_MODELS = ("simple_cnn", "resnet18", "resnet50")  # the paper's three models, the default grid
EPOCHS = 10  # passes over the training set (the paper: 10)
BATCH_SIZE = 128  # images per optimizer step
WORKERS = 2  # DataLoader worker processes (loader pipeline only)
LR = 0.05  # SGD learning rate, per step (not scaled with batch size)
MOMENTUM = 0.9  # SGD momentum (dimensionless)
WEIGHT_DECAY = 5e-4  # L2 penalty coefficient
TRAIN_SIZE = 50_000  # synthetic training images (CIFAR-10's size)
TEST_SIZE = 10_000  # synthetic test images (CIFAR-10's size)
IMAGE_SIZE = 32  # pixels per side fed to every model (CIFAR-10's native size)
CROP_PADDING = 4  # pixels of zero padding before the random 32x32 crop
NUM_CLASSES = 10  # classes in every data set benchctl trains on
SEED = 0  # base seed; repeat r uses SEED + r
EVAL_BATCH_SIZE = 512  # images per step of the test pass (no gradients, so larger)
START_METHOD = StartMethod.prestarted  # how a child trial process starts (a sweep's and run_isolated's)
# ---------------------------------------------------------------------------------------------


def default_data_dir() -> Path:
    """Where cifar10 is cached: $BENCHCTL_DATA, else $XDG_CACHE_HOME/benchctl/data, else ~/.cache/..."""
    if os.environ.get("BENCHCTL_DATA"):
        return Path(os.environ["BENCHCTL_DATA"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "benchctl" / "data"


def _positive_int(name: str, value, *, allow_none: bool = False, allow_zero: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}: {value!r} is not allowed; must be an integer")
    low = 0 if allow_zero else 1
    if value < low:
        raise ValueError(f"{name}: {value} is not allowed; must be at least {low}")


@dataclass(frozen=True)
class CheckpointPolicy:
    """After which epochs a trial persists its state (trainables/checkpoint.py): once `every_epochs`
    epochs have passed since its last checkpoint, and/or once `every_s` seconds have (counted from the
    attempt's first epoch when it has none yet); the last epoch always, so a finished trial leaves one.
    Neither given: the last epoch only. A checkpoint costs seconds outside the timed epoch (resnet50's
    is ~190 MB), and an epoch without one is re-run by a retry."""

    every_epochs: int | None = 1
    every_s: float | None = None

    def __post_init__(self) -> None:
        _positive_int("every_epochs", self.every_epochs, allow_none=True)
        if self.every_s is not None and (isinstance(self.every_s, bool) or not self.every_s > 0):
            raise ValueError(f"every_s: {self.every_s!r} is not allowed; must be a number above 0")

    def due(self, epoch: int, epochs: int, since_epoch: int, since_s: float) -> bool:
        """Whether the state after `epoch` (of `epochs`) is persisted, the last checkpoint (or the
        attempt's start) lying `epoch - since_epoch` epochs and `since_s` seconds back."""
        if epoch >= epochs:
            return True
        if self.every_epochs is not None and epoch - since_epoch >= self.every_epochs:
            return True
        return self.every_s is not None and since_s >= self.every_s

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_ENUMS = (("device", Device), ("pipeline", Pipeline), ("precision", Precision), ("compile", Compile))


@dataclass(frozen=True)
class TrialConfig:
    """Everything that defines one timed training run. Built once, passed whole."""

    model: str
    device: Device = Device.cpu
    batch_size: int = BATCH_SIZE
    pipeline: Pipeline = Pipeline.loader
    precision: Precision = Precision.fp32
    compile: Compile = Compile.off
    seed: int = SEED
    repeat: int = 0
    epochs: int = EPOCHS
    max_steps: int | None = None  # budget: cap on training steps per epoch (time is extrapolated)
    max_eval_steps: int | None = None  # budget: cap on test-pass steps (accuracy marked partial)
    dataset: str = "synthetic"  # synthetic | cifar10 | folder:PATH
    data_dir: str = ""  # cifar10 cache; "" means default_data_dir()
    train_size: int = TRAIN_SIZE
    test_size: int = TEST_SIZE
    workers: int = WORKERS
    cpus: int = 1  # CPU cores allotted to this trial; torch threads + workers fit inside it
    hw_class: str = ""  # --per-class: the hardware class the cell is pinned to (e.g. gpu:H200); "" = any
    lr: float = LR
    momentum: float = MOMENTUM
    weight_decay: float = WEIGHT_DECAY

    def __post_init__(self) -> None:
        # Enums arrive as plain strings from Ray configs and the CLI; coerce, naming the field.
        for name, enum in _ENUMS:
            value = getattr(self, name)
            try:
                object.__setattr__(self, name, enum(value))
            except ValueError:
                choices = ", ".join(e.value for e in enum)
                raise ValueError(f"{name}: {value!r} is not allowed; must be one of {choices}") from None
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"model: {self.model!r} is not allowed; must be a non-empty name")
        _positive_int("batch_size", self.batch_size)
        _positive_int("epochs", self.epochs)
        _positive_int("seed", self.seed, allow_zero=True)
        _positive_int("repeat", self.repeat, allow_zero=True)
        _positive_int("max_steps", self.max_steps, allow_none=True)
        _positive_int("max_eval_steps", self.max_eval_steps, allow_none=True)
        _positive_int("train_size", self.train_size)
        _positive_int("test_size", self.test_size)
        _positive_int("workers", self.workers, allow_zero=True)
        _positive_int("cpus", self.cpus)
        for name in ("lr", "momentum", "weight_decay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name}: {value!r} is not allowed; must be a number, at least 0")
        if not (self.dataset in ("synthetic", "cifar10") or self.dataset.startswith("folder:")):
            raise ValueError(
                f"dataset: {self.dataset!r} is not allowed; must be synthetic, cifar10 or folder:PATH"
            )
        if not isinstance(self.hw_class, str) or (
            self.hw_class and not self.hw_class.startswith(f"{self.device.value}:")
        ):
            raise ValueError(
                f"hw_class: {self.hw_class!r} is not allowed; must be '' or start with '{self.device.value}:'"
            )
        if self.dataset == "folder:":
            raise ValueError("dataset: 'folder:' is not allowed; must name a path, e.g. folder:/data/imgs")

    # -- derived, never stored: one source of truth --------------------------------------------
    @property
    def data_workers(self) -> int:
        """DataLoader workers actually used: the resident pipeline has none; a CPU cell keeps at least one
        core for its torch threads, so threads + workers never exceed its cores (`--workers 2` on 2 cores:
        1 thread + 1 worker; measured fastest of 2+0, 1+1 and 1+2 there, reports/cpu-split). A GPU cell's
        cores are 1 + its workers unless --gpu-cpus says otherwise; its workers stay as asked."""
        if self.pipeline is not Pipeline.loader:
            return 0
        if self.device is Device.cpu:
            return min(self.workers, self.cpus - 1)
        return self.workers

    @property
    def torch_threads(self) -> int:
        """Intra-op threads: the allotment minus the cores the DataLoader workers occupy (at least 1)."""
        return max(1, self.cpus - self.data_workers)

    @property
    def run_seed(self) -> int:
        """The seed of this repeat's weights and data order: seed + repeat (SEED's comment)."""
        return self.seed + self.repeat

    @property
    def drop_last(self) -> bool:
        """Whether training epochs leave out a last partial batch: compiled steps run one static shape
        (CUDA graphs need it; a second shape would compile again), so they train on full batches only."""
        return self.compile is Compile.on

    @property
    def cell(self) -> str:
        """The grid cell this trial measures (everything but the repeat); a pinned hardware class
        stands where the device would: `resnet18/gpu:H200/bs128/loader/fp32`, and a compiled cell
        ends in `/compiled` (eager ids stay as they were before the compile axis existed). A DataLoader
        cell with other than WORKERS workers ends in `/w8` (8 workers), so that one sweep can hold both
        (`--preset paper-explained`); ids with the default workers stay as they were."""
        bs = f"bs{self.batch_size}"
        where = self.hw_class or self.device.value
        parts = [self.model, where, bs, self.pipeline.value, self.precision.value]
        if self.compile is Compile.on:
            parts.append("compiled")
        if self.pipeline is Pipeline.loader and self.workers != WORKERS:
            parts.append(f"w{self.workers}")
        return "/".join(parts)

    @property
    def trial_id(self) -> str:
        return f"{self.cell}/r{self.repeat}"

    def resolved_data_dir(self) -> Path:
        return Path(self.data_dir) if self.data_dir else default_data_dir()

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        for key, _ in _ENUMS:
            d[key] = d[key].value
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrialConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown trial config keys: {', '.join(unknown)}")
        return cls(**d)
