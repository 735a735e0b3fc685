"""Report figures as PNG files (matplotlib, Agg backend: no display needed).

    from orchestrator.stats import cell_summary, speedup_table
    from orchestrator import figures
    figures.speedup_vs_params(speedup_table(epochs), Path("out/speedup_vs_params.png"))
    figures.epoch_time(cell_summary(epochs), Path("out/epoch_time.png"))
    figures.epoch_breakdown(epochs, Path("out/epoch_breakdown.png"))      # epochs: the epoch rows
    figures.accuracy_per_epoch(epochs, Path("out/accuracy_per_epoch.png"))
    figures.throughput_vs_batch(epochs, Path("out/throughput.png"))      # None: one batch size only

Each function draws from the tables in orchestrator.stats (or the epoch rows) and writes one file; the
caller owns the path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: headless servers and test runs have no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from orchestrator.stats import (  # noqa: E402
    CELL,
    CI_CONFIDENCE,
    INPUT_BOUND_SHARE,
    PAPER_POINTS,
    fmt_seconds,
    steady_epochs,
)

FIGSIZE = (8, 5)  # inches; every figure is FIGSIZE x DPI pixels except the breakdown
BREAKDOWN_FIGSIZE = (8, 6.5)  # two panels: training epoch split + test pass
DPI = 130
DEVICE_COLORS = {"cpu": "#4C72B0", "gpu": "#DD8452"}
NO_PAIRS_NOTE = "no CPU+GPU pairs in these results"


def _save(fig: plt.Figure, path: Path, tight: bool = True) -> Path:
    """Write `fig` as PNG (FIGSIZE-style inches x DPI pixels) and close it; tight=False for a figure laid
    out by matplotlib's constrained layout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=DPI, format="png")
    plt.close(fig)
    return path


def _finite(df: pd.DataFrame, col: str) -> pd.DataFrame:
    """Rows whose `col` is a finite number (NaN marks a missing device or measurement)."""
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
    return df[np.isfinite(values)]


