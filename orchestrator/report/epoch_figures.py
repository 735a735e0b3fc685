"""Report figures of what happens inside the epochs, as PNG files: the epoch split, accuracy per epoch and
throughput per batch size. They draw the model's tables (analysis.stats.cell_summary's split and speed
columns, stats.accuracy_curves) and take no median of their own; style and bar layout come from
orchestrator.report.figures.

    from orchestrator.report import epoch_figures
    epoch_figures.epoch_breakdown(model.summary, Path("out/epoch_breakdown.png"))
    epoch_figures.accuracy_per_epoch(model.accuracy, Path("out/accuracy_per_epoch.png"), model.chance_pct)
    epoch_figures.throughput_vs_batch(model.summary, Path("out/throughput.png"))   # None: one batch size

Each function writes one file; the caller owns the path.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: this module may be imported before orchestrator.report.figures

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from orchestrator.analysis.stats import INPUT_BOUND_SHARE, numeric  # noqa: E402
from orchestrator.report.figures import (  # noqa: E402
    CONFIG_AXES,
    DEVICE_COLORS,
    FIGSIZE,
    _cut,
    cell_layout,
    config_label,
    finite,
    focus,
    label_cells,
    save,
)
from orchestrator.report.formats import fmt_seconds  # noqa: E402
from orchestrator.report.model import batch_sizes  # noqa: E402
from orchestrator.results.rows import CONFIG  # noqa: E402

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


def _note(ax: plt.Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", fontsize=13)
    ax.set_axis_off()


def epoch_breakdown(summary: pd.DataFrame, path: Path) -> Path:
    """Where a training epoch goes, per cell (cell_summary's epoch_s, data_s, compute_s, other_s, eval_s),
    in two panels sharing the cell axis.

    Top: stacked bars of data wait / compute / other as a share (%) of the median epoch time, labelled
    with that time in seconds; a dashed line at INPUT_BOUND_SHARE marks the input-bound threshold (a data
    segment reaching above it means the input pipeline limits that cell). Cells from warm-up epochs only
    are cross-hatched. Bottom: the test pass (eval_s, not part of the epoch time) as hatched bars, log
    scale."""
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=BREAKDOWN_FIGSIZE, height_ratios=[3, 1.5], layout="constrained"
    )
    data, cut = focus(summary[numeric(summary, "epoch_s").gt(0).to_numpy()])
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


def accuracy_per_epoch(curves: pd.DataFrame, path: Path, chance: float | None = None) -> Path:
    """Test accuracy after each epoch (stats.accuracy_curves: the median over repeats), one panel per model
    (ordered by params), CPU and GPU lines in the device colours; with several configurations
    (results.CONFIG) each gets its own line style. `chance` (accuracy by guessing, %; report.model's
    chance_pct) is marked by a dashed line, and the y-axis runs from 0 to at least twice chance, so that
    a few points of noise around chance do not look like a trend."""
    if curves.empty:
        fig, ax = plt.subplots(figsize=FIGSIZE)
        _note(ax, "no test accuracy in these results")
        return save(fig, path)
    models = curves.sort_values(["params", "model"]).drop_duplicates("model")["model"].tolist()
    curves, cut = focus(curves)
    configs = sorted({tuple(r) for r in curves[list(CONFIG)].itertuples(index=False)}, key=str)
    ncols = min(len(models), 3)
    nrows = math.ceil(len(models) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=FIGSIZE, sharey=True, squeeze=False)
    top = max(100 * float(curves["test_acc"].max()) + 5, 2 * (chance or 10))
    for ax, model in zip(axes.flat, models, strict=False):
        mine = curves[curves["model"] == model]
        if chance is not None:
            ax.axhline(chance, color="gray", linestyle=":", linewidth=1, label=f"chance ({chance:.0f}%)")
        for (device, *config), g in mine.groupby(["device", *CONFIG], sort=True):
            style = LINESTYLES[configs.index(tuple(config)) % len(LINESTYLES)]
            shown = dict(zip(CONFIG, config, strict=True))
            label = str(device).upper() + (f" {config_label(shown)}" if len(configs) > 1 else "")
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


def throughput_applies(summary: pd.DataFrame) -> bool:
    """throughput_vs_batch draws only when more than one batch size was swept."""
    return len(batch_sizes(summary)) > 1


def throughput_vs_batch(summary: pd.DataFrame, path: Path) -> Path | None:
    """Training throughput (cell_summary's images_per_s: the median of the steady epochs) against batch
    size, log-log: one line per model (colour), device (GPU solid with filled markers, CPU dashed with
    hollow ones), hardware class (named in the legend and drawn in CLASS_STYLES when a device has several)
    and the configuration's other axes (CONFIG_AXES but the batch size: marker shape, named in the legend
    when there are several). None, and no file, when the results hold a single batch size."""
    if not throughput_applies(summary):
        return None
    points = finite(summary, "images_per_s")
    fig, ax = plt.subplots(figsize=FIGSIZE)
    if points.empty:
        _note(ax, "no images/s in these results")
        return save(fig, path)
    order = summary.sort_values(["params", "model"]).drop_duplicates("model")["model"].tolist()
    colors = plt.get_cmap("tab10")
    others = [a for a in CONFIG_AXES if a != "batch_size"]  # what else sets a line apart
    configs = sorted({tuple(r) for r in points[others].itertuples(index=False)}, key=str)
    show_class = bool((points.groupby("device")["hw_class"].nunique() > 1).any())
    classes = {dev: sorted(set(g["hw_class"])) for dev, g in points.groupby("device")}
    for (model, device, hw_class, *config), g in points.groupby(["model", "device", "hw_class", *others]):
        g = g.sort_values("batch_size")
        label = f"{model} {str(device).upper()}" + (
            f" {hw_class.split(':', 1)[-1] or 'unknown class'}" if show_class else ""
        )
        label += f", {config_label(dict(zip(others, config, strict=True)))}" if len(configs) > 1 else ""
        color = colors(order.index(model) % 10)
        ax.plot(
            g["batch_size"], g["images_per_s"], color=color,
            linestyle=CLASS_STYLES[device == "gpu"][classes[device].index(hw_class) % 3],
            marker=MARKERS[configs.index(tuple(config)) % len(MARKERS)], label=label,
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
