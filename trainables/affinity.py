"""Disjoint CPU cores for trials that share a host (`--placement partitioned`).

    with CoreBook().claim(4) as cores:    # pins this process to 4 cores no other claimant holds
        run_trial(cfg)                    # torch threads and DataLoader workers inherit the mask

Ray counts CPUs but never says which cores a task may use, so two trials on one host would still
compete for the same cores. The book is one small JSON file per host under /dev/shm (memory, never
a shared filesystem), changed only under an exclusive `flock`; each claim records its PID, and
claims of processes that have exited are dropped, so a killed trial never leaks its cores.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

BOOK = Path("/dev/shm/benchctl-cores.json")  # per host: /dev/shm is local memory on every Linux box


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def format_cores(cores: list[int]) -> str:
    """`[0, 1, 2, 5]` -> `"0-2,5"` (the notation of taskset and /proc/*/status)."""
    out, run = [], []
    for c in sorted(cores):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def parse_cores(text: str) -> set[int]:
    """`"0-2,5"` -> `{0, 1, 2, 5}` (the inverse of format_cores)."""
    cores: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cores.update(range(int(low), int(high or low) + 1))
    return cores


class CoreBook:
    """Claims of cores on this host, keyed by PID."""

    def __init__(self, path: Path = BOOK) -> None:
        self.path = path

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, list[int]]]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        with os.fdopen(fd, "r+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                text = f.read()
                try:
                    claims = {k: list(v) for k, v in json.loads(text).items()} if text.strip() else {}
                except (ValueError, AttributeError):
                    claims = {}  # a damaged book is rebuilt: claims are only advisory
                claims = {pid: cores for pid, cores in claims.items() if _alive(int(pid))}
                yield claims
                f.seek(0)
                f.truncate()
                f.write(json.dumps(claims))
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def take(self, n: int, pid: int | None = None) -> list[int]:
        """Record and return the `n` lowest cores of this process's mask that nobody else holds;
        fewer (possibly none) if fewer are free."""
        pid = pid or os.getpid()
        allowed = sorted(os.sched_getaffinity(0))
        with self._locked() as claims:
            held = {c for p, cores in claims.items() if int(p) != pid for c in cores}
            mine = [c for c in allowed if c not in held][:n]
            claims[str(pid)] = mine
        return mine

    def give_back(self, pid: int | None = None) -> None:
        with self._locked() as claims:
            claims.pop(str(pid or os.getpid()), None)

    @contextlib.contextmanager
    def claim(self, n: int) -> Iterator[list[int] | None]:
        """Pin this process to `n` free cores for the block; yields them, or None (not pinned) when
        fewer than `n` are free, so the trial runs unpinned rather than squeezed onto fewer cores."""
        before = os.sched_getaffinity(0)
        cores = self.take(n)
        if len(cores) < n:
            self.give_back()
            yield None
            return
        os.sched_setaffinity(0, cores)
        try:
            yield cores
        finally:
            os.sched_setaffinity(0, before)
            self.give_back()
