"""Process helpers for tests that start and kill real drivers and Ray nodes.

pids = pids_with_env("/tmp/bcray123")          # processes whose environment mentions it
sigkill_after_first_trial(proc, results_dir)    # SIGKILL a sweep once one trial has landed
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

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
