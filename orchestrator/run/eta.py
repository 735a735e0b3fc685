"""The sweep's ETA: a pure function of the epoch intervals seen so far (run/progress.py shows it).

    eta_s([Pace("cpu", ("simple_cnn/cpu/bs128/loader/fp32", "simple_cnn/cpu"), epochs=10, done=3,
                state=State.training, startups=(40.0,), steady=(12.0, 11.0))])   # -> 80.5

Nothing is invented: a trial with no alike trial timed yet makes the ETA unknown (None).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from statistics import fmean


class State(str, Enum):
    pending = "pending"  # not started yet, or waiting for its retry
    starting = "starting"  # running, no epoch yet in this attempt (data, model, warm-up)
    training = "training"  # running, at least one epoch reported in this attempt
    finished = "finished"  # completed or failed for good


@dataclass(frozen=True)
class Pace:
    """One trial as the ETA sees it."""

    pool: str  # trials of one pool (device or hardware class) take turns on its slots
    groups: tuple[str, ...]  # trials alike in speed, most alike first (cell, then model/device)
    epochs: int
    done: int = 0  # epochs finished (a retry from a checkpoint starts with some done)
    state: State = State.pending
    startups: tuple[float, ...] = ()  # seconds from an attempt's start to its first epoch
    steady: tuple[float, ...] = ()  # seconds between later epochs
    since_last: float = 0.0  # running: seconds since its last epoch (or its start)


def eta_s(trials: Sequence[Pace]) -> float | None:
    """Seconds until the sweep ends, or None when some unfinished trial has nothing to be judged by.

    A trial in training needs its remaining epochs x its own mean steady interval (its start-up
    interval while it has no other); one not yet training needs a start-up plus the rest at the pace
    of its most alike group. Within a pool, trials run side by side: the pool needs its total
    remaining work divided by the trials it runs now, but no less than its slowest running trial."""
    seen: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for t in trials:
        for g in t.groups:
            seen[g][0].extend(t.startups)
            seen[g][1].extend(t.steady)

    def group_pace(t: Pace) -> tuple[float, float] | None:
        for g in t.groups:
            startups, steady = seen.get(g, ((), ()))
            if startups or steady:
                first = fmean(startups) if startups else fmean(steady)
                return first, fmean(steady) if steady else first
        return None

    work: dict[str, float] = defaultdict(float)
    longest: dict[str, float] = defaultdict(float)
    running: dict[str, int] = defaultdict(int)
    for t in trials:
        if t.state is State.finished or t.done >= t.epochs:
            continue
        if t.state is State.training and (t.steady or t.startups):
            pace = fmean(t.steady) if t.steady else (group_pace(t) or (0.0, fmean(t.startups)))[1]
            left = (t.epochs - t.done) * pace
        else:
            known = group_pace(t)
            if known is None:
                return None
            first, steady = known
            left = first + (t.epochs - t.done - 1) * steady
        if t.state is not State.pending:
            left = max(0.0, left - t.since_last)
            running[t.pool] += 1
            longest[t.pool] = max(longest[t.pool], left)
        work[t.pool] += left
    return max((max(longest[p], w / max(1, running[p])) for p, w in work.items()), default=0.0)


def format_eta(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
