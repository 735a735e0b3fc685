"""The report.md sections besides the results tables and figures: speedup by hardware class, comparison
with the paper, accuracy parity, compute efficiency, fidelity (from bench/fidelity.py's JSON files), notes,
environment and failed trial attempts. Each builder renders one Markdown section from the report model;
report.markdown puts them together.

    from orchestrator.report import sections
    print(sections.parity_section(model))          # model: report.model.build_model(...)
    if model.several_classes: print(sections.class_matrix_section(model))
    print(sections.md_table(["a", "b"], [["1", "2"]]))
"""

from __future__ import annotations

import math

import pandas as pd

from orchestrator.analysis.efficiency import PEAK_COLUMN
from orchestrator.analysis.fidelity import FIDELITY_BAR
from orchestrator.analysis.pairing import class_label, pair_label, speedup_matrices
from orchestrator.analysis.parity import EQUIVALENCE_MARGIN_PP, MIN_REPEATS, PARITY_CONFIDENCE, TOST_ALPHA
from orchestrator.analysis.speedups import CI_CONFIDENCE
from orchestrator.analysis.stats import PAPER_POINTS
from orchestrator.plan.axes import CONFIG_AXES, Axis
from orchestrator.plan.hints import resume_command
from orchestrator.report.formats import (
    DASH,
    axis_value,
    config_label,
    fmt_params,
    fmt_pct,
    fmt_seconds,
    fmt_speedup,
    fmt_speedup_ci,
    is_missing,
    variant_label,
)
from orchestrator.report.model import ENVIRONMENT, ReportModel
from orchestrator.results.rows import CONFIG


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; "|" and newlines inside a cell are escaped so they cannot break the row."""

    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def class_matrix_section(model: ReportModel) -> str:
    """Per (model, batch, pipeline, precision) measured on both devices (pairing.speedup_matrices): GPU
    classes as rows, CPU classes as columns, each entry the pair's speedup with its interval, or "—"."""
    parts = [
        "## Speedup by hardware class\n\n"
        "Some configurations ran on more than one CPU or GPU class (the hardware class of the node, "
        "e.g. from `benchctl sweep --per-class`). Classes are never pooled: each entry is the median CPU "
        "epoch time of the column's CPU class / the median GPU epoch time of the row's GPU class, with its "
        f"{CI_CONFIDENCE:.0%} bootstrap interval; {DASH} where that pair was not measured on both "
        "devices. Configurations measured on one device only are listed under Results.\n"
    ]
    for (name, *config), gpus, cpus, at in speedup_matrices(model.table):

        def entry(gpu: str, cpu: str, at=at) -> str:
            r = at.get((gpu, cpu))
            return DASH if r is None else fmt_speedup_ci(r.speedup, r.speedup_low, r.speedup_high)

        rows = [[class_label(gpu)] + [entry(gpu, cpu) for cpu in cpus] for gpu in gpus]
        header = ["GPU class / CPU class"] + [class_label(cpu) for cpu in cpus]
        title = f"### {name} ({config_label(dict(zip(CONFIG, config, strict=True)))})"
        title += f" ({variant_label(next(iter(at.values())))})" if model.several_variants and at else ""
        parts.append(f"{title}\n\n{md_table(header, rows)}\n")
    return "\n".join(parts)


def _shown_axes(model: ReportModel) -> list[Axis]:
    """The configuration axes a section's table shows: all but those every row holds unmarked (eager)."""
    return [a for a in CONFIG_AXES if a.trial_field not in model.unmarked_axes]


def _config_cells(r, axes: list[Axis]) -> list[str]:
    return [a.word(axis_value(r, a)) for a in axes]


def _hw(r, several: bool, fed: bool = False) -> str:
    """ "; gpu:H200 vs cpu:EPYC-7763-64c" for a table row when the table compares several hardware pairs,
    and "; CPU 2 workers, 16 CPUs; GPU 8 workers, 9 CPUs" when a configuration was fed several ways."""
    return (f"; {pair_label(r.cpu_class, r.gpu_class)}" if several else "") + (
        f"; {variant_label(r)}" if fed else ""
    )


