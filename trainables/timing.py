"""All timing lives here: what is reported is timed, and nothing else.

    timeline = StepTimeline(device)
    timeline.start()                       # synchronizes the device, starts the wall clock
    for x, y in batches:                   # (the fetch + host->device copy happen in here)
        timeline.input_ready()
        ...forward, backward, optimizer step...
        timeline.step_done()
    t = timeline.stop()                    # synchronizes again: t.epoch_s, t.data_s, t.compute_s

How the split works. Marks are taken on the clock of the device that does the work: the host's
perf_counter for CPU trials, CUDA events on the trial's stream for GPU trials (no synchronization
inside the loop, so host and GPU overlap exactly as in an untimed loop). With marks
start = done_0, ready_1, done_1, ready_2, ... done_n:

    data_s    = sum_i (ready_i - done_{i-1})   time the device waited for its next batch, incl. the copy
    compute_s = sum_i (done_i  - ready_i)      forward + backward + optimizer step
    epoch_s   = wall time from the synchronized start to the synchronized stop

The intervals are disjoint, so data_s + compute_s <= epoch_s (up to clock resolution).
The first epoch carries warm-up (cudnn autotuning, allocator growth, worker start-up); the trial
marks it and statistics leave it out.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

import torch


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class EpochTiming:
    epoch_s: float  # wall seconds of the (possibly capped) training pass, measured
    data_s: float  # seconds the device waited for input, incl. host->device copy
    compute_s: float  # seconds of forward + backward + optimizer step
    steps: int  # optimizer steps timed


class StepTimeline:
    """Per-step marks on the device's clock; see the module docstring for the formulas."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._cuda = device.type == "cuda"
        self._marks: list = []
        self._t0 = 0.0

    def _mark(self):
        if self._cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def start(self) -> None:
        synchronize(self.device)
        self._t0 = time.perf_counter()
        self._marks = [self._mark()]

    def input_ready(self) -> None:
        self._marks.append(self._mark())

    def step_done(self) -> None:
        self._marks.append(self._mark())

    def _seconds(self, a, b) -> float:
        return a.elapsed_time(b) / 1000.0 if self._cuda else b - a

    def stop(self) -> EpochTiming:
        synchronize(self.device)
        epoch_s = time.perf_counter() - self._t0
        marks = self._marks
        if len(marks) % 2 == 0:
            raise RuntimeError("StepTimeline: input_ready() without a matching step_done()")
        data_s = sum(self._seconds(marks[i - 1], marks[i]) for i in range(1, len(marks), 2))
        compute_s = sum(self._seconds(marks[i], marks[i + 1]) for i in range(1, len(marks), 2))
        return EpochTiming(epoch_s=epoch_s, data_s=data_s, compute_s=compute_s, steps=len(marks) // 2)


@contextmanager
def timed(device: torch.device):
    """Wall time of a block, the device synchronized at both ends: `with timed(d) as t: ...; t()`."""
    synchronize(device)
    t0 = time.perf_counter()
    elapsed: list[float] = []
    yield lambda: elapsed[0]
    synchronize(device)
    elapsed.append(time.perf_counter() - t0)


def extrapolate(measured_s: float, steps: int, full_steps: int) -> float:
    """Epoch time for the full epoch from a capped one: `epoch_s = measured_s * full_steps / steps`.

    Assumes steady per-step cost, which holds for fixed-shape batches; the row is marked
    `extrapolated=True` whenever steps < full_steps.
    """
    if steps <= 0:
        raise ValueError(f"steps must be > 0, got {steps}")
    return measured_s * full_steps / steps
