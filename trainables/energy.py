"""Energy and utilization over a timed window: GPU through NVML, CPU packages through RAPL, the host's
CPUs through /proc/stat.

    meter = EnergyMeter(device)      # once per trial; never raises
    meter.start()                    # right before the timed training pass
    ...
    reading = meter.stop()           # EnergyReading(gpu_energy_j, gpu_util_pct, cpu_energy_j,
                                     #               host_busy_pct, host_steal_pct)
    meter.notes                      # why a reading is None (recorded once per trial)

GPU energy is NVML's total-energy counter (mJ since driver load) differenced over the window;
where the GPU lacks that counter, power samples are not integrated (a None is honest, a guess
is not). GPU utilization is the mean of NVML's own utilization samples that fall in the window,
so no polling thread competes with the training loop. CPU energy is the sum over RAPL package
domains (/sys/class/powercap/intel-rapl:N/energy_uj), wrap-around handled; it covers the whole
package, other processes included. Host load is the kernel's CPU time counters (all CPUs of the
host, every process) differenced over the window, see host_load: on a VM, `steal` is time the
hypervisor gave the vCPUs to someone else, the one cause of a slow epoch that nothing inside the VM
shows otherwise. Every failure leaves the reading None and a note, and never disturbs the trial.
"""

from __future__ import annotations

import glob
import os
import time
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class EnergyReading:
    gpu_energy_j: float | None
    gpu_util_pct: float | None
    cpu_energy_j: float | None
    host_busy_pct: float | None = None
    host_steal_pct: float | None = None


RAPL_ROOT = "/sys/class/powercap"
PROC_STAT = "/proc/stat"
# the aggregate "cpu" line of /proc/stat, in its order (jiffies); guest time is already inside user/nice
_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def read_cpu_times(path: str = PROC_STAT) -> dict[str, int] | None:
    """The host's CPU time counters from /proc/stat's aggregate `cpu` line; None where there is none."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("cpu "):
                    values = [int(v) for v in line.split()[1:]]
                    return dict(
                        zip(_CPU_FIELDS, values + [0] * (len(_CPU_FIELDS) - len(values)), strict=False)
                    )
    except (OSError, ValueError):
        return None
    return None


def host_load(start: dict[str, int] | None, stop: dict[str, int] | None) -> tuple[float | None, float | None]:
    """(busy %, steal %) of all the host's CPUs between two read_cpu_times readings:

        total   = d(user + nice + system + idle + iowait + irq + softirq + steal)
        busy %  = 100 * d(user + nice + system + irq + softirq) / total    (every process, this trial's too)
        steal % = 100 * d(steal) / total                                   (taken by the hypervisor)

    (None, None) when either reading is missing (no /proc/stat), or when no time passed on the counters
    (a window shorter than one clock tick)."""
    if not start or not stop:
        return None, None
    d = {k: stop[k] - start[k] for k in _CPU_FIELDS}
    total = sum(d.values())
    if total <= 0:
        return None, None
    busy = d["user"] + d["nice"] + d["system"] + d["irq"] + d["softirq"]
    return 100.0 * busy / total, 100.0 * d["steal"] / total


class _Rapl:
    def __init__(self, root: str = RAPL_ROOT) -> None:
        self.domains: list[tuple[str, int]] = []
        for path in sorted(glob.glob(os.path.join(root, "intel-rapl:[0-9]*"))):
            if os.path.basename(path).count(":") != 1:  # sub-domains (core, dram) are inside packages
                continue
            try:
                with open(os.path.join(path, "max_energy_range_uj")) as f:
                    max_range = int(f.read())
                self._read(path)
            except (OSError, ValueError):
                continue
            self.domains.append((path, max_range))
        self.note = None if self.domains else "RAPL energy counters not readable on this host"
        self._start: list[int] = []

    @staticmethod
    def _read(path: str) -> int:
        with open(os.path.join(path, "energy_uj")) as f:
            return int(f.read())

    def start(self) -> None:
        self._start = [self._read(p) for p, _ in self.domains]

    def stop(self) -> float | None:
        if not self.domains:
            return None
        total = 0
        for (path, max_range), start in zip(self.domains, self._start, strict=True):
            delta = self._read(path) - start
            total += delta if delta >= 0 else delta + max_range  # the counter wrapped
        return total / 1e6


class _Nvml:
    def __init__(self, device: torch.device) -> None:
        self.handle = None
        self.note: str | None = None
        try:
            import pynvml

            pynvml.nvmlInit()
            uuid = str(torch.cuda.get_device_properties(device).uuid)
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
            self.nvml = pynvml
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception as exc:  # no nvidia-ml-py, no NVML, or no energy counter on this GPU
            self.handle = None
            self.note = f"NVML energy unavailable ({type(exc).__name__}: {exc})"
        self._energy_mj = 0
        self._t_us = 0

    def start(self) -> None:
        if self.handle is None:
            return
        self._t_us = int(time.time() * 1e6)
        self._energy_mj = self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)

    def stop(self) -> tuple[float | None, float | None]:
        if self.handle is None:
            return None, None
        energy = (self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) - self._energy_mj) / 1e3
        try:
            _, samples = self.nvml.nvmlDeviceGetSamples(
                self.handle, self.nvml.NVML_GPU_UTILIZATION_SAMPLES, self._t_us
            )
            values = [s.sampleValue.uiVal for s in samples if s.timeStamp >= self._t_us]
            util = sum(values) / len(values) if values else None
        except Exception:  # sampling not supported: energy still stands
            util = None
        return energy, util


class EnergyMeter:
    def __init__(self, device: torch.device, proc_stat: str = PROC_STAT) -> None:
        self.rapl = _Rapl()
        self.nvml = _Nvml(device) if device.type == "cuda" else None
        self.proc_stat = proc_stat
        host_note = None if read_cpu_times(proc_stat) else f"host CPU load unreadable ({proc_stat})"
        self.notes = [n for n in (self.rapl.note, self.nvml.note if self.nvml else None, host_note) if n]
        self._cpu_times: dict[str, int] | None = None

    def start(self) -> None:
        self._cpu_times = read_cpu_times(self.proc_stat)
        try:
            self.rapl.start()
            if self.nvml:
                self.nvml.start()
        except Exception as exc:  # a counter that vanished mid-trial must not end the trial
            self.notes.append(f"energy start failed: {exc}")

    def stop(self) -> EnergyReading:
        busy, steal = host_load(self._cpu_times, read_cpu_times(self.proc_stat))
        try:
            gpu, util = self.nvml.stop() if self.nvml else (None, None)
            cpu = self.rapl.stop()
        except Exception as exc:
            self.notes.append(f"energy stop failed: {exc}")
            gpu, util, cpu = None, None, None
        return EnergyReading(gpu, util, cpu, host_busy_pct=busy, host_steal_pct=steal)