def paper_section(model: ReportModel) -> str:
    rows = []
    table, several = model.table, model.several_pairs
    for name, _label, params, _value, stated in PAPER_POINTS:
        mine = table[table["model"] == name]
        ours = [
            f"{fmt_speedup(r.speedup)} ({config_label(r)}{_hw(r, several, model.several_variants)}; "
            + (
                f"CPU {fmt_seconds(r.cpu_epoch_s)} s, GPU {fmt_seconds(r.gpu_epoch_s)} s)"
                if r.cpu_n and r.gpu_n
                else f"only {'CPU' if r.cpu_n else 'GPU'} measured)"
            )
            for r in mine.itertuples()
        ]
        ours_params = fmt_params(mine["params"].max()) if len(mine) else DASH
        rows.append(
            [name, fmt_params(params), stated, ours_params, "<br>".join(ours) or f"{DASH} (not measured)"]
        )
    text = md_table(["model", "paper params", "paper speedup", "our params", "our speedup"], rows)
    return (
        "## Compared with the paper\n\n"
        + text
        + "\n\nThe paper's hardware differs from ours; compare the trend "
        "(speedup growing with parameter count) more than the exact values.\n"
    )


def _pp(x, sign: bool = True) -> str:
    """A percentage (point) value with 2 decimals, signed by default; never "-0.00"."""
    return DASH if is_missing(x) else f"{round(float(x), 2) + 0.0:{'+' if sign else ''}.2f}"


def _parity_sides(r) -> list[tuple[float, bool]]:
    return [(r.cpu_acc_pct, r.cpu_capped), (r.gpu_acc_pct, r.gpu_capped)]


def parity_section(model: ReportModel) -> str:
    """Final test accuracy CPU vs GPU per configuration: model.parity (analysis.parity.parity_table)."""
    axes = _shown_axes(model)
    header = ["model", *(a.column for a in axes), "CPU acc", "GPU acc", "diff pp"]
    header += [f"{PARITY_CONFIDENCE:.0%} CI pp", "verdict", "n CPU/GPU"]
    rows = []
    for r in model.parity.itertuples():
        apart = r.cpu_capped != r.gpu_capped  # a capped side's accuracy is not the device's: no diff
        accs = [f"{_pp(a, False)}%" + (" (capped)" if c else "") for a, c in _parity_sides(r)]
        rows.append(
            [r.model, *_config_cells(r, axes), *accs]
            + [DASH if apart else _pp(r.diff_pp)]
            + [DASH if apart or is_missing(r.ci_low_pp) else f"[{_pp(r.ci_low_pp)}, {_pp(r.ci_high_pp)}]"]
            + [r.verdict, f"{r.cpu_n}/{r.gpu_n}"]
        )
    margin = f"±{EQUIVALENCE_MARGIN_PP:g} pp"
    return (
        "## Accuracy parity\n\n"
        "Does training on the GPU reach the CPU's accuracy? Per run, the final accuracy is the test accuracy "
        "after its last epoch; **diff** = mean GPU − mean CPU over the runs, in percentage points (pp). "
        f"The {PARITY_CONFIDENCE:.0%} CI is a Welch t interval over the runs (2+ per side). **verdict**: "
        f"an equivalence test (TOST: two one-sided Welch t tests at {TOST_ALPHA:g}, i.e. the "
        f"{1 - 2 * TOST_ALPHA:.0%} interval inside {margin}) when each side has {MIN_REPEATS}+ runs; "
        f'"not shown equivalent" means a gap of {margin} or more is not ruled out (often: too few or too '
        f'noisy repeats), not that a gap was found; "n<{MIN_REPEATS}" gives no verdict; "not comparable" '
        "means one side's runs were capped (--max-steps, marked (capped)) and the other's were not, so "
        "the gap says how many steps ran, not which device trained better.\n\n"
        + (
            md_table(header, rows)
            if rows
            else "No configuration ran on both CPU and GPU: nothing to compare."
        )
        + "\n"
    )


