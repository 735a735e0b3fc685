"""report.figures and report.epoch_figures write real, non-blank PNGs and label devices correctly.

.venv/bin/pytest -q tests/test_figures.py
"""

from __future__ import annotations

import math

import matplotlib.figure
import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis.stats import accuracy_curves, cell_summary
from orchestrator.report import epoch_figures, figures

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
    original = figures.save

    def keep(fig, path, **kwargs):
        figs.append(fig)
        return original(fig, path, **kwargs)

    for module in (figures, epoch_figures):  # epoch_figures imported `save` by name
        monkeypatch.setattr(module, "save", keep)
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


def test_speedup_vs_params_draws_one_line_per_hardware_pair(tmp_path, captured):
    epyc, xeon = "cpu:EPYC-7763-64c", "cpu:Xeon-Platinum-8480+-16c"
    t = pd.concat(
        [
            table({"simple_cnn": 1.5, "resnet18": 6.0}).assign(cpu_class=epyc, gpu_class="gpu:H200"),
            table({"simple_cnn": 3.0, "resnet18": 12.0}).assign(cpu_class=xeon, gpu_class="gpu:H200"),
        ]
    )
    figures.speedup_vs_params(t, tmp_path / "s.png")
    ours = [line for line in captured[0].axes[0].get_lines() if line.get_label().startswith("ours")]
    assert [line.get_label() for line in ours] == [
        f"ours: batch 128, loader, fp32; gpu:H200 vs {epyc}",
        f"ours: batch 128, loader, fp32; gpu:H200 vs {xeon}",
    ]
    assert [list(line.get_ydata()) for line in ours] == [[1.5, 6.0], [3.0, 12.0]]
    # one pair: the label stays as before
    figures.speedup_vs_params(t.iloc[:2], tmp_path / "s1.png")
    labels = [line.get_label() for line in captured[1].axes[0].get_lines()]
    assert "ours: batch 128, loader, fp32" in labels


def test_epoch_time_labels_the_class_when_a_device_has_several(tmp_path, captured):
    df = summary().assign(hw_class=lambda d: d["device"].map({"cpu": "cpu:EPYC-7763-64c", "gpu": "gpu:H200"}))
    df.loc[len(df)] = dict(df.iloc[-2], hw_class="cpu:Xeon-Platinum-8480+-16c", epoch_s=300.0)  # simple_cnn
    figures.epoch_time(df, tmp_path / "e.png")
    labels = [t.get_text() for t in captured[0].axes[0].get_xticklabels()]
    assert labels[:3] == ["CPU\nEPYC-7763-64c", "CPU\nXeon-Platinum-\n8480+-16c", "GPU\nH200"]  # wrapped


def test_epoch_time_empty_summary_still_writes(tmp_path):
    empty = summary().iloc[0:0]
    path = figures.epoch_time(empty, tmp_path / "e.png")
    assert path.read_bytes()[:8] == PNG_MAGIC


# ---- figures from the epoch rows ---------------------------------------------------------------------


def size_px(figsize) -> tuple[int, int]:
    return round(figsize[1] * figures.DPI), round(figsize[0] * figures.DPI)


def assert_png_of_size(path, figsize):
    assert_real_png(path)
    assert mpimg.imread(path).shape[:2] == size_px(figsize)


def epochs(batch_sizes=(128,), repeats=2, n_epochs=3) -> pd.DataFrame:
    """Epoch rows: epoch 1 is warm-up (1000 s, must not leak into any median); steady epochs take
    base * (128 / batch)^0.5 s with data 40% (GPU) / 10% (CPU), compute 50%; eval 2 s (GPU) / 20 s (CPU);
    test_acc = 0.1 * epoch + 0.01 * repeat."""
    rows = []
    for model, params, cpu_s, gpu_s in [
        ("resnet50", 25_557_032, 5000.0, 100.0),
        ("simple_cnn", 500_000, 20, 10),
    ]:
        for device, base in (("cpu", cpu_s), ("gpu", gpu_s)):
            for bs in batch_sizes:
                for repeat in range(repeats):
                    for epoch in range(1, n_epochs + 1):
                        s = 1000.0 if epoch == 1 else base * (128 / bs) ** 0.5
                        data = 0.4 if device == "gpu" else 0.1
                        rows.append(
                            {
                                "sweep": "s1", "trial": f"{model}/{device}/bs{bs}/r{repeat}", "attempt": 1,
                                "model": model, "device": device, "batch_size": bs, "pipeline": "loader",
                                "precision": "fp32", "params": params, "repeat": repeat, "epoch": epoch,
                                "warmup": epoch == 1, "epoch_s": s, "data_s": data * s, "compute_s": 0.5 * s,
                                "eval_s": 2.0 if device == "gpu" else 20.0, "images_per_s": 50_000 / s,
                                "test_acc": 0.1 * epoch + 0.01 * repeat, "extrapolated": False,
                                "eval_partial": False, "device_name": device.upper(), "host": "h1",
                            }
                        )  # fmt: skip
    return pd.DataFrame(rows)


