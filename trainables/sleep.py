"""`sleep:S`, a workload that trains nothing: each epoch sleeps S seconds and reports a row.

    benchctl sweep --models sleep:0.9 --epochs 3 --trial-process inline ...   # what bench/scale_lab.py runs

It exists to measure what benchctl's driver adds to Ray Tune (bench/scale_lab.py): the sweep takes
its usual path (plan, Tune, the results writer, Parquet, the progress display) and only the
training loop is replaced, by one that costs no CPU and imports no torch. Its rows say what they
are: model `sleep:S`, `epoch_s` the seconds slept, no images, no loss, no accuracy, 0 parameters.
It runs inline only (spec.py refuses a child process for it: a child's start is measured apart,
in reports/trial-start), and never checkpoints (there is no state to keep).

With $BENCHCTL_SLEEP_MARKS set to a file, each trial appends `<trial_id> <time.time()>` to it as it
ends: the bench reads when the last trial ended from there (the rows hold no worker timestamps).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable

from trainables.config import TrialConfig
from trainables.hostinfo import cpu_model

PREFIX = "sleep:"
MAX_S = 3600.0  # one epoch's sleep at most: a typo (sleep:90000) is refused, not waited out
MARKS_ENV = "BENCHCTL_SLEEP_MARKS"


def is_sleep(model: str) -> bool:
    return model.startswith(PREFIX)


def sleep_seconds(model: str) -> float:
    """S of a `sleep:S` model name; ValueError naming the rule otherwise."""
    text = model[len(PREFIX) :] if is_sleep(model) else ""
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_S:
        raise ValueError(
            f"model: {model!r} is not allowed; a sleep workload is sleep:SECONDS, 0-{MAX_S:g} (sleep:0.9)"
        )
    return seconds


def run_sleep_trial(
    cfg: TrialConfig, on_epoch: Callable[[dict, dict], None] | None = None, **_ignored
) -> list[dict]:
    """run_trial's contract (trainables/train.py) for a `sleep:S` model: `on_epoch(info, row)` after each
    epoch, the rows returned. Checkpoint and restore arguments are accepted and ignored."""
    seconds = sleep_seconds(cfg.model)
    info = {
        "host": socket.gethostname(),
        "device_name": f"sleep ({cfg.device.value})",
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpus_allotted": cfg.cpus,
        "params": 0,
        "torch_threads": 0,
        "data_workers": 0,
        "first_step_at": time.time(),
    }
    rows = []
    for epoch in range(1, cfg.epochs + 1):
        began = time.perf_counter()
        time.sleep(seconds)
        slept = time.perf_counter() - began
        row = {"epoch": epoch, "warmup": epoch == 1, "restored": False, "epoch_s": slept, "measured_s": slept,
               "data_s": 0.0, "compute_s": slept, "eval_s": 0.0, "steps": 0, "full_steps": 0,
               "extrapolated": False, "images": 0, "eval_images": 0, "eval_partial": False}  # fmt: skip
        rows.append(row)
        if on_epoch is not None:
            on_epoch(info, row)
    if marks := os.environ.get(MARKS_ENV):
        with open(marks, "a", encoding="utf-8") as f:  # one short O_APPEND write per trial: never interleaved
            f.write(f"{cfg.trial_id} {time.time():.6f}\n")
    return rows
