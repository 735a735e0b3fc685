"""What runs inside Ray Tune: the trial wrapper and the driver-side callbacks.

`tune_trial` is the Tune function trainable: it rebuilds the TrialConfig from the Tune config and
calls the plain `trainables.train.run_trial`, reporting each epoch's numbers with `tune.report`.
The trial's strings (host, device name, versions) travel once, in the first report, as one JSON
attribute (`benchctl_info`); every other reported value is a flat number.

`ResultsWriter` runs on the driver and writes the Parquet files as results arrive, so no shared
filesystem is needed. `Progress` is the single progress line the user sees.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

from ray.tune import Callback

from orchestrator.hardware import row_class
from orchestrator.matrix import cpus_used, pins_cpus, trial_config, trial_resources
from orchestrator.results import EPOCH_METRICS, file_key, write_rows

INFO_KEY = "benchctl_info"


def tune_trial(config: dict) -> None:
    import contextlib

    import ray
    from ray import tune

    from trainables.affinity import CoreBook, format_cores
    from trainables.isolated import run_isolated

    sent_info = False
    placement = {
        "placement": config.get("placement"),
        "cpu_share": trial_resources(config)["CPU"],
        "node_id": ray.get_runtime_context().get_node_id(),
    }

    def report(info: dict, row: dict) -> None:
        nonlocal sent_info
        metrics = dict(row)
        if not sent_info:
            metrics[INFO_KEY] = json.dumps({**info, **placement})
            sent_info = True
        tune.report(metrics)

    # partitioned: pin to disjoint cores before torch starts its threads and the loader its workers
    pin = CoreBook().claim(cpus_used(config)) if pins_cpus(config) else contextlib.nullcontext()
    with pin as cores:
        placement["cpu_affinity"] = format_cores(cores) if cores else None
        # child (default): the loop runs in a fresh process that inherits the pinned cores and Ray's
        # CUDA_VISIBLE_DEVICES; this worker only relays its epochs (trainables/isolated.py says why)
        if config.get("trial_process") == "inline":
            from trainables.train import run_trial  # torch is imported into this process only inline

            run_trial(trial_config(config), on_epoch=report)
        else:
            run_isolated(trial_config(config), on_epoch=report)


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
    """Buffers each trial attempt's epochs and writes one epochs file + one trials row per attempt."""

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
        self._rows: dict[str, list[dict]] = defaultdict(list)
        self._info: dict[str, dict] = {}
        self._started: dict[str, datetime] = {}
        # every attempt seen: Tune trial id -> [benchctl trial id, host, start, end or None]
        self._spans: dict[str, list] = {}
        self.written: list[Path] = []

    def on_trial_start(self, iteration, trials, trial, **info):
        self._started[trial.trial_id] = datetime.now(timezone.utc)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if INFO_KEY in result:
            tid = trial.trial_id
            self._info[tid] = json.loads(result[INFO_KEY])
            start = self._started.get(tid, datetime.now(timezone.utc))
            self._spans[tid] = [trial_config(trial.config).trial_id, self._info[tid].get("host"), start, None]
        self._rows[trial.trial_id].append({k: result[k] for k in EPOCH_METRICS if k in result})

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
        self._write(trial, status="ok", error=None)

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._write(trial, status="error", error=_last_error_line(trial))  # a retry follows

    def on_trial_error(self, iteration, trials, trial, **info):
        self._write(trial, status="error", error=_last_error_line(trial))

    def _write(self, trial, status: str, error: str | None) -> None:
        tid = trial.trial_id
        cfg = trial_config(trial.config)
        self._attempts[cfg.trial_id] += 1
        attempt = self._attempts[cfg.trial_id]
        info = self._info.pop(tid, {})
        rows = self._rows.pop(tid, [])
        ended = datetime.now(timezone.utc)
        overlapped_with = self.overlapped(tid, ended)
        if tid in self._spans:
            self._spans[tid][3] = ended
        identity = {
            "sweep": trial.config["sweep"],
            "cell": cfg.cell,
            "trial": cfg.trial_id,
            "attempt": attempt,
            "model": cfg.model,
            "device": cfg.device.value,
            "batch_size": cfg.batch_size,
            "pipeline": cfg.pipeline.value,
            "precision": cfg.precision.value,
            "dataset": cfg.dataset,
            "repeat": cfg.repeat,
            "seed": cfg.seed + cfg.repeat,
            "cpus_allotted": cfg.cpus,
            **{k: info.get(k) for k in ("params", "device_name", "host", "torch_threads", "data_workers")},
            "hw_class": cfg.hw_class
            or row_class(cfg.device.value, info, self.nodes.get(info.get("node_id"))),
        }
        key = file_key(cfg.trial_id, attempt)
        if status == "ok":
            self.written.append(
                write_rows(self.results_dir, "epochs", key, [{**identity, **r} for r in rows])
            )
        trial_row = {
            **info,
            **identity,  # the driver's view of the trial wins over same-named info keys
            "status": status,
            "error": error,
            "epochs_planned": cfg.epochs,
            "epochs_done": len(rows),
            "started_at": self._started.get(tid),
            "ended_at": ended,
            "placement": trial.config.get("placement"),
            "trial_process": trial.config.get("trial_process", "inline"),
            "cpu_share": trial_resources(trial.config)["CPU"],
            "overlapped_with": overlapped_with,
            "git_commit": self.provenance.get("git_commit"),
            "tune_trial_id": tid,
            "config_json": json.dumps(cfg.to_dict(), sort_keys=True),
        }
        self.written.append(write_rows(self.results_dir, "trials", key, [trial_row]))


class Progress(Callback):
    """One line: cells done/total, running, failed (rewritten in place on a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = self.running = self.failed = self.retried = 0
        self._t0 = time.monotonic()

    # Tune pickles its callbacks with the experiment state, so no stream is kept on the object.
    @property
    def stream(self):
        return sys.stderr

    @property
    def _tty(self) -> bool:
        return self.stream.isatty()

    def line(self) -> str:
        retried = f" · {self.retried} retried" if self.retried else ""
        return (
            f"benchctl: {self.done}/{self.total} trials done · {self.running} running · "
            f"{self.failed} failed{retried} · {time.monotonic() - self._t0:.0f} s"
        )

    def _show(self) -> None:
        if self._tty:
            self.stream.write("\r\033[K" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def on_trial_start(self, iteration, trials, trial, **info):
        self.running += 1
        self._show()

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.running -= 1
        self.done += 1
        self._show()

    def on_trial_recover(self, iteration, trials, trial, **info):
        self.running -= 1
        self.retried += 1
        self._show()

    def on_trial_error(self, iteration, trials, trial, **info):
        self.running -= 1
        self.failed += 1
        self._show()

    def on_experiment_end(self, trials, **info):
        if self._tty:
            self.stream.write("\n")
            self.stream.flush()
