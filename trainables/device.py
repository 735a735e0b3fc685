"""Device truth: put the trial on the device it claims, and record what that device really is.

    device, info = prepare_device(cfg)     # call first in the trial process, before any CUDA use

A gpu trial fails loudly when this process cannot see CUDA (never silently falls back to CPU).
A cpu trial hides every GPU from torch (Ray leaves GPUs visible to CPU-only workers) and sets
torch's threads to its CPU allotment minus its DataLoader workers. `info` names the host, the
device (GPU name or CPU model), threads, workers and software versions, and goes into every row.
"""

from __future__ import annotations

import os
import platform
import socket
from importlib import metadata

import torch

from trainables.config import Device, TrialConfig
from trainables.hostinfo import cpu_model  # noqa: F401 (re-exported: rows and probes read it here)


class DeviceUnavailable(RuntimeError):
    """The trial's device does not exist in this process."""


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _gpu_driver() -> str | None:
    try:  # nvidia-ml-py: optional, present on GPU images
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else version
    except Exception:  # not installed, or no NVML on this host
        return None


def software_info() -> dict:
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": _version("torchvision"),
        "ray": _version("ray"),
        "cuda_runtime": torch.version.cuda,
    }


def gpu_identity(device: torch.device) -> dict:
    """Which physical GPU this is, whatever CUDA_VISIBLE_DEVICES renumbered: its UUID and its NVML
    index (the number nvidia-smi shows), so concurrent trials on one node can be told apart."""
    uuid = str(torch.cuda.get_device_properties(device).uuid)
    uuid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
    index = None
    try:
        import pynvml

        pynvml.nvmlInit()
        index = int(pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByUUID(uuid)))
    except Exception:  # no nvidia-ml-py or no NVML: the UUID still identifies the GPU
        pass
    return {"gpu_uuid": uuid, "nvml_index": index}


def prepare_device(cfg: TrialConfig) -> tuple[torch.device, dict]:
    if cfg.device is Device.cpu:
        # Must happen before CUDA is initialised in this process; torch reads it at init.
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        device = torch.device("cpu")
        gpus_visible = torch.cuda.device_count()
        name = cpu_model()
        gpu = {"gpu_name": None, "gpu_driver": None, "cudnn": None}
    else:
        if not torch.cuda.is_available():
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
            raise DeviceUnavailable(
                f"gpu trial {cfg.trial_id} got no CUDA device in its process on {socket.gethostname()} "
                f"(torch {torch.__version__}, CUDA_VISIBLE_DEVICES={visible})"
            )
        device = torch.device("cuda", 0)  # Ray maps the trial's GPU to index 0 via CUDA_VISIBLE_DEVICES
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True  # autotune convolutions; its cost lands in warm-up epoch 1
        gpus_visible = torch.cuda.device_count()
        name = torch.cuda.get_device_name(device)
        gpu = {
            "gpu_name": name,
            "gpu_driver": _gpu_driver(),
            "cudnn": torch.backends.cudnn.version(),
            **gpu_identity(device),
        }
    torch.set_num_threads(cfg.torch_threads)
    info = {
        "host": socket.gethostname(),
        "device_name": name,
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpus_allotted": cfg.cpus,
        "torch_threads": torch.get_num_threads(),
        "data_workers": cfg.data_workers,
        "gpus_visible": gpus_visible,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "niceness": os.getpriority(os.PRIO_PROCESS, 0),  # Ray's default for workers is 15
        **gpu,
        **software_info(),
    }
    return device, info
