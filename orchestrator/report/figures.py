"""Report figures as PNG files (matplotlib, Agg backend: no display needed): the two drawn from the
summary tables, plus the style and layout shared with report.epoch_figures (the figures drawn from the
epoch rows).

    from orchestrator.analysis.stats import cell_summary
    from orchestrator.analysis.speedups import speedup_table
    from orchestrator.report import figures
    figures.speedup_vs_params(speedup_table(epochs), Path("out/speedup_vs_params.png"))
    figures.epoch_time(cell_summary(epochs), Path("out/epoch_time.png"))

Each function draws from the tables in analysis.stats and writes one file; the caller owns the path.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: headless servers and test runs have no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from orchestrator.analysis.pairing import (  # noqa: E402
    VARIANT_COLUMNS,
    class_label,
    pair_label,
    several_pairs,
    several_variants,
)
from orchestrator.analysis.speedups import CI_CONFIDENCE  # noqa: E402
from orchestrator.analysis.stats import PAPER_POINTS  # noqa: E402
from orchestrator.plan.axes import CONFIG_AXES as AXES  # noqa: E402
from orchestrator.report.formats import config_label, config_tags, fmt_seconds, variant_label  # noqa: E402
from orchestrator.results import rows  # noqa: E402
from orchestrator.results.rows import CONFIG  # noqa: E402

FIGSIZE = (8, 5)  # inches; every figure is FIGSIZE x DPI pixels except epoch_figures' breakdown
DPI = 130
DEVICE_COLORS = {"cpu": "#4C72B0", "gpu": "#DD8452"}
NO_PAIRS_NOTE = "no CPU+GPU pairs in these results"
# configurations (results.CONFIG: batch size, pipeline, precision, ...) a figure draws at most: 40 of
# them put 240 bars or 40 lines into one 8x5 inch figure, unreadable and ~8 s to render each
MAX_CONFIGS = 8
# what sets a cell's configuration apart on a figure: every grid axis (axes.CONFIG_AXES: all but the model
# and the device, which the figures show otherwise: x position, colour); a new axis separates lines and slots
CONFIG_AXES = [a.trial_field for a in AXES]


def focus(data: pd.DataFrame, limit: int = MAX_CONFIGS) -> tuple[pd.DataFrame, str]:
    """`data` (rows with the CONFIG columns) cut to at most `limit` configurations, and a note for the
    figure saying so ("" when nothing was cut): first each model's largest batch size (where the GPU is
    least held back by per-step overhead), then the first `limit` configurations in sorted order."""
    columns = [c for c in CONFIG if c in data]
    total = len(data[columns].drop_duplicates())
    if total <= limit:
        return data, ""
    largest = data.groupby("model")["batch_size"].transform("max")
    kept = data[(data["batch_size"] == largest).to_numpy()]
    configs = kept[columns].drop_duplicates().sort_values(columns).head(limit)
    kept = kept.merge(configs, on=columns, how="inner")
    shown = len(configs)
    return kept, (
        f"showing {shown} of {total} configurations (each model's largest batch size); "
        "report.md's tables list every one"
    )


def save(fig: plt.Figure, path: Path, tight: bool = True) -> Path:
    """Write `fig` as PNG (FIGSIZE-style inches x DPI pixels) and close it; tight=False for a figure laid
    out by matplotlib's constrained layout.

    The figure is laid out once, at the DPI it is drawn at, and then drawn once: at another DPI the
    layout's text sizes are measured again for the drawing, and a figure that keeps a layout engine is
    drawn twice by savefig (once to lay it out)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.set_dpi(DPI)
    if tight:
        fig.tight_layout()
    elif (engine := fig.get_layout_engine()) is not None:
        engine.execute(fig)
    fig.set_layout_engine(None)
    fig.savefig(path, dpi=DPI, format="png")
    plt.close(fig)
    return path


def finite(df: pd.DataFrame, col: str) -> pd.DataFrame:
    """Rows whose `col` is a finite number (NaN marks a missing device or measurement)."""
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
    return df[np.isfinite(values)]


def _short(text: str, limit: int = 38) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _wrap(name: str, width: int = 14) -> str:
    """A class name like "Xeon-Platinum-8480+-16c" on lines of at most `width` characters, broken after
    a "-" ("Xeon-Platinum-\n8480+-16c"), so neighbouring bar labels do not overlap."""
    lines = [""]
    for part in re.findall(r"[^-]+-?|-", name):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return "\n".join(lines)