def efficiency_section(model: ReportModel) -> str:
    """Achieved TFLOP/s and MFU per cell and device name: model.efficiency (analysis.efficiency)."""
    axes = _shown_axes(model)
    header = ["model", *(a.column for a in axes), "device", "device name", "GFLOP/train image"]
    header += ["images/s", "achieved TFLOP/s", "peak TFLOP/s", "MFU"]
    several = model.efficiency_classes  # their rows show the class
    rows = [
        [r.model, *_config_cells(r, axes), r.device.upper()]
        + [_device_name(r, several), fmt_seconds(r.gflop_per_image)]
        + [fmt_seconds(r.images_per_s), fmt_seconds(r.achieved_tflops)]
        + [DASH if is_missing(r.peak_tflops) else f"{r.peak_tflops:g} ({PEAK_COLUMN[r.precision].upper()})"]
        + [fmt_pct(r.mfu)]
        for r in model.efficiency.itertuples()
    ]
    return (
        "## Compute efficiency\n\n"
        "**GFLOP/train image** = forward + backward FLOPs of one 32×32 training image (matrix products "
        "only: convolutions and linear layers, 2 FLOPs per multiply-add; counted by PyTorch's "
        "FlopCounterMode). **images/s** = median over the cell's non-warm-up epochs (input waits included). "
        "**achieved TFLOP/s** = GFLOP/train image × images/s / 1000. **MFU** = achieved / peak dense "
        "TFLOP/s of the GPU from its datasheet (orchestrator/analysis/efficiency.py): the BF16 tensor-core "
        "peak for amp, the FP32 non-tensor peak for fp32. cuDNN may run fp32 convolutions on TF32 tensor "
        "cores (PyTorch's default), so fp32 MFU can exceed what the FP32 peak suggests, even 100%; it is "
        "shown as measured. No MFU (—) for CPUs and GPUs without a tabulated peak.\n\n"
        + md_table(header, rows)
        + "\n"
    )


def _device_name(r, several: frozenset) -> str:
    """An efficiency row's device name, with its hardware class when its device has several classes."""
    name = DASH if is_missing(r.device_name) else str(r.device_name)
    return f"{name} ({class_label(r.hw_class)})" if r.device in several else name


def _fixed(x: float, decimals: int) -> str:
    return f"{float(x):.{decimals}f}" if math.isfinite(float(x)) else DASH


def fidelity_section(model: ReportModel) -> str:
    """model.fidelity's rows (analysis.fidelity), with the file of each when there are several."""
    found = model.fidelity
    low, high = FIDELITY_BAR
    several = len(found) > 1
    header = ["cell", "threads", "workers", "benchctl img/s", "plain img/s", "ratio", f"within {low}–{high}"]
    rows = []
    for path, entries in found:
        for e in entries:
            row = [
                e["cell"],
                str(e["torch_threads"]),
                str(e["data_workers"]),
                _fixed(e["benchctl_ips"], 0),
                _fixed(e["plain_ips"], 0),
                _fixed(e["ratio"], 3),
                e.get("verdict", "yes" if e["within_bar"] else "NO"),
            ]
            rows.append(row + ([f"{path.parent.name}/{path.name}"] if several else []))
    table = md_table(header + (["file"] if several else []), rows) if rows else "The file lists no cells."
    return (
        "## Fidelity: benchctl vs a plain PyTorch loop\n\n"
        "ratio = median benchctl steady-state images/s / median plain-loop images/s (bench/fidelity.py), "
        "same machine, same settings. From paired rounds (bench/fidelity_pairs.py) the ratio is the median "
        'of the pairs\' ratios, and "unresolved" means it is outside the bar but its 95% interval still '
        "reaches into it: the host's own run-to-run noise is too large for the pairs to tell.\n\n"
        + table
        + "\n"
    )


def _cut_short(model: ReportModel, sweep: str, trial: str) -> str:
    """` (k of N epochs on disk)` for a planned trial whose attempts were cut after k epochs (model.cut:
    over all its attempts), else ""."""
    done, planned = model.cut.get((sweep, trial), (0, 0))
    return f" ({done} of {planned} epochs on disk, in no statistic)" if done > 0 else ""


def notes_section(model: ReportModel) -> str:
    """Flags per cell, one-sided cells, pooled hosts, and planned trials without a result
    (model.unfinished), with the epochs a cut one left (model.cut)."""
    notes = []
    several, unfinished = model.several_pairs, model.unfinished
    for r in model.table.itertuples():
        name = f"{r.model} ({config_label(r)}{_hw(r, several)})"
        if r.flags:
            notes.append(f"- {name}: {r.flags}")
        for dev, other in (("cpu", "gpu"), ("gpu", "cpu")):
            if getattr(r, f"{dev}_n") == 0:
                notes.append(f"- {name}: no {dev.upper()} measurement, so no speedup (only {other.upper()})")
    if (model.summary["hosts"].str.contains(",")).any():
        notes.append("- some cells pool epochs from several hosts (see Environment)")
    for d in dict.fromkeys(d for d, _ in unfinished or []):
        ids = [t for dd, t in unfinished if dd == d]
        notes.append(
            f"- {len(ids)} trial(s) planned in {d.name}/spec.json have no completed attempt in these results "
            f"(the sweep stopped early, or they failed): "
            f"{', '.join(f'`{t}`' + _cut_short(model, d.name, t) for t in ids)}; "
            f"`{resume_command(d)}` completes them, continuing each cut trial from its last epoch "
            "checkpoint"
        )
    return (
        "## Notes\n\n"
        + ("\n".join(notes) if notes else "No flags: every number is a full, measured epoch.")
        + "\n"
    )


