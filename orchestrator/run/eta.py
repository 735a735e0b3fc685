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
    # running, mid-epoch: (seconds its training pass takes at the pace of its notes so far, seconds of
    # that pass left now); trainables/train.py sends the notes
    in_epoch: tuple[float, float] | None = None


def remaining_s(trials: Sequence[Pace]) -> list[float | None]:
    """Seconds each trial still needs (0 for a finished one), None where nothing can judge it yet.

    A trial in training needs its remaining epochs x its own mean steady interval (its start-up
    interval while it has no other), less the time since its last epoch. One still in its first epoch
    that has sent notes from within it needs the rest of that pass plus the later epochs at that pace
    (eval and checkpoints not counted: they come with the epoch intervals). Any other needs a start-up
    plus the rest at the pace of its most alike group, where a running trial's notes count as a pace
    when the group has no epoch timed yet."""
    seen: dict[str, tuple[list[float], list[float], list[float]]] = defaultdict(lambda: ([], [], []))
    for t in trials:
        for g in t.groups:
            seen[g][0].extend(t.startups)
            seen[g][1].extend(t.steady)
            if t.in_epoch is not None:
                seen[g][2].append(t.in_epoch[0])

    paces: dict[tuple[str, ...], tuple[float, float] | None] = {}

    def group_pace(t: Pace) -> tuple[float, float] | None:  # once per groups: O(trials), not O(trials^2)
        if t.groups not in paces:
            paces[t.groups] = _pace_of(t.groups)
        return paces[t.groups]

    def _pace_of(groups: tuple[str, ...]) -> tuple[float, float] | None:
        for g in groups:
            startups, steady, passes = seen.get(g, ((), (), ()))
            if startups or steady:
                first = fmean(startups) if startups else fmean(steady)
                return first, fmean(steady) if steady else first
        for g in groups:
            if passes := seen.get(g, ((), (), ()))[2]:
                return fmean(passes), fmean(passes)
        return None

    out: list[float | None] = []
    for t in trials:
        if t.state is State.finished or t.done >= t.epochs:
            out.append(0.0)
        elif t.state is State.training and (t.steady or t.startups):
            pace = fmean(t.steady) if t.steady else (group_pace(t) or (0.0, fmean(t.startups)))[1]
            out.append(max(0.0, (t.epochs - t.done) * pace - t.since_last))
        elif t.state is not State.pending and t.in_epoch is not None:
            per_pass, left_now = t.in_epoch
            out.append(left_now + (t.epochs - t.done - 1) * per_pass)
        elif (known := group_pace(t)) is None:
            out.append(None)
        else:
            first, steady = known
            left = first + (t.epochs - t.done - 1) * steady
            out.append(left if t.state is State.pending else max(0.0, left - t.since_last))
    return out


def eta_s(trials: Sequence[Pace]) -> float | None:
    """Seconds until the sweep ends, or None when some unfinished trial has nothing to be judged by.

    Each trial's need is remaining_s's. Within a pool, trials run side by side: the pool needs its total
    remaining work divided by the trials it runs now, but no less than its slowest running trial."""
    work: dict[str, float] = defaultdict(float)
    longest: dict[str, float] = defaultdict(float)
    running: dict[str, int] = defaultdict(int)
    for t, left in zip(trials, remaining_s(trials), strict=True):
        if t.state is State.finished or t.done >= t.epochs:
            continue
        if left is None:
            return None
        if t.state is not State.pending:
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