def test_speedup_vs_params_draws_the_interval_as_error_bars(tmp_path, captured):
    t = table({"simple_cnn": 1.5, "resnet18": 6.0}).assign(
        speedup_low=[1.2, math.nan], speedup_high=[1.9, 7.0]
    )
    figures.speedup_vs_params(t, tmp_path / "s.png")
    ax = captured[0].axes[0]
    [bars] = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
    segments = bars.lines[2][0].get_segments()  # only the point with both ends finite
    assert len(segments) == 1 and [tuple(p) for p in segments[0]] == [(500_000, 1.2), (500_000, 1.9)]
    assert "95% bootstrap interval (error bars)" in [t.get_text() for t in ax.get_legend().get_texts()]
    # without interval columns (or all NaN): no error bars, no legend entry
    figures.speedup_vs_params(table({"simple_cnn": 1.5}), tmp_path / "s2.png")
    assert not [c for c in captured[1].axes[0].containers if type(c).__name__ == "ErrorbarContainer"]


def test_the_epoch_split_is_of_steady_medians():
    df = epochs()
    df.loc[(df["model"] == "simple_cnn") & (df["device"] == "gpu") & (df["repeat"] == 1), "data_s"] = 9.0
    b = cell_summary(df).set_index(["model", "device"])
    gpu = b.loc[("simple_cnn", "gpu")]
    assert gpu["epoch_s"] == 10.0 and gpu["compute_s"] == 5.0 and gpu["eval_s"] == 2.0
    assert gpu["data_s"] == np.median([4.0, 4.0, 9.0, 9.0])  # 6.5: both repeats, warm-up excluded
    assert gpu["other_s"] == 0.0  # 10 - 6.5 - 5 < 0 is clipped
    assert b.loc[("resnet50", "cpu")]["other_s"] == 5000.0 * 0.4


def test_epoch_breakdown_png(tmp_path, captured):
    path = epoch_figures.epoch_breakdown(cell_summary(epochs()), tmp_path / "b.png")
    assert_png_of_size(path, epoch_figures.BREAKDOWN_FIGSIZE)
    top, bottom = captured[0].axes[:2]
    # 4 cells x 3 stacked segments: shares of the epoch in %, data first (simple_cnn first: fewer params)
    heights = [round(p.get_height(), 6) for p in top.patches[:12]]
    assert heights == [10.0, 50.0, 40.0, 40.0, 50.0, 10.0] * 2
    assert top.get_ylabel() == "share of epoch time (%)" and top.get_title()
    assert [round(y, 6) for y in top.get_lines()[0].get_ydata()] == [30.0, 30.0]  # input-bound line
    legend = [t.get_text() for t in top.get_legend().get_texts()]
    assert "input-bound: data wait > 30%" in legend and legend[0].startswith("data wait")
    assert [p.get_height() for p in bottom.patches] == [20.0, 2.0, 20.0, 2.0]
    assert all(p.get_hatch() for p in bottom.patches) and bottom.get_yscale() == "linear"
    assert "s" in bottom.get_ylabel() and bottom.get_title()
    text = all_text(captured[0])
    assert "5000 s" in text and "10.0 s" in text and "1000" not in text  # warm-up excluded


def test_epoch_breakdown_without_epochs_still_writes(tmp_path):
    path = epoch_figures.epoch_breakdown(cell_summary(epochs().iloc[0:0]), tmp_path / "b.png")
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_accuracy_per_epoch_png(tmp_path, captured):
    path = epoch_figures.accuracy_per_epoch(accuracy_curves(epochs()), tmp_path / "a.png")
    assert_png_of_size(path, figures.FIGSIZE)
    fig = captured[0]
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["simple_cnn", "resnet50"]
    assert panels[0].get_ylabel() == "test accuracy (%)" and panels[0].get_xlabel() == "epoch"
    lines = {line.get_label(): line for line in panels[0].get_lines()}
    assert set(lines) == {"CPU", "GPU"}
    assert list(lines["GPU"].get_xdata()) == [1, 2, 3]
    assert np.allclose(lines["GPU"].get_ydata(), [10.5, 20.5, 30.5])  # median of repeats 0 and 1, in %
    assert lines["CPU"].get_color() == figures.DEVICE_COLORS["cpu"]
    assert "CPU vs GPU" in fig.get_suptitle()


