"""Process helpers for tests that start and kill real drivers and Ray nodes.

pids = pids_with_env("/tmp/bcray123")          # processes whose environment mentions it
sigkill_after_first_trial(proc, results_dir)    # SIGKILL a sweep once one trial has landed
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path


def pids_with_env(text: str) -> list[int]:
    """Processes whose environment holds `text` (Ray's agents rename themselves, so not cmdline)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text.encode() in (proc / "environ").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def sigkill_after_first_trial(proc: subprocess.Popen, results_dir: Path, timeout_s: float = 180) -> None:
    """Wait until the sweep in `proc` has written one trial row (the next trial is running), then
    SIGKILL it: no handler runs, as when a machine loses power or the OOM killer strikes."""
    try:
        deadline = time.monotonic() + timeout_s
        while not list((results_dir / "trials").glob("*.parquet")):
            assert proc.poll() is None, "the sweep ended before any trial finished"
            assert time.monotonic() < deadline, f"no trial finished within {timeout_s:.0f} s"
            time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
