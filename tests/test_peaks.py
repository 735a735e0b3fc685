"""orchestrator.analysis.efficiency: the peak table lookup, achieved TFLOP/s and MFU on hand-made numbers.

.venv/bin/pytest -q tests/test_peaks.py
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from orchestrator.analysis.efficiency import (
    PEAKS,
    achieved_tflops,
    efficiency_table,
    find_peak,
    mfu,
    peak_tflops,
)


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("NVIDIA H200", "H200 SXM"),
        ("nvidia h200 nvl", "H200 NVL"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA A100 80GB PCIe", "A100"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA GeForce RTX 3050", "RTX 3050"),
        ("NVIDIA GeForce RTX 3050 Laptop GPU", "RTX 3050 Laptop"),
        ("NVIDIA GeForce RTX 3050 Ti Laptop GPU", "RTX 3050 Ti Laptop"),
    ],
)
def test_find_peak_by_case_insensitive_substring(name, label):
    assert find_peak(name).label == label


@pytest.mark.parametrize(
    "name", ["NVIDIA GeForce RTX 4090 Laptop GPU", "Tesla T4", "Xeon 8480+", "", None, 3.0]
)
def test_unknown_devices_have_no_peak(name):
    assert find_peak(name) is None
    assert peak_tflops(name, "fp32") is None


def test_h200_peaks_are_the_datasheet_numbers_halved_for_sparsity():
    h200 = find_peak("NVIDIA H200")
    assert (h200.fp32, h200.tf32, h200.bf16) == (67.0, 494.7, 989.5)
    assert h200.tf32 == pytest.approx(989 / 2, abs=0.5) and h200.bf16 == pytest.approx(1979 / 2)


def test_every_peak_is_ordered_fp32_le_tf32_lt_bf16():
    for peak in PEAKS:
        assert 0 < peak.fp32 <= peak.tf32 < peak.bf16, peak


def test_precision_picks_the_peak():
    assert peak_tflops("NVIDIA H200", "amp") == 989.5  # bf16 autocast: BF16 tensor cores
    assert peak_tflops("NVIDIA H200", "fp32") == 67.0  # FP32 CUDA cores (non-tensor)
    assert peak_tflops("NVIDIA H200", "fp16") is None
    assert peak_tflops("NVIDIA H200", "fp32", device="cpu") is None


def test_achieved_tflops_and_mfu():
    # resnet18-like: 0.217 GFLOP per training image at 20,000 images/s = 4.34 TFLOP/s; on an H200 in fp32
    # that is 4.34 / 67 = 6.48% of the FP32 peak
    achieved = achieved_tflops(0.217e9, 20_000)
    assert achieved == pytest.approx(4.34)
    assert mfu(achieved, 67.0) == pytest.approx(4.34 / 67)
    assert mfu(achieved, None) is None and mfu(math.nan, 67.0) is None
    assert math.isnan(achieved_tflops(None, 20_000))


def rows(device, name, ips, precision="fp32", model="resnet18", repeat=0):
    base = {"sweep": "s1", "trial": f"{model}/{device}/{precision}/r{repeat}", "attempt": 1, "model": model}
    base.update(device=device, device_name=name, batch_size=128, pipeline="loader", precision=precision)
    return [{**base, "epoch": i, "warmup": i == 1, "images_per_s": v} for i, v in enumerate(ips, start=1)]


def test_efficiency_table_per_cell():
    flops = {"resnet18": 2e8}.__getitem__  # 0.2 GFLOP per training image
    epochs = pd.DataFrame(
        rows("gpu", "NVIDIA H200", [1.0, 10_000.0, 30_000.0])  # warm-up excluded: median 20,000
        + rows("gpu", "NVIDIA H200", [1.0, 50_000.0, 50_000.0], precision="amp")
        + rows("cpu", "Xeon 8480+", [1.0, 1_000.0])
        + rows("gpu", "Tesla T4", [1.0, 5_000.0], repeat=1)  # another GPU: its own row, no peak
        + rows("gpu", "NVIDIA H200", [1.0, 100.0], model="no_such_model")
    )
    table = efficiency_table(epochs, flops_fn=flops).set_index(
        ["model", "device", "precision", "device_name"]
    )
    fp32 = table.loc[("resnet18", "gpu", "fp32", "NVIDIA H200")]
    assert fp32["images_per_s"] == 20_000 and fp32["gflop_per_image"] == 0.2
    assert fp32["achieved_tflops"] == pytest.approx(4.0)  # 2e8 * 2e4 / 1e12
    assert fp32["mfu"] == pytest.approx(4.0 / 67.0) and fp32["n"] == 2
    amp = table.loc[("resnet18", "gpu", "amp", "NVIDIA H200")]
    assert amp["achieved_tflops"] == pytest.approx(10.0) and amp["mfu"] == pytest.approx(10.0 / 989.5)
    cpu = table.loc[("resnet18", "cpu", "fp32", "Xeon 8480+")]
    assert cpu["achieved_tflops"] == pytest.approx(0.2) and pd.isna(cpu["mfu"])
    assert pd.isna(table.loc[("resnet18", "gpu", "fp32", "Tesla T4")]["mfu"])
    unknown = table.loc[("no_such_model", "gpu", "fp32", "NVIDIA H200")]
    assert math.isnan(unknown["achieved_tflops"]) and pd.isna(unknown["mfu"])


def test_efficiency_table_without_throughput_or_names():
    epochs = pd.DataFrame(rows("gpu", "NVIDIA H200", [1.0, 2.0])).drop(
        columns=["images_per_s", "device_name"]
    )
    table = efficiency_table(epochs, flops_fn=lambda _m: 1e9)
    assert len(table) == 1 and math.isnan(table.iloc[0]["achieved_tflops"]) and pd.isna(table.iloc[0]["mfu"])
    assert efficiency_table(pd.DataFrame()).empty
