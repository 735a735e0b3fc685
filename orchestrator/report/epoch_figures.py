"""Report figures drawn from the epoch rows (read_results, not the summary tables), as PNG files; style
and bar layout come from orchestrator.report.figures.

    from orchestrator.report import epoch_figures
    epoch_figures.epoch_breakdown(epochs, Path("out/epoch_breakdown.png"))      # epochs: the epoch rows
    epoch_figures.accuracy_per_epoch(epochs, Path("out/accuracy_per_epoch.png"))
    epoch_figures.throughput_vs_batch(epochs, Path("out/throughput.png"))      # None: one batch size only

Each function writes one file; the caller owns the path.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: this module may be imported before orchestrator.report.figures

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from orchestrator.analysis.stats import CELL, CLASS_CELL, INPUT_BOUND_SHARE, steady_epochs  # noqa: E402
from orchestrator.report.figures import (  # noqa: E402
    DEVICE_COLORS,
    FIGSIZE,
    _cut,
    cell_layout,
    finite,
    focus,
    label_cells,
    save,
)
from orchestrator.report.formats import fmt_seconds  # noqa: E402
from orchestrator.report.model import batch_sizes  # noqa: E402
from orchestrator.results.rows import with_cell_defaults  # noqa: E402
from trainables.config import NUM_CLASSES  # noqa: E402

BREAKDOWN_FIGSIZE = (8, 6.5)  # two panels: training epoch split + test pass
# throughput line styles per hardware class of a device: [CPU styles, GPU styles], the first class's first
CLASS_STYLES = (["--", ":", (0, (3, 1, 1, 1))], ["-", "-.", (0, (5, 1))])

# (column of breakdown_table, legend label, colour), stacked bottom to top
SEGMENTS = [
    ("data_s", "data wait (input + host-to-device copy)", "#C44E52"),
    ("compute_s", "compute (forward, backward, optimizer)", "#55A868"),
    ("other_s", "other (epoch − data − compute)", "#B8B8B8"),
]
LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P"]


def _numeric(df: pd.DataFrame, col: str) -> pd.Series:
    """Column `col` as floats; all NaN when absent (results written before the column existed)."""
    if col not in df:
        return pd.Series(np.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[col], errors="coerce").astype(float)


def _note(ax: plt.Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", fontsize=13)
    ax.set_axis_off()


def breakdown_table(epochs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell (stats.CLASS_CELL: hardware classes are not pooled): params, warmup_only and the
    medians over its steady epochs (stats.steady_epochs) of epoch_s, data_s, compute_s and eval_s;
    other_s = max(epoch_s - data_s - compute_s, 0), a missing data_s / compute_s counting as 0. The
    stacked data + compute + other is then the median epoch time."""
    columns = CLASS_CELL + ["params", "epoch_s", "data_s", "compute_s", "other_s", "eval_s", "warmup_only"]
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    steady = steady_epochs(epochs)
    for col in ("epoch_s", "data_s", "compute_s", "eval_s"):
        steady[col] = _numeric(steady, col)
    medians = {col: (col, "median") for col in ("epoch_s", "data_s", "compute_s", "eval_s")}
    out = (
        steady.groupby(CLASS_CELL, dropna=False, sort=False)
        .agg(params=("params", "max"), warmup_only=("warmup_only", "all"), **medians)
        .reset_index()
    )
    out["other_s"] = (out["epoch_s"] - out["data_s"].fillna(0) - out["compute_s"].fillna(0)).clip(lower=0)
    return out[columns]


