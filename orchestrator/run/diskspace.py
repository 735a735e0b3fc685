"""A full disk is a clean stop: what a sweep will write, a warning when that looks short, and one line
naming the path when a write finds no space.

    note = shortfall_note(results_dir, plans, checkpoints_here=True)   # None, or one warning line
    if is_disk_full(exc): raise DiskFull(path, "the epochs rows of trial ...", needed_mb)

The driver's disk holds every result row and, with Tune's storage there (a local sweep, or the relay of
orchestrator/run/relayfs.py on a cluster), every trial's latest checkpoint; a worker's disk holds the
checkpoint its trial is writing. When a write finds no space the sweep stops with DiskFull (exit 2):
every file it wrote is whole (written under a temporary name, then renamed), and `--resume` continues
once space is freed (orchestrator/run/sweep.py). Sizes are estimates: a checkpoint is the model's
parameters and SGD's momentum buffer of the same size, fp32 (trainables/checkpoint.py also stores RNG
states: a few KB); rows are the Parquet files of the result schema, sized by writing them empty.
"""

from __future__ import annotations

import errno
import io
import logging
import re
import shutil
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from orchestrator.errors import USAGE, BenchctlError, short_path
from orchestrator.plan.hints import resume_command
from orchestrator.plan.trial_plan import TrialPlan

MB = 2**20  # as the rows count checkpoint_mb (trainables/train.py)
_FULL = {errno.ENOSPC, errno.EDQUOT}
# how the message reads when the errno did not survive (pyarrow's own OSError, a trial's error text)
_FULL_TEXT = re.compile(r"errno 28\]|no space left on device|disk quota exceeded", re.IGNORECASE)
_QUOTED_PATH = re.compile(r"'(/[^']+)'")


class DiskFull(BenchctlError):
    """A write found no space: the line names where, what, about how much the rest of the sweep needs
    and the command that continues it (the last two known only to the sweep: `for_sweep`)."""

    def __init__(self, path, what: str, needed_mb: float | None = None, resume: str | None = None) -> None:
        self.path, self.what, self.needed_mb, self.resume = str(path), what, needed_mb, resume
        super().__init__(self._line(), exit_code=USAGE)

    def _line(self) -> str:
        need = f"; about {_mb(self.needed_mb)} more is needed to finish" if self.needed_mb else ""
        return (
            f"no space left on device at {short_path(self.path)} writing {self.what}{need}; what finished "
            f"is on disk: free space there, then continue with `{self.resume or 'benchctl sweep --resume'}`"
        )

    def for_sweep(self, needed_mb: float, results_dir: Path) -> DiskFull:
        """This stop, with the space the rest of the sweep needs and the command that continues it."""
        needed = max(needed_mb, self.needed_mb or 0)
        return DiskFull(self.path, self.what, needed, resume_command(results_dir))


def _mb(mb: float) -> str:
    return f"{mb / 1024:.1f} GB" if mb >= 1024 else f"{max(mb, 0.1):.1f} MB"


def is_disk_full(exc: BaseException | str | None) -> bool:
    """Whether `exc` (or any exception it was raised from, or an error's text) says the disk is full."""
    if isinstance(exc, str):
        return bool(_FULL_TEXT.search(exc))
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if getattr(exc, "errno", None) in _FULL or _FULL_TEXT.search(str(exc)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def full_path(exc: BaseException | str, default: Path) -> str:
    """The path a disk-full error names (its filename, or the first quoted absolute path in its text)."""
    name = getattr(exc, "filename", None)
    if name:
        return str(name)
    found = _QUOTED_PATH.search(str(exc))
    return found.group(1) if found else str(default)


@cache
def checkpoint_mb(model: str) -> float:
    """A rough size of one epoch checkpoint of `model` (resnet50: 180 MB; 188 as measured on the H100)."""
    from orchestrator.analysis.flops_table import PAPER_PARAMS

    params = PAPER_PARAMS.get(model)
    if params is None:  # any other torchvision classifier: counted, which imports torch
        from trainables.models import param_count

        params = param_count(model)
    return params * 4 * 2 / MB  # fp32 weights + the momentum buffer of the same shape


@cache
def _rows_mb(epochs: int) -> float:
    """One trial attempt's two Parquet files (its epochs and its trials row), written empty in memory:
    the schema's footer and columns, which dominate files this small."""
    import pyarrow.parquet as pq

    from orchestrator.results.files import to_table

    size = 0
    for kind, rows in (("epochs", max(epochs, 1)), ("trials", 1)):
        buffer = io.BytesIO()
        pq.write_table(to_table([{}] * rows, kind), buffer)
        size += buffer.tell()
    return size / MB


def footprint_mb(plans: Iterable[TrialPlan], checkpoints_here: bool) -> float:
    """About what the plans leave on the driver's disk: each trial's rows, and with Tune's storage there
    its latest checkpoint (Tune keeps one per trial: CheckpointConfig(num_to_keep=1))."""
    total = 0.0
    for plan in plans:
        cfg = plan.trial
        total += _rows_mb(cfg.epochs)
        if checkpoints_here and plan.checkpoint is not None:
            total += checkpoint_mb(cfg.model)
    return total


def shortfall_note(results_dir: Path, plans: list[TrialPlan], checkpoints_here: bool) -> str | None:
    """One warning line when the free space under `results_dir` looks short of what the sweep writes."""
    need = footprint_mb(plans, checkpoints_here)
    free = shutil.disk_usage(results_dir).free / MB
    if free >= need:
        return None
    with_checkpoints = checkpoints_here and any(p.checkpoint is not None for p in plans)
    what = "rows and one checkpoint per trial" if with_checkpoints else "rows"
    return (
        f"benchctl: warning: {short_path(results_dir)} has {_mb(free)} free, and this sweep writes about "
        f"{_mb(need)} there ({what}); it stops cleanly when the disk fills, and `--resume` continues"
    )


def disk_full_stop(
    exc: BaseException, results_dir: Path, plans: list[TrialPlan], checkpoints_here: bool, writer=None
) -> DiskFull | None:
    """The stop a sweep's exception `exc` means when it is a full disk, else None: the results writer's
    own (`writer.disk_full`: rows or a trial's files), or any other write on the way (spec.json, Tune's
    own state), with about what the trials not yet finished still need."""
    full = getattr(writer, "disk_full", None)
    if full is None:
        if not is_disk_full(exc):
            return None
        full = DiskFull(full_path(exc, results_dir), "the sweep's state")
    finished = getattr(writer, "finished", set())
    left = [p for p in plans if p.trial.trial_id not in finished]
    return full.for_sweep(footprint_mb(left, checkpoints_here), results_dir)


class _NoDiskFullTraceback(logging.Filter):
    """Drops Tune's traceback of a trial that failed on a full disk: the sweep says it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and is_disk_full(record.exc_info[1]))


def quiet_tune_disk_full() -> None:
    """Have Tune's controller log no traceback for a trial failed by a full disk (DiskFull says it)."""
    tune_log = logging.getLogger("ray.tune.execution.tune_controller")
    if not any(isinstance(f, _NoDiskFullTraceback) for f in tune_log.filters):
        tune_log.addFilter(_NoDiskFullTraceback())
