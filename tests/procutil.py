"""Process helpers for tests that start and kill real drivers and Ray nodes.

pids = pids_with_env("/tmp/bcray123")          # processes whose environment mentions it
sigkill_after_first_trial(proc, results_dir)    # SIGKILL a sweep once one trial has landed
children_of(pid), gone(pid)                     # from /proc: its children; ended (or a zombie)
with small_disk(path, "24M"): ...               # a tmpfs of that size there (root; else the test skips)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


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


def trial_rows(results_dir: Path) -> list[dict]:
    """The trials rows a running sweep has written so far. Each file is replaced atomically, so it is
    opened once (pq.ParquetFile): pq.read_table(path) opens the path again after reading its footer,
    and a replacement between the two opens pairs the old footer with the new pages."""
    import pyarrow.parquet as pq

    return [
        row
        for f in sorted((results_dir / "trials").glob("*.parquet"))
        for row in pq.ParquetFile(f).read().to_pylist()
    ]


def sigkill_when(proc: subprocess.Popen, results_dir: Path, ready, what: str, timeout_s: float = 180) -> list:
    """Wait until `ready(trial rows)` is true of the sweep in `proc`, then SIGKILL it: no handler runs, as
    when a machine loses power or the OOM killer strikes. Returns the rows that made it true."""
    try:
        deadline = time.monotonic() + timeout_s
        while not ready(rows := trial_rows(results_dir)):
            assert proc.poll() is None, f"the sweep ended before {what}"
            assert time.monotonic() < deadline, f"not {what} within {timeout_s:.0f} s"
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        return rows
    finally:
        proc.kill()


def sigkill_after_first_trial(proc: subprocess.Popen, results_dir: Path, timeout_s: float = 180) -> None:
    """SIGKILL the sweep in `proc` once one trial has finished (the next one is running)."""
    sigkill_when(proc, results_dir, lambda rows: any(r["status"] == "ok" for r in rows), "a trial finished",
                 timeout_s)  # fmt: skip


def screenshot(page: Path, workdir: Path, width: int = 800, height: int = 1200):
    """Render a local HTML file in headless Chromium (Debian's package) and return its RGB pixels."""
    import matplotlib.image as mpimg

    shot = workdir / "shot.png"
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"]
    args += [
        f"--user-data-dir={workdir / 'profile'}",
        f"--screenshot={shot}",
        f"--window-size={width},{height}",
    ]
    done = subprocess.run([CHROMIUM, *args, page.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    return mpimg.imread(shot)[..., :3]


def looks_rendered(image) -> bool:
    """Not blank: varied pixels, many colours (anti-aliased text), some dark ink."""
    import numpy as np

    gray = image.mean(axis=2)
    colours = np.unique(image.reshape(-1, 3), axis=0).shape[0]
    return bool(gray.var() > 1e-3 and colours > 20 and (gray < 0.5).mean() > 0.005)


def children_of(pid: int) -> list[int]:
    """PIDs whose parent is `pid`, from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def gone(pid: int) -> bool:
    """Whether `pid` has ended: no such process, or a zombie that only waits to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@contextlib.contextmanager
def small_disk(path, size: str):
    """A tmpfs of `size` at `path` (root only; the test is skipped elsewhere), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    path.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
