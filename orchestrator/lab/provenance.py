"""Where a sweep came from: the project's git commit and the driver's environment.

    python -c "from orchestrator.lab.provenance import driver_provenance; print(driver_provenance())"

Per-trial facts (host, device, versions where the trial ran) are measured by the trial itself
(trainables/device.py); these are the driver's, recorded once in spec.json and on every trial row.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import time
from pathlib import Path

from trainables.device import software_info

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def git_commit(root: Path = PROJECT_ROOT) -> str | None:
    """HEAD of the project's checkout, with '-dirty' if tracked files changed; None outside git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    if os.environ.get("BENCHCTL_GIT_COMMIT"):  # a checkout copied without .git (the GPU test machine)
        return os.environ["BENCHCTL_GIT_COMMIT"]
    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "")


def driver_provenance() -> dict:
    return {
        "git_commit": git_commit(),
        "driver_host": socket.gethostname(),
        "platform": platform.platform(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **software_info(),
    }
