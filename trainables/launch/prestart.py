"""Prestarted trial processes: a fresh interpreter per trial, started before the trial asks for it.

    child = take(launch, env)       # a spare `python -m trainables.launch.isolated`, or one started now
    ...                             # the trial runs in it (trainables/launch/isolated.py)
    done(launch, env)               # the trial's process has ended

Why: a fresh child spends its trial's start importing torch, torchvision and the trainables (2.4 s
on the 2-core dev host, 6.6-8.7 s on the GPU host); a fork of a server that imported them once
starts in ~0.5 s, but its steady epochs differ from a fresh child's by 3-12%
(reports/trial-start/README.md). A prestarted child is a fresh process: its own interpreter, its
own imports, its own heap, and no trial ran in it before. It differs from a fresh child only in
when it started, so the trial's environment, CPU affinity and niceness, which a fresh child
inherits, are sent with its plan and taken on after its imports, by each of its threads.

Each supervisor process (a Ray worker; Tune reuses it for the next trial) keeps one spare. `take`
hands it over, or starts one at once if there is none, it died, or it was started with another
environment (the imports read it: PYTHONPATH, OMP_NUM_THREADS, ...). Then the next spare starts:

- where this process may undo SCHED_IDLE (CAP_SYS_NICE), at once, under SCHED_IDLE: it imports
  only on CPU time that no other thread wants, so the trial starting now keeps its cores, and it is
  ready when the next trial comes; the trial that takes it returns to SCHED_OTHER first.
- elsewhere, once the trial's process has ended (`done`): an unprivileged thread cannot leave
  SCHED_IDLE, so no spare imports beside a running trial; it hides what of the imports fits into
  the gap before the next trial.

Spares are started from one long-lived thread: PR_SET_PDEATHSIG (trainables/launch/isolated.py) fires
when the thread that started the child ends, and a Tune trial's thread ends with its trial.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

_CAP_SYS_NICE = 23  # linux/capability.h


@dataclass
class Child:
    """A started child process and the read end of its result pipe."""

    proc: subprocess.Popen
    read_fd: int
    env: dict  # what it was started with (its result fd left out)
    idle: bool  # started under SCHED_IDLE: the plan must return it to SCHED_OTHER

    def discard(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdin:
            self.proc.stdin.close()
        with contextlib.suppress(OSError):
            os.close(self.read_fd)


Launch = Callable[[dict, bool], Child]  # (environment, idle) -> a started child


@functools.cache
def can_undo_idle() -> bool:
    """Whether this process holds CAP_SYS_NICE, which a thread needs to leave SCHED_IDLE."""
    try:
        with open("/proc/self/status") as f:
            caps = next(line for line in f if line.startswith("CapEff:"))
    except (OSError, StopIteration):
        return False
    return bool(int(caps.split()[1], 16) >> _CAP_SYS_NICE & 1)


_lock = threading.Lock()
_spare: Future | None = None  # the next trial's child, being started or started
_spawner: ThreadPoolExecutor | None = None


def _start_soon(launch: Launch, env: dict, idle: bool) -> Future:
    global _spawner
    if _spawner is None:
        _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchctl-prestart")
    return _spawner.submit(launch, dict(env), idle)


def take(launch: Launch, env: dict) -> Child:
    """The child for the trial starting now (the spare, if it can serve); the next spare is started
    at once where it can wait under SCHED_IDLE."""
    global _spare
    with _lock:
        pending, _spare = _spare, None
        spare = pending.result() if pending is not None else None
        if spare is not None and (spare.proc.poll() is not None or spare.env != env):
            spare.discard()  # gone, or imported under another environment than this trial's
            spare = None
        child = spare or _start_soon(launch, env, False).result()
        if can_undo_idle():
            _spare = _start_soon(launch, env, True)
    return child


def done(launch: Launch, env: dict) -> None:
    """The trial's process has ended: start the next spare now unless one is waiting already."""
    global _spare
    with _lock:
        if _spare is None:
            _spare = _start_soon(launch, env, False)


def drop() -> None:
    """End the waiting spare, if any (tests; a worker's spare otherwise ends with it: PDEATHSIG)."""
    global _spare
    with _lock:
        pending, _spare = _spare, None
    if pending is not None:
        pending.result().discard()
