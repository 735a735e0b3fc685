"""Peak GPU throughput and model FLOPs utilization (MFU): how much of the GPU a training run uses.

    from orchestrator.analysis.efficiency import efficiency_table
    print(efficiency_table(ok_epochs(epochs, trials)))   # one row per cell and device name

Definitions (printed in report.md):
    GFLOP/train image = flops_table.train_flops(model) / 1e9 (trainables.flops' count, tabulated):
                        forward + backward matrix products of one 32x32 image (convolutions, linear
                        layers; 2 FLOPs per multiply-add)
    images/s          = median(images_per_s) over the cell's steady epochs (images of the timed window /
                        its seconds, input waits included), pooled across repeats
    achieved TFLOP/s  = flops_per_image * images_per_s / 1e12
    MFU               = achieved TFLOP/s / peak TFLOP/s of the GPU at the run's precision (peak_tflops);
                        None for CPU cells and GPUs not in PEAKS (never a guessed peak)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from orchestrator.analysis.flops_table import train_flops
from orchestrator.analysis.stats import CELL, HW_CLASS, steady_epochs


@dataclass(frozen=True)
class GpuPeak:
    match: str  # lower-case substring of torch.cuda.get_device_name()
    label: str
    fp32: float  # dense TFLOP/s of the CUDA cores (no tensor cores)
    tf32: float  # dense TFLOP/s of the tensor cores in TF32
    bf16: float  # dense TFLOP/s of the tensor cores in BF16 with FP32 accumulation
    unless: tuple[str, ...] = ()  # lower-case substrings that rule the entry out


# ---- peak dense TFLOP/s per GPU model: the one place these numbers live ---------------------------
# Dense = without structured sparsity. NVIDIA's datasheets print tensor-core numbers "with sparsity";
# the dense figure is half of it. Sources: NVIDIA H200 datasheet (H200 SXM / NVL: FP32 67 / 60, TF32
# 989* / 835*, BF16 1,979* / 1,671*), NVIDIA H100 datasheet (SXM / PCIe / NVL: FP32 67 / 51 / 60, TF32
# 989* / 756* / 835*, BF16 1,979* / 1,513* / 1,671*), NVIDIA A100 datasheet (FP32 19.5, TF32 156,
# BF16 312; same for SXM and PCIe), NVIDIA Ada Lovelace architecture whitepaper, appendix (RTX 4090:
# FP32 82.6, TF32 82.6, BF16 with FP32 accumulate 165.2). NVIDIA publishes no tensor TFLOP/s for the
# RTX 3050: FP32 = CUDA cores x 2 x boost clock from its spec page (desktop 2560 x 1.777 GHz; laptop
# 2048 x 1.740 GHz and Ti laptop 2560 x 1.695 GHz, the top of the laptop range: a laptop's clock depends
# on its power limit, so its MFU is a lower bound), and TF32 = 1x, BF16 = 2x FP32, the GeForce GA10x
# ratios of the NVIDIA Ampere GA102 whitepaper (RTX 3090: FP32 35.6, TF32 35.6, BF16 71). The RTX 3050
# 6GB (fewer cores, lower clock) is not tabulated, so it gets no MFU rather than the 8 GB card's peak.
# The first entry whose `match` is in the lower-cased device name (and no `unless`) applies, so more
# specific names come first. (GH200 reports "NVIDIA GH200 ..." and matches "h200": same peaks.)
PEAKS = (
    GpuPeak("h200 nvl", "H200 NVL", fp32=60.0, tf32=417.5, bf16=835.5),
    GpuPeak("h200", "H200 SXM", fp32=67.0, tf32=494.7, bf16=989.5),
    GpuPeak("h100 nvl", "H100 NVL", fp32=60.0, tf32=417.5, bf16=835.5),
    GpuPeak("h100 pcie", "H100 PCIe", fp32=51.0, tf32=378.0, bf16=756.5),
    GpuPeak("h100", "H100 SXM", fp32=67.0, tf32=494.7, bf16=989.5),
    GpuPeak("a100", "A100", fp32=19.5, tf32=156.0, bf16=312.0),
    GpuPeak("rtx 4090", "RTX 4090", fp32=82.6, tf32=82.6, bf16=165.2, unless=("laptop",)),
    GpuPeak("rtx 3050 ti laptop", "RTX 3050 Ti Laptop", fp32=8.68, tf32=8.68, bf16=17.4),
    GpuPeak("rtx 3050 laptop", "RTX 3050 Laptop", fp32=7.13, tf32=7.13, bf16=14.3),
    GpuPeak("rtx 3050", "RTX 3050", fp32=9.10, tf32=9.10, bf16=18.2, unless=("laptop", "6gb")),
)
# ---------------------------------------------------------------------------------------------------
PEAK_COLUMN = {"fp32": "fp32", "amp": "bf16"}  # precision -> which peak applies (see peak_tflops)


def find_peak(device_name) -> GpuPeak | None:
    """The PEAKS entry of a recorded device name such as "NVIDIA H200" (case-insensitive substring
    match, first entry wins); None when the name is missing or not in the table."""
    if not isinstance(device_name, str) or not device_name.strip():
        return None
    name = device_name.lower()
    for peak in PEAKS:
        if peak.match in name and not any(word in name for word in peak.unless):
            return peak
    return None


def peak_tflops(device_name, precision, device: str = "gpu") -> float | None:
    """Peak dense TFLOP/s that applies to a run: the BF16 tensor-core peak for precision "amp" (bf16
    autocast), the FP32 CUDA-core (non-tensor) peak for "fp32". None for a CPU, an unknown GPU or an
    unknown precision.

    fp32 caveat: PyTorch lets cuDNN use TF32 tensor cores for convolutions by default
    (torch.backends.cudnn.allow_tf32 = True), so an fp32 CNN can run faster than the FP32 peak allows
    and its MFU can exceed what the non-tensor peak suggests (even 100%). It is reported as measured,
    against the FP32 peak; the TF32 peak is in PEAKS for comparison."""
    if device != "gpu":
        return None
    peak = find_peak(device_name)
    column = PEAK_COLUMN.get(str(precision))
    return None if peak is None or column is None else getattr(peak, column)


def achieved_tflops(flops_per_image, images_per_s) -> float:
    """achieved TFLOP/s = flops_per_image * images_per_s / 1e12 (NaN when either is missing)."""
    if flops_per_image is None or images_per_s is None:
        return math.nan
    return float(flops_per_image) * float(images_per_s) / 1e12


def mfu(achieved, peak) -> float | None:
    """MFU = achieved TFLOP/s / peak TFLOP/s, a fraction; None when the peak is unknown (CPU, a GPU not
    in PEAKS) or either number is missing."""
    if peak is None or achieved is None or not peak > 0 or math.isnan(float(achieved)):
        return None
    return float(achieved) / float(peak)


def _flops_or_nan(flops_fn: Callable[[str], float], model) -> float:
    try:
        return float(flops_fn(str(model)))
    except Exception:  # an unknown model name or one that cannot be traced: no number, not a crash
        return math.nan


def efficiency_table(epochs: pd.DataFrame, flops_fn: Callable[[str], float] = train_flops) -> pd.DataFrame:
    """One row per cell (model, device, batch_size, pipeline, precision), device_name and hw_class:

    images_per_s      median(images_per_s) over the steady epochs (stats.steady_epochs), NaN if absent
    gflop_per_image   flops_fn(model) / 1e9 (training FLOPs of one image), NaN if it cannot be counted
    achieved_tflops   achieved_tflops(flops_fn(model), images_per_s)
    peak_tflops       peak_tflops(device_name, precision, device); NaN when unknown
    mfu               mfu(achieved_tflops, peak_tflops); NaN when the peak is unknown
    n                 epochs in the median

    Pass successful epochs (stats.ok_epochs). A cell that ran on differently named devices gets one row
    per name, so no peak is applied to another GPU's runs, and one per hardware class (stats.HW_CLASS,
    "" when unknown), so a 64-core and a 16-core class of one CPU model are not pooled."""
    columns = CELL + [
        "device_name",
        HW_CLASS,
        "images_per_s",
        "gflop_per_image",
        "achieved_tflops",
        "peak_tflops",
    ]
    columns += ["mfu", "n"]
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    steady = steady_epochs(epochs)
    if "device_name" not in steady:
        steady["device_name"] = None
    ips = pd.to_numeric(steady.get("images_per_s", pd.Series(np.nan, index=steady.index)), errors="coerce")
    steady = steady.assign(_ips=ips.astype(float))
    rows = []
    for key, g in steady.groupby(CELL + ["device_name", HW_CLASS], dropna=False, sort=False):
        row = dict(zip(CELL + ["device_name", HW_CLASS], key, strict=True))
        samples = g["_ips"].dropna()
        images_per_s = float(np.median(samples)) if len(samples) else math.nan
        flops = _flops_or_nan(flops_fn, row["model"])
        achieved = achieved_tflops(flops, images_per_s)
        peak = peak_tflops(row["device_name"], row["precision"], row["device"])
        share = mfu(achieved, peak)
        rows.append(
            dict(
                row,
                images_per_s=images_per_s,
                gflop_per_image=flops / 1e9,
                achieved_tflops=achieved,
                peak_tflops=math.nan if peak is None else peak,
                mfu=math.nan if share is None else share,
                n=len(samples),
            )
        )
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(["gflop_per_image", "model", "device"], kind="stable").reset_index(drop=True)