def _distinct(df: pd.DataFrame, col: str) -> str:
    if col not in df:
        return DASH
    values = sorted({str(v) for v in df[col].unique() if not is_missing(v) and str(v)})  # distinct first
    return ", ".join(f"`{v}`" for v in values) if values else DASH


def environment_section(model: ReportModel) -> str:
    epochs, trials = model.epochs, model.trials
    source = trials if not trials.empty else epochs
    lines = ["## Environment\n"]
    lines.append(f"- hosts: {_distinct(pd.concat([epochs[['host']], source[['host']]]), 'host')}")
    for dev in ("cpu", "gpu"):
        lines.append(f"- {dev.upper()} devices: {_distinct(epochs[epochs['device'] == dev], 'device_name')}")
    for col, label in ENVIRONMENT.items():
        lines.append(f"- {label}: {_distinct(trials, col)}")
    lines.append(f"- energy notes (why an energy column is empty): {_energy_notes(trials)}")
    return "\n".join(lines) + "\n"


def _energy_notes(trials: pd.DataFrame) -> str:
    """Distinct reasons from trials.energy_notes (each a "; "-joined list), once each; "none" if none."""
    if "energy_notes" not in trials:
        return "none"
    reasons = {
        part.strip()
        for notes in trials["energy_notes"]
        if not is_missing(notes)
        for part in str(notes).split("; ")
        if part.strip()
    }
    return "; ".join(sorted(reasons)) or "none"


def failures_section(model: ReportModel) -> str:
    trials = model.trials
    failed = trials[trials["status"] == "error"] if not trials.empty else trials
    if failed.empty:
        return "## Failed trial attempts\n\nNone.\n"
    rows = [
        [r.trial, str(r.attempt), r.host or DASH, (str(r.error or "").strip() or "(no message)")[:400]]
        for r in failed.sort_values(["trial", "attempt"]).itertuples()
    ]
    return (
        f"## Failed trial attempts ({len(rows)})\n\n"
        + md_table(["trial", "attempt", "host", "error"], rows)
        + "\n"
    )


def compile_gain_section(model: ReportModel) -> str:
    """Eager against compiled, per cell measured both ways: model.compile_gain (analysis.compile_gain)."""
    axes = [a for a in _shown_axes(model) if a.trial_field != "compile"]  # eager and compiled: its two sides
    header = ["model", "device", *(a.column for a in axes), "eager img/s", "compiled img/s", "gain"]
    header += ["compile s", "pays off after"]
    rows = [
        [r.model, r.device.upper() + (f" ({class_label(r.hw_class)})" if r.hw_class else ""),
         *_config_cells(r, axes), fmt_seconds(r.eager_ips), fmt_seconds(r.compiled_ips),
         f"{r.gain:.2f}x", fmt_seconds(r.compile_s),
         "never" if is_missing(r.payoff_epochs) else f"{r.payoff_epochs:.1f} epochs"]
        for r in model.compile_gain.itertuples()
    ]  # fmt: skip
    return (
        "## Compiled against eager\n\n"
        "**gain** = compiled images/s / eager images/s (medians over each cell's steady epochs; compiled "
        "epochs leave out a last partial batch, so images/s, not epoch time, is compared). **compile s** = "
        "the compiled trials' median `compile_s`: compiling before epoch 1, outside every epoch and every "
        "statistic above (a node's Inductor cache makes later trials of the same model and batch compile "
        "faster). **pays off after** = compile s / the seconds compiling saves per epoch: the epochs after "
        "which compiling has paid for itself (never: it saved nothing).\n\n" + md_table(header, rows) + "\n"
    )