def test_accuracy_of_results_that_predate_compile_draws_lines(tmp_path, captured):
    """Results written before the compile axis read it as null; the panels once drew nothing for them."""
    epoch_figures.accuracy_per_epoch(accuracy_curves(epochs().assign(compile=None)), tmp_path / "a.png")
    panels = [ax for ax in captured[0].axes if ax.get_title()]
    assert {line.get_label() for line in panels[0].get_lines()} == {"CPU", "GPU"}


def test_accuracy_without_test_acc_still_writes(tmp_path):
    path = epoch_figures.accuracy_per_epoch(
        accuracy_curves(epochs().assign(test_acc=math.nan)), tmp_path / "a.png"
    )
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_throughput_is_skipped_with_one_batch_size(tmp_path):
    df = cell_summary(epochs())
    assert not epoch_figures.throughput_applies(df)
    assert epoch_figures.throughput_vs_batch(df, tmp_path / "t.png") is None
    assert not (tmp_path / "t.png").exists()


def test_throughput_vs_batch_png(tmp_path, captured):
    df = cell_summary(epochs(batch_sizes=(128, 512)))
    assert epoch_figures.throughput_applies(df) and epoch_figures.batch_sizes(df) == [128, 512]
    path = epoch_figures.throughput_vs_batch(df, tmp_path / "t.png")
    assert_png_of_size(path, figures.FIGSIZE)
    ax = captured[0].axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "batch size" in ax.get_xlabel() and "images/s" in ax.get_ylabel() and ax.get_title()
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"simple_cnn CPU", "simple_cnn GPU", "resnet50 CPU", "resnet50 GPU"}
    assert list(lines["simple_cnn GPU"].get_xdata()) == [128, 512]
    assert np.allclose(lines["simple_cnn GPU"].get_ydata(), [5000.0, 10_000.0])  # 50000 / (10 * (128/bs)^.5)
    assert lines["resnet50 CPU"].get_linestyle() == "--" and lines["resnet50 GPU"].get_linestyle() == "-"


def test_fits_are_drawn_only_for_the_configurations_drawn(tmp_path, captured):
    """A fit of a configuration the figure does not draw (focus() cut it, or it has no line) is left
    out: 40 of them once made a legend taller than the figure."""
    band = (np.array([5e5, 2.5e7]), np.array([1.0, 5.0]), np.array([2.0, 8.0]))
    fit = dict(pipeline="loader", precision="fp32", compile="off", exponent=0.5, intercept=-6.0, band=band)
    scaling = pd.DataFrame([dict(fit, batch_size=128), dict(fit, batch_size=512)])
    figures.speedup_vs_params(table({"simple_cnn": 1.5, "resnet18": 6.0}), tmp_path / "s.png", scaling)
    labels = [line.get_label() for line in captured[0].axes[0].get_lines()]
    assert [lb for lb in labels if lb.startswith("fit at")] == [
        "fit at batch 128, loader, fp32: speedup ∝ params^0.50"
    ]


def test_save_draws_each_figure_once(tmp_path, monkeypatch):
    """save() lays a figure out itself (tight, or its constrained layout) and leaves savefig no layout
    engine, so savefig draws it once, not a second time to lay it out; the PNG is still FIGSIZE x DPI."""
    draws = []
    draw = matplotlib.figure.Figure.draw

    def counted(self, renderer):
        draws.append(self.dpi)
        return draw(self, renderer)

    monkeypatch.setattr(matplotlib.figure.Figure, "draw", counted)
    for layout in (None, "constrained"):
        fig, ax = plt.subplots(figsize=figures.FIGSIZE, layout=layout)
        ax.plot([1, 10], [2, 30], label="a line")
        ax.set_yscale("log")
        ax.legend()
        path = figures.save(fig, tmp_path / f"{layout}.png", tight=layout is None)
        assert_png_of_size(path, figures.FIGSIZE)
    assert draws == [figures.DPI, figures.DPI]