def _short(text: str, limit: int = 38) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def speedup_vs_params(table: pd.DataFrame, path: Path) -> Path:
    """Log-log speedup (median CPU epoch s / median GPU epoch s) vs parameter count.

    One line per (batch_size, pipeline, precision) group that has at least one speedup, points labelled
    with the model, each with its bootstrap interval (speedup_low..speedup_high, where both are finite) as
    an error bar; the paper's three points are overlaid as black stars; y = 1 marks "no speedup"."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    ys = [1.0]
    paired = _finite(table, "speedup")
    ci_drawn = False
    groups = paired.groupby(["batch_size", "pipeline", "precision"], sort=True)
    for i, ((bs, pipeline, precision), g) in enumerate(groups):
        g = g.sort_values("params")
        (line,) = ax.plot(
            g["params"], g["speedup"], marker="o", label=f"ours: batch {bs}, {pipeline}, {precision}"
        )
        if {"speedup_low", "speedup_high"} <= set(g.columns):
            ci = _finite(_finite(g, "speedup_low"), "speedup_high")
            if not ci.empty:
                ax.errorbar(
                    ci["params"],
                    ci["speedup"],
                    yerr=[ci["speedup"] - ci["speedup_low"], ci["speedup_high"] - ci["speedup"]],
                    fmt="none",
                    ecolor=line.get_color(),
                    capsize=4,
                    label=None if ci_drawn else f"{CI_CONFIDENCE:.0%} bootstrap interval (error bars)",
                )
                ci_drawn = True
                ys.extend(ci["speedup_low"])
                ys.extend(ci["speedup_high"])
        for _, row in g.iterrows():
            ax.annotate(
                f"{row['model']} {row['speedup']:.2f}x",
                (row["params"], row["speedup"]),
                textcoords="offset points",
                xytext=(6, -12 - 10 * i),  # one line lower per group, so labels at one x do not overlap
                fontsize=8,
                color=line.get_color(),
            )
        ys.extend(g["speedup"])
    px = [p[2] for p in PAPER_POINTS]
    py = [p[3] for p in PAPER_POINTS]
    ax.scatter(px, py, marker="*", s=160, color="black", zorder=5, label="paper (CIFAR-10, 10 epochs)")
    for _, label, x, y, stated in PAPER_POINTS:
        ax.annotate(
            # left of the star: our points sit at nearly the same x and are labelled to the right
            f"{label}: {stated.split(' ')[0]}",
            (x, y),
            textcoords="offset points",
            xytext=(-8, 6),
            ha="right",
            fontsize=8,
        )
    ys.extend(py)
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1, label="y = 1 (GPU no faster than CPU)")
    if paired.empty:
        ax.text(
            0.45,
            0.72,  # above the paper's ResNet18 point, right of the legend
            NO_PAIRS_NOTE,
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=13,
            color="firebrick",
            bbox={"facecolor": "white", "edgecolor": "firebrick"},
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    xs = list(px) + list(paired["params"]) if not paired.empty else list(px)
    ax.set_xlim(min(xs) / 6, max(xs) * 3)  # room for the labels left (paper) and right (ours) of points
    ax.set_ylim(min(ys) / 2, max(ys) * 2)
    ax.set_xlabel("parameters")
    ax.set_ylabel("speedup (CPU epoch s / GPU epoch s)")
    ax.set_title("GPU speedup over CPU vs model size (median steady-state epoch time)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return _save(fig, path)


@dataclass
class _Layout:
    """Bar positions for per-cell bars grouped by model: [(x, cell row)], tick labels, model centres."""

    placed: list[tuple[float, pd.Series]]
    labels: list[str]
    centers: list[float]
    models: list[str]
    show_config: bool


def _layout(data: pd.DataFrame) -> _Layout:
    """One group per model ordered by params, one slot per cell ordered by device then config; a cell is
    labelled with its device, plus batch/pipeline/precision when the data holds more than one config."""
    show_config = len(data[["batch_size", "pipeline", "precision"]].drop_duplicates()) > 1
    models = data.sort_values(["params", "model"]).drop_duplicates("model")["model"].tolist()
    placed, labels, centers = [], [], []
    x = 0.0
    for model in models:
        cells = data[data["model"] == model].sort_values(["device", "batch_size", "pipeline", "precision"])
        start = x
        for _, cell in cells.iterrows():
            placed.append((x, cell))
            label = str(cell["device"]).upper()
            if show_config:
                label += f"\nbs{cell['batch_size']}\n{cell['pipeline']}\n{cell['precision']}"
            labels.append(label)
            x += 1.0
        centers.append((start + x - 1.0) / 2)
        x += 0.8  # gap between model groups
    return _Layout(placed, labels, centers, models, show_config)


def _label_cells(ax: plt.Axes, layout: _Layout, models: bool = True) -> None:
    """Cell labels under the bars and, with `models`, the model names in bold under them."""
    ax.set_xticks(
        [x for x, _ in layout.placed], layout.labels, fontsize=8 if len(layout.placed) <= 10 else 6.5
    )
    if models:
        models_axis = ax.secondary_xaxis("bottom")
        models_axis.set_xticks(layout.centers, layout.models, fontsize=10, fontweight="bold")
        models_axis.tick_params(axis="x", length=0, pad=48 if layout.show_config else 18)
        models_axis.spines["bottom"].set_visible(False)


def epoch_time(summary: pd.DataFrame, path: Path) -> Path:
    """Grouped bars of steady-state epoch seconds (median over non-warm-up epochs), log y scale.

    One group per model, ordered by params; one bar per cell of that model, coloured by device, labelled
    below with the device (plus batch/pipeline/precision when the results hold more than one such config),
    and the legend names the device models. Bars from warm-up epochs only are hatched; values from
    extrapolated (capped) epochs carry a "*"."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    data = _finite(summary, "epoch_s")
    if data.empty:
        ax.text(0.5, 0.5, "no epoch times in these results", transform=ax.transAxes, ha="center", fontsize=13)
        ax.set_axis_off()
        return _save(fig, path)
    layout = _layout(data)
    for x, cell in layout.placed:
        color = DEVICE_COLORS.get(cell["device"], "gray")
        ax.bar(x, cell["epoch_s"], width=0.8, color=color, hatch="//" if cell["warmup_only"] else None)
        value = f"{fmt_seconds(cell['epoch_s'])} s" + ("*" if cell.get("extrapolated", False) else "")
        ax.annotate(
            value, (x, cell["epoch_s"]), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=8
        )
    _label_cells(ax, layout)
    ax.set_yscale("log")
    lo, hi = data["epoch_s"].min(), data["epoch_s"].max()
    ax.set_ylim(lo / 3, hi * 3)
    ax.set_ylabel("steady-state epoch time (seconds, log scale)")
    ax.set_title("Training epoch time per model and device (median of non-warm-up epochs)")
    ax.grid(True, axis="y", which="major", alpha=0.3)
    handles = []
    for device, color in DEVICE_COLORS.items():
        names = ", ".join(sorted({n for n in data.loc[data["device"] == device, "device_names"] if n}))
        if (data["device"] == device).any():
            label = device.upper() + (f": {_short(names)}" if names else "")
            handles.append(plt.Rectangle((0, 0), 1, 1, color=color, label=label))
    if data["warmup_only"].any():
        handles.append(
            plt.Rectangle(
                (0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="//", label="warm-up epoch only"
            )
        )
    if "extrapolated" in data and data["extrapolated"].fillna(False).astype(bool).any():
        handles.append(
            plt.Rectangle((0, 0), 0, 0, fill=False, edgecolor="none", label="* extrapolated (--max-steps)")
        )
    ax.legend(handles=handles, fontsize=8, loc="upper left")
    return _save(fig, path)


# ---- figures drawn from the epoch rows ----------------------------------------------------------------

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
    """One row per cell: params, warmup_only and the medians over its steady epochs (stats.steady_epochs)
    of epoch_s, data_s, compute_s and eval_s; other_s = max(epoch_s - data_s - compute_s, 0), a missing
    data_s / compute_s counting as 0. The stacked data + compute + other is then the median epoch time."""
    columns = CELL + ["params", "epoch_s", "data_s", "compute_s", "other_s", "eval_s", "warmup_only"]
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    steady = steady_epochs(epochs)
    for col in ("epoch_s", "data_s", "compute_s", "eval_s"):
        steady[col] = _numeric(steady, col)
    medians = {col: (col, "median") for col in ("epoch_s", "data_s", "compute_s", "eval_s")}
    out = (
        steady.groupby(CELL, dropna=False, sort=False)
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
    data = data[_numeric(data, "epoch_s").gt(0).to_numpy()]
    if data.empty:
        _note(top, "no epoch times in these results")
        bottom.set_axis_off()
        return _save(fig, path, tight=False)
    layout = _layout(data)
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
        "Training epoch split per cell (medians of non-warm-up epochs; bar label = epoch time)",
        fontsize=10,
        pad=48,
    )
    top.grid(True, axis="y", alpha=0.3)
    _label_cells(top, layout)
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
    return _save(fig, path, tight=False)


def accuracy_per_epoch(epochs: pd.DataFrame, path: Path) -> Path:
    """Test accuracy after each epoch, one panel per model (ordered by params), CPU and GPU lines in the
    device colours; each point is the median over repeats of that cell's test_acc at that epoch. With
    several (batch, pipeline, precision) configs, each config gets its own line style."""
    acc = epochs.assign(test_acc=_numeric(epochs, "test_acc"))
    acc = acc[np.isfinite(acc["test_acc"].to_numpy(dtype=float))]
    if acc.empty:
        fig, ax = plt.subplots(figsize=FIGSIZE)
        _note(ax, "no test accuracy in these results")
        return _save(fig, path)
    curves = acc.groupby(CELL + ["epoch"], dropna=False)["test_acc"].median().reset_index()
    models = acc.sort_values(["params", "model"]).drop_duplicates("model")["model"].tolist()
    configs = sorted({(r.batch_size, r.pipeline, r.precision) for r in curves.itertuples()}, key=str)
    ncols = min(len(models), 3)
    nrows = math.ceil(len(models) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=FIGSIZE, sharey=True, squeeze=False)
    for ax, model in zip(axes.flat, models, strict=False):
        mine = curves[curves["model"] == model]
        for (device, bs, pipeline, precision), g in mine.groupby(CELL[1:], sort=True):
            style = LINESTYLES[configs.index((bs, pipeline, precision)) % len(LINESTYLES)]
            label = str(device).upper() + (f" bs{bs} {pipeline} {precision}" if len(configs) > 1 else "")
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
    for row in axes:
        row[0].set_ylabel("test accuracy (%)")
    for ax in list(axes.flat)[len(models) :]:
        ax.set_axis_off()
    fig.suptitle("Test accuracy after each epoch, CPU vs GPU (median over repeats)", fontsize=11)
    return _save(fig, path)


def batch_sizes(epochs: pd.DataFrame) -> list:
    """The distinct batch sizes of the epoch rows, ascending."""
    return sorted({int(b) for b in epochs.get("batch_size", pd.Series(dtype=float)).dropna()})


def throughput_applies(epochs: pd.DataFrame) -> bool:
    """throughput_vs_batch draws only when more than one batch size was swept."""
    return len(batch_sizes(epochs)) > 1


def throughput_vs_batch(epochs: pd.DataFrame, path: Path) -> Path | None:
    """Training throughput (median images_per_s of the steady epochs) against batch size, log-log: one
    line per model (colour), device (GPU solid with filled markers, CPU dashed with hollow ones) and
    pipeline/precision config (marker shape). None, and no file, when the results hold a single batch
    size (throughput_applies)."""
    if not throughput_applies(epochs):
        return None
    steady = steady_epochs(epochs)
    steady["images_per_s"] = _numeric(steady, "images_per_s")
    points = _finite(
        steady.groupby(CELL, dropna=False)["images_per_s"].median().reset_index(), "images_per_s"
    )
    fig, ax = plt.subplots(figsize=FIGSIZE)
    if points.empty:
        _note(ax, "no images/s in these results")
        return _save(fig, path)
    order = epochs.sort_values(["params", "model"]).drop_duplicates("model")["model"].tolist()
    colors = plt.get_cmap("tab10")
    configs = sorted({(r.pipeline, r.precision) for r in points.itertuples()})
    for (model, device, pipeline, precision), g in points.groupby(
        ["model", "device", "pipeline", "precision"]
    ):
        g = g.sort_values("batch_size")
        several = len(configs) > 1
        label = f"{model} {str(device).upper()}" + (f", {pipeline}, {precision}" if several else "")
        color = colors(order.index(model) % 10)
        ax.plot(
            g["batch_size"], g["images_per_s"], color=color, linestyle="-" if device == "gpu" else "--",
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
    return _save(fig, path)