def speedup_vs_params(table: pd.DataFrame, path: Path, scaling: pd.DataFrame | None = None) -> Path:
    """Log-log speedup (median CPU epoch s / median GPU epoch s) vs parameter count.

    One line per configuration (CONFIG_AXES: batch size, pipeline, precision, compile) and hardware pair
    (cpu_class, gpu_class, when the table has them) that has at least one speedup; the legend names the
    pair when there are several (pairing.several_pairs). Points are labelled with the model, each with
    its bootstrap interval (speedup_low..speedup_high, where both are finite) as an error bar; the
    paper's three points are overlaid as black stars; y = 1 marks "no speedup". `scaling`
    (analysis.scaling.scaling_table): each fitted power law is drawn dashed over its models' range,
    with its bootstrap band shaded."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    ys = [1.0]
    paired, cut = focus(rows.with_cell_defaults(finite(table, "speedup")))
    ci_drawn = False
    hw = ["cpu_class", "gpu_class"] if {"cpu_class", "gpu_class"} <= set(paired.columns) else []
    several = several_pairs(paired)  # of the lines drawn (focus may cut some), not model.several_pairs
    fed = several_variants(paired)  # a configuration fed several ways: a line per variant, named
    hw += VARIANT_COLUMNS if fed else []
    groups = paired.groupby(CONFIG_AXES + hw, sort=True)
    for key, g in groups:
        label = f"ours: {config_label(dict(zip(CONFIG_AXES, key, strict=False)))}" + (
            f"; {pair_label(*key[len(CONFIG_AXES) : len(CONFIG_AXES) + 2])}" if several else ""
        )
        label += f" ({variant_label(next(g.itertuples()))})" if fed else ""
        g = g.sort_values("params")
        (line,) = ax.plot(g["params"], g["speedup"], marker="o", label=label)
        if {"speedup_low", "speedup_high"} <= set(g.columns):
            ci = finite(finite(g, "speedup_low"), "speedup_high")
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
                # right of its own point, at its height: on the log axis, points of different groups at
                # one x are far enough apart; near the paper's star it moves away from it (_away)
                xytext=(-7 if (left := _near_star(row["params"], row["speedup"])) else 7, -3),
                ha="right" if left else "left",
                fontsize=8,
                color=line.get_color(),
                bbox={
                    "boxstyle": "round,pad=0.15",
                    "fc": "white",
                    "ec": "none",
                    "alpha": 0.85,
                },  # over the line
                zorder=4,
            )
        ys.extend(g["speedup"])
    ys.extend(_fitted_lines(ax, scaling, {key for key, _ in groups}, CONFIG_AXES + hw))
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
    ax.set_title("GPU speedup over CPU vs model size (median steady-state epoch time)" + _cut(cut))
    ax.grid(True, which="major", alpha=0.3)
    # below the axes, so it never covers a point or its label (the figure grows to hold it)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    return save(fig, path)


def _fitted_lines(ax: plt.Axes, scaling: pd.DataFrame | None, shown: set, keys: list[str]) -> list[float]:
    """Each fitted power law of `scaling` whose configuration (its `keys` values) is among the lines
    `shown`, dashed (speedup = e^a * params^b over its models' range) with its band shaded; returns the y
    values drawn (for the axis limits). Fits of configurations focus() left out are not drawn either:
    40 of them made a legend taller than the figure (~4 s to lay out at 100,800 rows)."""
    ys: list[float] = []
    if scaling is None or scaling.empty:
        return ys
    for r in scaling.itertuples():
        if r.band is None or tuple(getattr(r, k) for k in keys) not in shown:
            continue
        xs, low, high = r.band
        fitted = np.exp(r.intercept) * xs**r.exponent
        label = f"fit at {config_label(r)}: speedup ∝ params^{r.exponent:.2f}"
        (line,) = ax.plot(xs, fitted, linestyle="--", linewidth=1, label=label)
        ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
        ys.extend([float(np.min(low)), float(np.max(high))])
    return ys


def _cut(note: str) -> str:
    """A title's second line stating what focus() left out, or nothing."""
    return f"\n({note})" if note else ""


def _near_star(params: float, y: float) -> bool:
    """Whether our point at (params, y) sits by a paper star (within a factor 1.3 in x and 1.25 in y),
    whose marker, drawn above labels, would cover a label to the right: it then goes to the left."""
    return any(
        abs(math.log(params / px)) < math.log(1.3) and abs(math.log(y / py)) < math.log(1.25)
        for _, _, px, py, _ in PAPER_POINTS
    )


@dataclass
class CellLayout:
    """Bar positions for per-cell bars grouped by model: [(x, cell row)], tick labels, model centres."""

    placed: list[tuple[float, pd.Series]]
    labels: list[str]
    centers: list[float]
    models: list[str]
    show_config: bool
    show_class: bool = False


def cell_layout(data: pd.DataFrame) -> CellLayout:
    """One group per model ordered by params, one slot per cell ordered by device, hardware class, then
    config; a cell is labelled with its device, plus its hw_class when a device has more than one class
    in the data, plus its configuration (CONFIG_AXES: batch/pipeline/precision/compile) when the data
    holds more than one."""
    data = rows.with_cell_defaults(data)
    show_config = len(data[CONFIG_AXES].drop_duplicates()) > 1
    show_class = "hw_class" in data and bool((data.groupby("device")["hw_class"].nunique() > 1).any())
    order = ["device"] + (["hw_class"] if "hw_class" in data else []) + CONFIG_AXES
    models = data.sort_values(["params", "model"]).drop_duplicates("model")["model"].tolist()
    placed, labels, centers = [], [], []
    x = 0.0
    for model in models:
        cells = data[data["model"] == model].sort_values(order)
        start = x
        for _, cell in cells.iterrows():
            placed.append((x, cell))
            label = str(cell["device"]).upper()
            if show_class:
                label += "\n" + _wrap(class_label(cell["hw_class"]).split(":", 1)[-1])
            if show_config:
                label += "".join(f"\n{tag}" for tag in config_tags(cell, short=True))
            labels.append(label)
            x += 1.0
        centers.append((start + x - 1.0) / 2)
        x += 0.8  # gap between model groups
    return CellLayout(placed, labels, centers, models, show_config, show_class)


def label_cells(ax: plt.Axes, layout: CellLayout, models: bool = True) -> None:
    """Cell labels under the bars and, with `models`, the model names in bold under them."""
    ax.set_xticks(
        [x for x, _ in layout.placed], layout.labels, fontsize=8 if len(layout.placed) <= 10 else 6.5
    )
    if models:
        models_axis = ax.secondary_xaxis("bottom")
        models_axis.set_xticks(layout.centers, layout.models, fontsize=10, fontweight="bold")
        lines = max((label.count("\n") for label in layout.labels), default=0)  # under the device
        models_axis.tick_params(axis="x", length=0, pad=18 + 10 * lines)
        models_axis.spines["bottom"].set_visible(False)


def epoch_time(summary: pd.DataFrame, path: Path) -> Path:
    """Grouped bars of steady-state epoch seconds (median over non-warm-up epochs), log y scale.

    One group per model, ordered by params; one bar per cell of that model, coloured by device, labelled
    below with the device (plus batch/pipeline/precision when the results hold more than one such config),
    and the legend names the device models. Bars from warm-up epochs only are hatched; values from
    extrapolated (capped) epochs carry a "*"."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    data = finite(summary, "epoch_s")
    if data.empty:
        ax.text(0.5, 0.5, "no epoch times in these results", transform=ax.transAxes, ha="center", fontsize=13)
        ax.set_axis_off()
        return save(fig, path)
    data, cut = focus(data)
    layout = cell_layout(data)
    for x, cell in layout.placed:
        color = DEVICE_COLORS.get(cell["device"], "gray")
        ax.bar(x, cell["epoch_s"], width=0.8, color=color, hatch="//" if cell["warmup_only"] else None)
        value = f"{fmt_seconds(cell['epoch_s'])} s" + ("*" if cell.get("extrapolated", False) else "")
        ax.annotate(
            value, (x, cell["epoch_s"]), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=8
        )
    label_cells(ax, layout)
    ax.set_yscale("log")
    lo, hi = data["epoch_s"].min(), data["epoch_s"].max()
    ax.set_ylim(lo / 3, hi * 3)
    ax.set_ylabel("steady-state epoch time (seconds, log scale)")
    ax.set_title("Training epoch time per model and device (median of non-warm-up epochs)" + _cut(cut))
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
    return save(fig, path)
