"""This host's CPU model and NVIDIA GPU models, read from /proc: no torch, no CUDA.

from trainables.hostinfo import cpu_model, gpu_models
cpu_model()     # 'Intel(R) Xeon(R) Platinum 8480+' (as a trial row's cpu_model records it)
gpu_models()    # ['NVIDIA H200'] from the driver's files; [] without an NVIDIA driver
"""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_models() -> list[str]:
    """The model of each GPU the NVIDIA driver lists (/proc/driver/nvidia/gpus/*/information, `Model:`)."""
    out = []
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        try:
            for line in info.read_text(encoding="utf-8").splitlines():
                if line.startswith("Model:"):
                    out.append(line.split(":", 1)[1].strip())
        except OSError:
            continue
    return out