def epoch_breakdown(epochs: pd.DataFrame, path: Path) -> Path:
    """Where a training epoch goes, per cell (breakdown_table), in two panels sharing the cell axis.

    Top: stacked bars of data wait / compute / other as a share (%) of the median epoch time, labelled
    with that time in seconds; a dashed line at INPUT_BOUND_SHARE marks the input-bound threshold (a data
    segment reaching above it means the input pipeline limits that cell). Cells from warm-up epochs only
    are cross-hatched. Bottom: the test pass (eval_s, not part of the epoch time) as hatched bars, log
    scale."""
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=BREAKDOWN_FIGSIZE, height_ratios=[3, 1.5], layout="constrained"
    )
    data = breakdown_table(epochs)
    data, cut = focus(data[_numeric(data, "epoch_s").gt(0).to_numpy()])
    if data.empty:
        _note(top, "no epoch times in these results")
        bottom.set_axis_off()
        return save(fig, path, tight=False)
    layout = cell_layout(data)
    evals = []
    small = 8 if len(layout.placed) <= 10 else 6.5  # value labels, so neighbours do not overlap
    for x, cell in layout.placed:
        base = 0.0
        for col, _label, color in SEGMENTS:
            share = 100 * (0.0 if pd.isna(cell[col]) else float(cell[col])) / float(cell["epoch_s"])
            hatch = "xx" if cell["warmup_only"] else None
            top.bar(x, share, bottom=base, width=0.8, color=color, hatch=hatch, edgecolor="white")
            base += share
        top.annotate(
            f"{fmt_seconds(cell['epoch_s'])} s", (x, base), xytext=(0, 2), textcoords="offset points",
            ha="center", fontsize=small,
        )  # fmt: skip
        if pd.notna(cell["eval_s"]) and cell["eval_s"] > 0:
            color = DEVICE_COLORS.get(cell["device"], "gray")
            bottom.bar(x, cell["eval_s"], width=0.8, color=color, hatch="//", edgecolor="white")
            bottom.annotate(
                f"{fmt_seconds(cell['eval_s'])} s", (x, cell["eval_s"]), xytext=(0, 2),
                textcoords="offset points", ha="center", fontsize=small,
            )  # fmt: skip
            evals.append(float(cell["eval_s"]))
    threshold = 100 * INPUT_BOUND_SHARE
    top.axhline(threshold, color="black", linestyle="--", linewidth=1)
    handles = [plt.Rectangle((0, 0), 1, 1, color=color, label=label) for _, label, color in SEGMENTS]
    handles.append(
        plt.Line2D([], [], color="black", linestyle="--", label=f"input-bound: data wait > {threshold:.0f}%")
    )
    if data["warmup_only"].any():
        handles.append(
            plt.Rectangle(
                (0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="xx", label="warm-up only"
            )
        )
    top.legend(handles=handles, fontsize=8, ncol=2, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    top.set_ylim(0, 112)
    top.set_ylabel("share of epoch time (%)")
    top.set_title(
        "Training epoch split per cell (medians of non-warm-up epochs; bar label = epoch time)" + _cut(cut),
        fontsize=10,
        pad=48,
    )
    top.grid(True, axis="y", alpha=0.3)
    label_cells(top, layout)
    if evals and max(evals) > 10 * min(evals):
        bottom.set_yscale("log")
        bottom.set_ylim(min(evals) / 2, max(evals) * 4)
    elif evals:
        bottom.set_ylim(0, max(evals) * 1.35)
    else:
        bottom.text(0.5, 0.5, "no test-pass times", transform=bottom.transAxes, ha="center")
    bottom.set_ylabel("test pass (s, log)" if bottom.get_yscale() == "log" else "test pass (s)")
    bottom.set_title("Test pass after each epoch (eval_s; not part of the epoch time)", fontsize=10)
    bottom.grid(True, axis="y", which="major", alpha=0.3)
    bottom.set_xticks([x for x, _ in layout.placed], [str(c["device"]).upper() for _, c in layout.placed])
    bottom.set_xlim(top.get_xlim())
    return save(fig, path, tight=False)


def chance_pct(epochs: pd.DataFrame) -> float | None:
    """Accuracy by guessing, in percent, where the data sets' class count is known (synthetic and cifar10:
    NUM_CLASSES); None for folder data, whose class count the epochs do not record."""
    datasets = {str(d) for d in epochs.get("dataset", pd.Series(dtype=object)).dropna().unique()}
    return 100 / NUM_CLASSES if datasets and datasets <= {"synthetic", "cifar10"} else None


def accuracy_per_epoch(epochs: pd.DataFrame, path: Path) -> Path:
    """Test accuracy after each epoch, one panel per model (ordered by params), CPU and GPU lines in the
    device colours; each point is the median over repeats of that cell's test_acc at that epoch. With
    several (batch, pipeline, precision) configs, each config gets its own line style. A dashed line
    marks chance (chance_pct), and the y-axis runs from 0 to at least twice chance, so that a few points
    of noise around chance do not look like a trend."""
    acc = with_cell_defaults(epochs.assign(test_acc=_numeric(epochs, "test_acc")))
    acc = acc[np.isfinite(acc["test_acc"].to_numpy(dtype=float))]
    if acc.empty:
        fig, ax = plt.subplots(figsize=FIGSIZE)
        _note(ax, "no test accuracy in these results")
        return save(fig, path)
    curves = acc.groupby(CELL + ["epoch"], dropna=False)["test_acc"].median().reset_index()
    curves, cut = focus(curves)
    models = acc.sort_values(["params", "model"]).drop_duplicates("model")["model"].tolist()
    config_cols = list(CELL[2:])  # batch, pipeline, precision, compile: everything but model and device
    configs = sorted({tuple(r) for r in curves[config_cols].itertuples(index=False)}, key=str)
    ncols = min(len(models), 3)
    nrows = math.ceil(len(models) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=FIGSIZE, sharey=True, squeeze=False)
    chance = chance_pct(acc)
    top = max(100 * float(curves["test_acc"].max()) + 5, 2 * (chance or 10))
    for ax, model in zip(axes.flat, models, strict=False):
        mine = curves[curves["model"] == model]
        if chance is not None:
            ax.axhline(chance, color="gray", linestyle=":", linewidth=1, label=f"chance ({chance:.0f}%)")
        for (device, *config), g in mine.groupby(list(CELL[1:]), sort=True):
            style = LINESTYLES[configs.index(tuple(config)) % len(LINESTYLES)]
            label = str(device).upper() + (f" {_config_label(config)}" if len(configs) > 1 else "")
            g = g.sort_values("epoch")
            ax.plot(
                g["epoch"], 100 * g["test_acc"], color=DEVICE_COLORS.get(device, "gray"), linestyle=style,
                marker="o", markersize=3, label=label,
            )  # fmt: skip
        ax.set_title(model, fontsize=10)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_ylim(0, min(100, top))
    for row in axes:
        row[0].set_ylabel("test accuracy (%)")
    for ax in list(axes.flat)[len(models) :]:
        ax.set_axis_off()
    fig.suptitle("Test accuracy after each epoch, CPU vs GPU (median over repeats)" + _cut(cut), fontsize=11)
    return save(fig, path)


def throughput_applies(epochs: pd.DataFrame) -> bool:
    """throughput_vs_batch draws only when more than one batch size was swept."""
    return len(batch_sizes(epochs)) > 1


def throughput_vs_batch(epochs: pd.DataFrame, path: Path) -> Path | None:
    """Training throughput (median images_per_s of the steady epochs) against batch size, log-log: one
    line per model (colour), device (GPU solid with filled markers, CPU dashed with hollow ones), hardware
    class (named in the legend and drawn in CLASS_STYLES when a device has several) and pipeline/precision
    config (marker shape).
    None, and no file, when the results hold a single batch size (throughput_applies)."""
    if not throughput_applies(epochs):
        return None
    steady = steady_epochs(epochs)
    steady["images_per_s"] = _numeric(steady, "images_per_s")
    medians = steady.groupby(CLASS_CELL, dropna=False)["images_per_s"].median().reset_index()
    points = finite(medians, "images_per_s")
    fig, ax = plt.subplots(figsize=FIGSIZE)
    if points.empty:
        _note(ax, "no images/s in these results")
        return save(fig, path)
    order = epochs.sort_values(["params", "model"]).drop_duplicates("model")["model"].tolist()
    colors = plt.get_cmap("tab10")
    configs = sorted({(r.pipeline, r.precision) for r in points.itertuples()})
    show_class = bool((points.groupby("device")["hw_class"].nunique() > 1).any())
    classes = {dev: sorted(set(g["hw_class"])) for dev, g in points.groupby("device")}
    for (model, device, hw_class, pipeline, precision), g in points.groupby(
        ["model", "device", "hw_class", "pipeline", "precision"]
    ):
        g = g.sort_values("batch_size")
        several = len(configs) > 1
        label = f"{model} {str(device).upper()}" + (
            f" {hw_class.split(':', 1)[-1] or 'unknown class'}" if show_class else ""
        )
        label += f", {pipeline}, {precision}" if several else ""
        color = colors(order.index(model) % 10)
        ax.plot(
            g["batch_size"], g["images_per_s"], color=color,
            linestyle=CLASS_STYLES[device == "gpu"][classes[device].index(hw_class) % 3],
            marker=MARKERS[configs.index((pipeline, precision)) % len(MARKERS)], label=label,
            markerfacecolor=color if device == "gpu" else "white",
        )  # fmt: skip
    sizes = batch_sizes(points)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(b) for b in sizes])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("batch size (images per step, log scale)")
    ax.set_ylabel("throughput (images/s, log scale)")
    ax.set_title("Training throughput vs batch size (median of non-warm-up epochs)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, path)


def _config_label(config) -> str:
    """`bs128 resident fp32`, plus `compiled` for a compiled cell (CELL[2:] values)."""
    bs, pipeline, precision, compile_ = config
    return f"bs{bs} {pipeline} {precision}" + (" compiled" if compile_ == "on" else "")
