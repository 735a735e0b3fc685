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
from collections import Counter, defaultdict
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from ray.tune import Callback

from orchestrator.lab.hardware import row_class
from orchestrator.plan.axes import AXES
from orchestrator.plan.spec import TrialProcess
from orchestrator.plan.trial_plan import TrialPlan
from orchestrator.results.files import file_key, write_rows
from orchestrator.results.rows import EPOCH_METRICS

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
                restore_from=restore_from,
                on_phase=lambda text: post_phase(cfg.trial_id, text),
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stored_checkpoint(plan: TrialPlan):
    """The checkpoint an earlier run of this sweep left for the trial (a --resume), or None.

    `plan.restore` is a path on the sweep's storage; on a cluster the storage is the driver's node,
    reached through orchestrator/run/relayfs.py."""
    if not plan.restore:
        return None
    from ray import tune

    from orchestrator.run.relayfs import storage_filesystem

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


class ResultsWriter(Callback):
    """Writes each trial attempt's epochs file and trials row on the driver, as the epochs arrive.

    After every epoch both files of the attempt are rewritten atomically, with status "partial" until
    the attempt ends ("ok" or "error"), so a killed driver loses at most the epoch in flight. The row
    names the attempt's latest persisted checkpoint (relative to the results directory when it lies
    inside it), which a `--resume` continues from."""

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
        self._attempts: Counter[str] = Counter(prior_attempts or {})
        self._attempt: dict[str, int] = {}  # Tune trial id -> the attempt it is running now
        self._rows: dict[str, list[dict]] = defaultdict(list)
        self._info: dict[str, dict] = {}
        self._checkpoint: dict[str, tuple[str, int]] = {}  # Tune trial id -> (path, epoch)
        self._started: dict[str, datetime] = {}
        # every attempt seen: Tune trial id -> [benchctl trial id, host, start, end or None]
        self._spans: dict[str, list] = {}
        self._plans: dict[str, TrialPlan] = {}  # Tune trial id -> its plan
        self.written: list[Path] = []

    def on_trial_start(self, iteration, trials, trial, **info):
        tid = trial.trial_id
        self._started[tid] = datetime.now(timezone.utc)
        self._forget(tid)  # a retry of the same Tune trial is a new attempt

    def _forget(self, tid: str) -> None:
        """Drop what the driver holds of the Tune trial's current attempt."""
        for held in (self._attempt, self._rows, self._info, self._checkpoint):
            held.pop(tid, None)

    def _plan(self, trial) -> TrialPlan:
        """The trial's plan, read from its Tune config once (the config never changes between attempts)."""
        tid = trial.trial_id
        if tid not in self._plans:
            self._plans[tid] = TrialPlan.from_tune(trial.config)
        return self._plans[tid]

    def _attempt_of(self, trial) -> int:
        tid = trial.trial_id
        if tid not in self._attempt:
            name = self._plan(trial).trial.trial_id
            self._attempts[name] += 1
            self._attempt[tid] = self._attempts[name]
        return self._attempt[tid]

    def on_trial_result(self, iteration, trials, trial, result, **info):
        tid = trial.trial_id
        if INFO_KEY in result:
            self._info[tid] = json.loads(result[INFO_KEY])
            start = self._started.get(tid, datetime.now(timezone.utc))
            self._spans[tid] = [self._plan(trial).trial.trial_id, self._info[tid].get("host"), start, None]
        self._rows[tid].append({k: result[k] for k in EPOCH_METRICS if k in result})
        self._write(trial, status="partial", error=None)

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        tid = trial.trial_id
        path = Path(checkpoint.path)
        with contextlib.suppress(ValueError):  # inside the results directory: stored relative to it
            path = path.relative_to(self.results_dir.resolve())
        self._checkpoint[tid] = (str(path), self._rows[tid][-1]["epoch"] if self._rows[tid] else 0)
        self._write(trial, status="partial", error=None, epochs=False)

    def overlapped(self, tid: str, end: datetime) -> str | None:
        """Other trials that ran on the same host at some moment of this attempt (driver clock)."""
        span = self._spans.get(tid)
        if span is None:
            return None
        _, host, start, _ = span
        others = sorted(
            {
                other[0]
                for key, other in self._spans.items()
                if key != tid
                and other[1] == host
                and other[2] < end
                and (other[3] is None or other[3] > start)
            }
        )
        return ",".join(others) or None

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._end(trial, status="ok", error=None)

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._end(trial, status="error", error=_last_error_line(trial))  # a retry follows

    def on_trial_error(self, iteration, trials, trial, **info):
        self._end(trial, status="error", error=_last_error_line(trial))

    def _end(self, trial, status: str, error: str | None) -> None:
        tid = trial.trial_id
        ended = datetime.now(timezone.utc)
        self._write(trial, status, error, ended=ended)
        if tid in self._spans:
            self._spans[tid][3] = ended
        self._forget(tid)

    def _write(
        self, trial, status: str, error: str | None, ended: datetime | None = None, epochs: bool = True
    ) -> None:
        tid = trial.trial_id
        plan = self._plan(trial)
        cfg = plan.trial
        attempt = self._attempt_of(trial)
        info = self._info.get(tid, {})
        rows = self._rows.get(tid, [])
        identity = {
            "sweep": plan.sweep,
            "cell": cfg.cell,
            "trial": cfg.trial_id,
            "attempt": attempt,
            **{a.trial_field: _plain(getattr(cfg, a.trial_field)) for a in AXES},  # the cell's axes
            "dataset": cfg.dataset,
            "repeat": cfg.repeat,
            "seed": cfg.run_seed,
            "cpus_allotted": cfg.cpus,
            **{k: info.get(k) for k in ("params", "device_name", "host", "torch_threads", "data_workers")},
            "hw_class": cfg.hw_class
            or row_class(cfg.device.value, info, self.nodes.get(info.get("node_id"))),
        }
        key = file_key(cfg.trial_id, attempt)
        # epochs first: a trials row never names epochs that are not on disk yet
        if epochs and rows:
            path = write_rows(self.results_dir, "epochs", key, [{**identity, **r} for r in rows])
            if status != "partial":
                self.written.append(path)
        checkpoint, checkpoint_epoch = self._checkpoint.get(tid, (None, None))
        trial_row = {
            **info,
            **identity,  # the driver's view of the trial wins over same-named info keys
            "status": status,
            "error": error,
            "epochs_planned": cfg.epochs,
            "epochs_done": len(rows),
            "started_at": self._started.get(tid),
            "ended_at": ended,
            "placement": plan.placement.value,
            "trial_process": plan.trial_process.value,
            "start_method": info.get("start_method"),
            **start_phases(self._started[tid].timestamp() if tid in self._started else None, info),
            "cpu_share": plan.resources["CPU"],
            "overlapped_with": self.overlapped(tid, ended or datetime.now(timezone.utc)),
            "checkpoint": checkpoint,
            "checkpoint_epoch": checkpoint_epoch,
            "git_commit": self.provenance.get("git_commit"),
            "tune_trial_id": tid,
            "config_json": json.dumps(cfg.to_dict(), sort_keys=True),
        }
        path = write_rows(self.results_dir, "trials", key, [trial_row])
        if status != "partial":
            self.written.append(path)
