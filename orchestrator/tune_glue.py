"""What runs inside Ray Tune: the trial wrapper and the driver-side callbacks.

`tune_trial` is the Tune function trainable: it rebuilds the TrialConfig from the Tune config and
calls the plain `trainables.train.run_trial`, reporting each epoch's numbers with `tune.report`.
The trial's strings (host, device name, versions) travel once, in the first report, as one JSON
attribute (`benchctl_info`); every other reported value is a flat number.

`ResultsWriter` runs on the driver and writes the Parquet files as results arrive, so no shared
filesystem is needed. `Progress` is the single progress line the user sees.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

from ray.tune import Callback

from orchestrator.matrix import trial_config
from orchestrator.results import EPOCH_METRICS, file_key, write_rows

INFO_KEY = "benchctl_info"


def tune_trial(config: dict) -> None:
    from ray import tune

    from trainables.train import run_trial

    sent_info = False

    def report(info: dict, row: dict) -> None:
        nonlocal sent_info
        metrics = dict(row)
        if not sent_info:
            metrics[INFO_KEY] = json.dumps(info)
            sent_info = True
        tune.report(metrics)

    run_trial(trial_config(config), on_epoch=report)


def _last_error_line(trial) -> str:
    """The final 'Type: message' line of the trial's latest error, or a placeholder."""
    text = trial.get_error() or ""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[-1][:1000] if lines else "trial failed without an error message"


class ResultsWriter(Callback):
    """Buffers each trial attempt's epochs and writes one epochs file + one trials row per attempt."""

    def __init__(self, results_dir: Path, provenance: dict) -> None:
        self.results_dir = results_dir
        self.provenance = provenance
        self._attempts: Counter[str] = Counter()
        self._rows: dict[str, list[dict]] = defaultdict(list)
        self._info: dict[str, dict] = {}
        self._started: dict[str, datetime] = {}
        self.written: list[Path] = []

    def on_trial_start(self, iteration, trials, trial, **info):
        self._started[trial.trial_id] = datetime.now(timezone.utc)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if INFO_KEY in result:
            self._info[trial.trial_id] = json.loads(result[INFO_KEY])
        self._rows[trial.trial_id].append({k: result[k] for k in EPOCH_METRICS if k in result})

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._write(trial, status="ok", error=None)

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._write(trial, status="error", error=_last_error_line(trial))  # a retry follows

    def on_trial_error(self, iteration, trials, trial, **info):
        self._write(trial, status="error", error=_last_error_line(trial))

    def _write(self, trial, status: str, error: str | None) -> None:
        tid = trial.trial_id
        self._attempts[tid] += 1
        attempt = self._attempts[tid]
        cfg = trial_config(trial.config)
        info = self._info.pop(tid, {})
        rows = self._rows.pop(tid, [])
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
            "ended_at": datetime.now(timezone.utc),
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
