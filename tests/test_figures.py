"""orchestrator.figures writes real, non-blank PNGs and labels devices correctly.

.venv/bin/pytest -q tests/test_figures.py
"""

from __future__ import annotations

import math

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest

from orchestrator import figures

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def table(speedups: dict[str, float]) -> pd.DataFrame:
    params = {"simple_cnn": 500_000, "resnet18": 11_689_512, "resnet50": 25_557_032}
    rows = [
        {
            "model": m,
            "batch_size": 128,
            "pipeline": "loader",
            "precision": "fp32",
            "params": params[m],
            "cpu_epoch_s": 10.0 * s if not math.isnan(s) else 10.0,
            "gpu_epoch_s": 10.0 if not math.isnan(s) else math.nan,
            "speedup": s,
        }
        for m, s in speedups.items()
    ]
    return pd.DataFrame(rows)


def summary() -> pd.DataFrame:
    rows = []
    for model, params, cpu_s, gpu_s in [
        ("resnet50", 25_557_032, 5000.0, 130.0),
        ("simple_cnn", 500_000, 20.0, 9.0),
    ]:
        for device, secs in (("cpu", cpu_s), ("gpu", gpu_s)):
            rows.append(
                {
                    "model": model,
                    "device": device,
                    "batch_size": 128,
                    "pipeline": "loader",
                    "precision": "fp32",
                    "params": params,
                    "epoch_s": secs,
                    "warmup_only": False,
                    "device_names": "NVIDIA H200" if device == "gpu" else "Xeon 8480+",
                }
            )
    return pd.DataFrame(rows)


def assert_real_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000  # a blank 8x5 in figure compresses to far less
    image = mpimg.imread(path)
    assert image.shape[0] >= 5 * 120 and image.shape[1] >= 8 * 120  # figure size x dpi
    assert np.unique(image.reshape(-1, image.shape[-1]), axis=0).shape[0] > 10  # not a single colour


@pytest.fixture
def captured(monkeypatch):
    """The figure each call saved, for checking what was drawn (saving still happens)."""
    figs = []
    original = figures._save

    def keep(fig, path):
        figs.append(fig)
        return original(fig, path)

    monkeypatch.setattr(figures, "_save", keep)
    return figs


def all_text(fig) -> str:
    return "\n".join(t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text")))


def test_speedup_vs_params_png(tmp_path, captured):
    path = figures.speedup_vs_params(table({"simple_cnn": 1.5, "resnet18": 6.0}), tmp_path / "f" / "s.png")
    assert path == tmp_path / "f" / "s.png"
    assert_real_png(path)
    ax = captured[0].axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "parameters"
    assert ax.get_ylabel() == "speedup (CPU epoch s / GPU epoch s)"
    assert ax.get_title()
    text = all_text(captured[0])
    assert "ResNet50 (paper): 40.6x" in text and "simple CNN (paper)" in text
    assert "resnet18 6.00x" in text
    assert "batch 128, loader, fp32" in text
    assert figures.NO_PAIRS_NOTE not in text
    # our line goes through our points (x = params, y = speedup), sorted by params
    ours = [line for line in ax.get_lines() if line.get_label().startswith("ours")]
    assert len(ours) == 1
    assert list(ours[0].get_xdata()) == [500_000, 11_689_512] and list(ours[0].get_ydata()) == [1.5, 6.0]


def test_speedup_vs_params_without_pairs_still_draws_paper_and_note(tmp_path, captured):
    path = figures.speedup_vs_params(table({"resnet50": math.nan}), tmp_path / "s.png")
    assert_real_png(path)
    text = all_text(captured[0])
    assert figures.NO_PAIRS_NOTE in text
    assert "ResNet18 (paper): >7x" in text
    assert not [line for line in captured[0].axes[0].get_lines() if line.get_label().startswith("ours")]


def test_epoch_time_png_and_device_labels(tmp_path, captured):
    path = figures.epoch_time(summary(), tmp_path / "e.png")
    assert_real_png(path)
    ax = captured[0].axes[0]
    assert ax.get_yscale() == "log"
    assert "seconds" in ax.get_ylabel()
    # bars in order: simple_cnn (fewer params) first, CPU then GPU; each bar's height is that device's number
    heights = [p.get_height() for p in ax.patches]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert heights == [20.0, 9.0, 5000.0, 130.0]
    assert labels == ["CPU", "GPU", "CPU", "GPU"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["CPU: Xeon 8480+", "GPU: NVIDIA H200"]
    text = all_text(captured[0])
    assert "simple_cnn" in text and "resnet50" in text
    assert "5000 s" in text and "130 s" in text and "*" not in text


def test_epoch_time_marks_extrapolated_and_warmup_only(tmp_path, captured):
    df = summary().assign(extrapolated=False)
    df.loc[(df["model"] == "resnet50") & (df["device"] == "cpu"), "extrapolated"] = True
    df.loc[(df["model"] == "simple_cnn") & (df["device"] == "gpu"), "warmup_only"] = True
    figures.epoch_time(df, tmp_path / "e.png")
    ax = captured[0].axes[0]
    text = all_text(captured[0])
    assert "5000 s*" in text and "130 s*" not in text
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "warm-up epoch only" in legend and "* extrapolated (--max-steps)" in legend
    assert [bool(p.get_hatch()) for p in ax.patches[:4]] == [False, True, False, False]


def test_epoch_time_shows_config_when_several(tmp_path, captured):
    df = summary()
    df.loc[len(df)] = dict(df.iloc[-1], precision="amp", epoch_s=5.0)
    figures.epoch_time(df, tmp_path / "e.png")
    labels = [t.get_text() for t in captured[0].axes[0].get_xticklabels()]
    assert "GPU\nbs128\nloader\namp" in labels and "GPU\nbs128\nloader\nfp32" in labels


def test_epoch_time_empty_summary_still_writes(tmp_path):
    empty = summary().iloc[0:0]
    path = figures.epoch_time(empty, tmp_path / "e.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
