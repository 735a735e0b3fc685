"""What runs inside Ray Tune: the trial wrapper and the driver-side callbacks.

`tune_trial` is the Tune function trainable: it rebuilds the TrialPlan (orchestrator/plan/trial_plan.py)
from the Tune config and hands its TrialConfig to the plain `trainables.train.run_trial` (or to a
child process running it), reporting each epoch's numbers with `tune.report`.
The trial's strings (host, device name, versions) travel once, in the first report, as one JSON
attribute (`benchctl_info`); every other reported value is a flat number.

`ResultsWriter` runs on the driver and writes the Parquet files as results arrive, so no shared
filesystem is needed.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from ray.tune import Callback

from orchestrator.lab.hardware import row_class
from orchestrator.plan.axes import AXES
from orchestrator.plan.spec import TrialProcess
from orchestrator.plan.storage import checkpoint_location, uri_of
from orchestrator.plan.trial_plan import TrialPlan
from orchestrator.results.files import file_key, write_rows
from orchestrator.results.rows import EPOCH_METRICS
from orchestrator.run.diskspace import DiskFull, full_path, is_disk_full

INFO_KEY = "benchctl_info"


def trial_request(config: dict):
    """What Tune asks Ray for, for one of its configs (`tune.with_resources`)."""
    return TrialPlan.from_tune(config).request()


def tune_trial(config: dict) -> None:
    import shutil
    import tempfile

    import ray
    from ray import tune

    from orchestrator.run.phases import post_phase
    from trainables.affinity import CoreBook, format_cores
    from trainables.launch.runner import trial_runner

    plan = TrialPlan.from_tune(config)
    cfg = plan.trial
    sent_info = False
    placement = {
        "entered_at": time.time(),  # Ray runs the trial from here on (the start phases begin: start_phases)
        "placement": plan.placement.value,
        "cpu_share": plan.resources["CPU"],
        "node_id": ray.get_runtime_context().get_node_id(),
    }
    work = Path(tempfile.mkdtemp(prefix="benchctl-ckpt-"))  # this attempt's local checkpoints
    checkpoint_dir = work / "save" if plan.checkpoint else None

    def report(info: dict, row: dict) -> None:
        nonlocal sent_info
        metrics = dict(row)
        if not sent_info:
            metrics[INFO_KEY] = json.dumps({**info, **placement})
            sent_info = True
        if checkpoint_dir is None or "checkpoint_mb" not in row:
            tune.report(metrics)
            return
        from trainables.train import checkpoint_path

        local = checkpoint_path(checkpoint_dir, row["epoch"])
        # Tune copies the directory to the sweep's storage before report returns (the driver's node,
        # through orchestrator/run/relayfs.py on a cluster); the local copy is then of no further use
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(str(local)))
        shutil.rmtree(local, ignore_errors=True)

    try:
        restore_from = None
        checkpoint = tune.get_checkpoint() or stored_checkpoint(plan)
        if checkpoint is not None:  # Tune's retry of this trial, or a --resume of an earlier run's
            post_phase(cfg.trial_id, f"fetching its checkpoint ({checkpoint.path})")
            restore_from = Path(checkpoint.to_directory(str(work / "restore")))
        # partitioned: pin to disjoint cores before torch starts its threads and the loader its workers
        pin = CoreBook().claim(plan.cpus) if plan.pins_cpus else contextlib.nullcontext()
        with pin as cores:
            placement["cpu_affinity"] = format_cores(cores) if cores else None
            # child (default): the loop runs in a fresh process that inherits the pinned cores and Ray's
            # CUDA_VISIBLE_DEVICES; this worker only relays its epochs (trainables/launch/isolated.py: why).
            # inline: in this worker (trainables/launch/runner.py)
            inline = plan.trial_process is TrialProcess.inline
            trial_runner(plan.start_method, inline=inline).run(
                cfg,
                report,
                checkpoint_dir=checkpoint_dir,
                checkpoint_policy=plan.checkpoint,
                restore_from=restore_from,
                on_phase=lambda text: post_phase(cfg.trial_id, text),
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stored_checkpoint(plan: TrialPlan):
    """The checkpoint an earlier run of this sweep left for the trial (a --resume), or None.

    `plan.restore` is a path on the sweep's storage: --storage's (plan/storage.py), else the driver's
    node, on a cluster reached through orchestrator/run/relayfs.py."""
    if not plan.restore:
        return None
    from ray import tune

    from orchestrator.run.relayfs import storage_filesystem

    if plan.storage is not None:
        fs, path = checkpoint_location(plan.storage, plan.restore)
        return tune.Checkpoint(path=path, filesystem=fs)
    return tune.Checkpoint(path=plan.restore, filesystem=storage_filesystem(plan.store))


def start_phases(started_at: float | None, info: dict) -> dict:
    """A trial's start split into phases (seconds), from the stamps its first report carries: Tune's
    trial start (`started_at`, the driver's clock), tune_trial's `entered_at`, the child's `start_times`
    (spawn, main, imports; trainables/launch/isolated.py) and run_trial's `first_step_at`. A phase whose
    stamps are missing (an inline trial has no child) is None; on a cluster the first phase spans
    two clocks."""
    times = info.get("start_times") or {}
    first = info.get("first_step_at")

    def span(a, b):
        return None if a is None or b is None else b - a

    return {
        "start_s": span(started_at, first),
        "start_schedule_s": span(started_at, info.get("entered_at")),
        "start_process_s": span(times.get("spawn"), times.get("main")),
        "start_imports_s": span(times.get("main"), times.get("imports")),
        "start_model_s": span(times.get("imports") or info.get("entered_at"), first),
    }


def _plain(value):
    """An axis value as a results column holds it: an enum as its value."""
    return value.value if isinstance(value, Enum) else value


def _last_error_line(trial) -> str:
    """The final 'Type: message' line of the trial's latest error, or a placeholder.

    Tune writes the error to the trial's driver-side staging dir (`trial.error_file`) before it calls
    the callbacks, and copies it to storage, where `get_error()` looks, only later: read the staging
    file first, or every failure would be recorded as having no message."""
    text = ""
    if trial.error_file:
        with contextlib.suppress(OSError):
            text = Path(trial.error_file).read_text(errors="replace")
    text = text or trial.get_error() or ""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[-1][:1000] if lines else "trial failed without an error message"


@dataclass
class Attempt:
    """One attempt of one Tune trial, as the driver holds it (Ray Tune's loggers keep one record per
    trial the same way): a retry of the trial is a new Attempt with the next number."""

    plan: TrialPlan  # the trial's plan, from its Tune config
    number: int  # the benchctl trial's attempt number (a --resume continues the earlier run's)
    started: datetime | None  # Tune started it (on_trial_start), driver clock
    info: dict = field(default_factory=dict)  # the trial's strings, from its first report
    rows: list[dict] = field(default_factory=list)  # its epochs so far
    checkpoint: tuple[str, int] | None = None  # its latest persisted checkpoint: (path, epoch it follows)
    host_since: datetime | None = None  # when it ran on info["host"]: its start, once its host is known
    ended: datetime | None = None
    status: str = "partial"  # as its trials row last said: partial, then ok or error
    error: str | None = None

    @property
    def trial_id(self) -> str:
        return self.plan.trial.trial_id


class ResultsWriter(Callback):
    """Writes each trial attempt's epochs file and trials row on the driver, as the epochs arrive.

    After every epoch both files of the attempt are rewritten atomically, with status "partial" until
    the attempt ends ("ok" or "error"), so a killed driver loses at most the epoch in flight. The row
    names the attempt's latest persisted checkpoint (relative to the results directory when it lies
    inside it), which a `--resume` continues from. What the driver holds of an attempt is one Attempt."""

    def __init__(
        self,
        results_dir: Path,
        provenance: dict,
        prior_attempts: dict[str, int] | None = None,
        nodes: list[dict] | None = None,
    ):
        self.results_dir = results_dir
        self.nodes = {n["node_id"]: n for n in nodes or [] if n.get("node_id")}  # to name each row's class
        self.provenance = provenance
        # attempts per benchctl trial id; a --resume continues the numbering of the earlier run
        self._numbers: Counter[str] = Counter(prior_attempts or {})
        self._running: dict[str, Attempt] = {}  # Tune trial id -> its attempt under way
        self._started: dict[str, datetime] = {}  # Tune trial id -> when Tune last started it
        # Tune trial id -> its latest attempt whose host is known, kept after it ends: `overlapped`
        self._hosted: dict[str, Attempt] = {}
        self._plans: dict[str, TrialPlan] = {}  # Tune trial id -> its plan (the same for every attempt)
        self.written: list[Path] = []
        self.finished: set[str] = set()  # benchctl trial ids with a successful attempt in this run
        self.disk_full: DiskFull | None = None  # the write that found no space: the sweep stops there

    def on_trial_start(self, iteration, trials, trial, **info):
        self._started[trial.trial_id] = datetime.now(timezone.utc)
        self._running.pop(trial.trial_id, None)  # a retry of the same Tune trial is a new attempt

    def _plan(self, trial) -> TrialPlan:
        """The trial's plan, read from its Tune config once (the config never changes between attempts)."""
        tid = trial.trial_id
        if tid not in self._plans:
            self._plans[tid] = TrialPlan.from_tune(trial.config)
        return self._plans[tid]

    def _attempt(self, trial) -> Attempt:
        """The trial's attempt under way, numbered when first seen."""
        tid = trial.trial_id
        if tid not in self._running:
            plan = self._plan(trial)
            self._numbers[plan.trial.trial_id] += 1
            number = self._numbers[plan.trial.trial_id]
            self._running[tid] = Attempt(plan, number, self._started.get(tid))
        return self._running[tid]

    def on_trial_result(self, iteration, trials, trial, result, **info):
        attempt = self._attempt(trial)
        if INFO_KEY in result:
            attempt.info = json.loads(result[INFO_KEY])
            attempt.host_since = attempt.started or datetime.now(timezone.utc)
            self._hosted[trial.trial_id] = attempt
            self._tell_ended_neighbours(trial.trial_id, attempt)
        attempt.rows.append({k: result[k] for k in EPOCH_METRICS if k in result})
        self._write(trial, status="partial", error=None)

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        attempt = self._attempt(trial)
        if attempt.plan.store:  # the relay: a failed upload can only be learnt from the store (relayfs.py)
            from orchestrator.run.relayfs import upload_failures

            for path, number, message in upload_failures(attempt.plan.store):  # any trial's: the path says
                if is_disk_full(f"[Errno {number}] {message}"):
                    self._stop(DiskFull(path, "a checkpoint sent through the relay"))
        path = Path(checkpoint.path)
        with contextlib.suppress(ValueError):  # inside the results directory: stored relative to it
            path = path.relative_to(self.results_dir.resolve())
        where = uri_of(checkpoint.filesystem, str(path))  # s3://bucket/... on remote --storage
        attempt.checkpoint = (where, attempt.rows[-1]["epoch"] if attempt.rows else 0)
        self._write(trial, status="partial", error=None, epochs=False)

    def _tell_ended_neighbours(self, tid: str, attempt: Attempt) -> None:
        """An attempt's host is known only from its first report: an attempt on that host that ended
        after this one started, but before that report, overlapped it too. Rewrite its trials row."""
        for key, other in self._hosted.items():
            if (
                key != tid
                and other.ended is not None
                and other.info.get("host") == attempt.info.get("host")
                and other.ended > attempt.host_since
            ):
                self._write_attempt(key, other, other.status, other.error, other.ended, epochs=False)

    def overlapped(self, tid: str, end: datetime) -> str | None:
        """Other trials that ran on the same host at some moment of this attempt (driver clock)."""
        this = self._hosted.get(tid)
        if this is None:
            return None
        host, start = this.info.get("host"), this.host_since
        others = sorted(
            {
                other.trial_id
                for key, other in self._hosted.items()
                if key != tid
                and other.info.get("host") == host
                and other.host_since < end
                and (other.ended is None or other.ended > start)
            }
        )
        return ",".join(others) or None

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._end(trial, status="ok", error=None)
        self.finished.add(self._plan(trial).trial.trial_id)

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._end(trial, status="error", error=_last_error_line(trial))  # a retry follows

    def on_trial_error(self, iteration, trials, trial, **info):
        self._end(trial, status="error", error=_last_error_line(trial))

    def _end(self, trial, status: str, error: str | None) -> None:
        ended = datetime.now(timezone.utc)
        attempt = self._attempt(trial)
        self._write(trial, status, error, ended=ended)
        self._running.pop(trial.trial_id)
        # the trial's latest attempt on a known host ends now: this one, or, for a retry that never
        # reported its host, the earlier one, the trial counted as still there (as the rows always had)
        if trial.trial_id in self._hosted:
            self._hosted[trial.trial_id].ended = ended
        if error is not None and is_disk_full(error):  # its node's disk (a checkpoint, its data): stop
            where = f" on {attempt.info['host']}" if attempt.info.get("host") else ""
            what = f"trial {attempt.trial_id}'s files{where}"
            self._stop(DiskFull(full_path(error, self.results_dir), what))

    def _stop(self, full: DiskFull) -> None:
        """End the sweep at a full disk: retries and further trials would only fill it again."""
        self.disk_full = full
        raise full

    def _rows(self, kind: str, key: str, rows: list[dict], trial_id: str) -> Path:
        try:
            return write_rows(self.results_dir, kind, key, rows)
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            self._stop(DiskFull(self.results_dir / kind, f"the {kind} rows of trial {trial_id}"))

    def _write(
        self, trial, status: str, error: str | None, ended: datetime | None = None, epochs: bool = True
    ) -> None:
        self._write_attempt(trial.trial_id, self._attempt(trial), status, error, ended, epochs)

    def _write_attempt(
        self,
        tid: str,
        attempt: Attempt,
        status: str,
        error: str | None,
        ended: datetime | None,
        epochs: bool = True,
    ) -> None:
        if self.disk_full is not None:  # stopping: nothing more is written
            return
        attempt.status, attempt.error = status, error
        plan, info, rows = attempt.plan, attempt.info, attempt.rows
        cfg = plan.trial
        identity = {
            "sweep": plan.sweep,
            "cell": cfg.cell,
            "trial": cfg.trial_id,
            "attempt": attempt.number,
            **{a.trial_field: _plain(getattr(cfg, a.trial_field)) for a in AXES},  # the cell's axes
            "dataset": cfg.dataset,
            "repeat": cfg.repeat,
            "seed": cfg.run_seed,
            "cpus_allotted": cfg.cpus,
            **{k: info.get(k) for k in ("params", "device_name", "host", "torch_threads", "data_workers")},
            "hw_class": cfg.hw_class
            or row_class(cfg.device.value, info, self.nodes.get(info.get("node_id"))),
        }
        key = file_key(cfg.trial_id, attempt.number)
        # epochs first: a trials row never names epochs that are not on disk yet
        if epochs and rows:
            path = self._rows("epochs", key, [{**identity, **r} for r in rows], cfg.trial_id)
            if status != "partial":
                self.written.append(path)
        checkpoint, checkpoint_epoch = attempt.checkpoint or (None, None)
        trial_row = {
            **info,
            **identity,  # the driver's view of the trial wins over same-named info keys
            "status": status,
            "error": error,
            "epochs_planned": cfg.epochs,
            "epochs_done": len(rows),
            "started_at": attempt.started,
            "ended_at": ended,
            "placement": plan.placement.value,
            "trial_process": plan.trial_process.value,
            "start_method": info.get("start_method"),
            **start_phases(attempt.started.timestamp() if attempt.started else None, info),
            "cpu_share": plan.resources["CPU"],
            "overlapped_with": self.overlapped(tid, ended or datetime.now(timezone.utc)),
            "checkpoint": checkpoint,
            "checkpoint_epoch": checkpoint_epoch,
            "git_commit": self.provenance.get("git_commit"),
            "tune_trial_id": tid,
            "config_json": json.dumps(cfg.to_dict(), sort_keys=True),
        }
        path = self._rows("trials", key, [trial_row], cfg.trial_id)
        if status != "partial" and path not in self.written:  # an ended row may be rewritten
            self.written.append(path)
