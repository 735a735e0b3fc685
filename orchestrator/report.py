"""Build the speedup report of one or more sweeps: report.md, report.html, PNG figures, a terminal table.

    from orchestrator.report import build_report
    report = build_report([Path("results/s1")], Path("reports/s1"))
    print(report.terminal_text)        # reports/s1/report.md, report.html, figures/*.png
    build_report(dirs, out, formats=[ReportFormat.md])   # report.md only (figures are always written)

Nothing is written until every number and figure is computed; figures are rendered into a hidden
staging folder and report.md goes through a temp file, each moved into place with os.replace.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import pandas as pd

from orchestrator import figures, narrative
from orchestrator.html import write_html
from orchestrator.parity import (
    EQUIVALENCE_MARGIN_PP,
    MIN_REPEATS,
    PARITY_CONFIDENCE,
    TOST_ALPHA,
    parity_table,
)
from orchestrator.peaks import PEAK_COLUMN, efficiency_table
from orchestrator.results import ResultsError, read_results
from orchestrator.stats import (
    CI_CONFIDENCE,
    CI_RESAMPLES,
    DASH,
    INPUT_BOUND_SHARE,
    NOISY_IQR_SHARE,
    PAPER_POINTS,
    cell_summary,
    fmt_params,
    fmt_pct,
    fmt_seconds,
    fmt_speedup,
    fmt_speedup_ci,
    fmt_util,
    is_missing,
    ok_epochs,
    speedup_table,
)


class ReportFormat(str, Enum):
    """Documents build_report writes besides the figures (`benchctl report --format md,html`)."""

    md = "md"  # report.md, figures linked from figures/
    html = "html"  # report.html: the same content, one self-contained file (figures embedded)


FIGURES = {
    "speedup": "figures/speedup_vs_params.png",
    "epoch_time": "figures/epoch_time.png",
    "breakdown": "figures/epoch_breakdown.png",
    "accuracy": "figures/accuracy_per_epoch.png",
    "throughput": "figures/throughput_vs_batch.png",  # only when more than one batch size was swept
}
# key -> (alt text, one-line caption) in report.md
CAPTIONS = {
    "speedup": (
        "speedup vs parameters",
        "Speedup vs parameter count (log-log); error bars are the 95% bootstrap intervals, black stars the "
        "paper's ~2x / >7x / 40.6x.",
    ),
    "epoch_time": ("epoch time per model and device", "Median steady-state epoch time per cell (log scale)."),
    "breakdown": (
        "epoch-time breakdown",
        f"Each cell's epoch split into data wait / compute / other (dashed line: the "
        f"{INPUT_BOUND_SHARE:.0%} input-bound threshold), with the test pass in seconds below.",
    ),
    "accuracy": (
        "test accuracy per epoch",
        "Test accuracy after each epoch, CPU vs GPU, one panel per model (median over repeats).",
    ),
    "throughput": (
        "throughput vs batch size",
        "Training images/s against batch size per model and device (median of non-warm-up epochs).",
    ),
}
_DRAW = {  # key -> draw(table, summary, epochs, path); looked up on the module at call time
    "speedup": lambda table, summary, epochs, path: figures.speedup_vs_params(table, path),
    "epoch_time": lambda table, summary, epochs, path: figures.epoch_time(summary, path),
    "breakdown": lambda table, summary, epochs, path: figures.epoch_breakdown(epochs, path),
    "accuracy": lambda table, summary, epochs, path: figures.accuracy_per_epoch(epochs, path),
    "throughput": lambda table, summary, epochs, path: figures.throughput_vs_batch(epochs, path),
}
FIDELITY_GLOB = "fidelity*.json"  # written by bench/fidelity.py into a results directory
FIDELITY_BAR = (0.97, 1.03)  # bench/fidelity.py's LOW, HIGH


@dataclass
class Report:
    table: pd.DataFrame  # orchestrator.stats.speedup_table
    summary: pd.DataFrame  # orchestrator.stats.cell_summary
    paths: list[Path] = field(default_factory=list)  # report.md, report.html (those written), figures
    terminal_text: str = ""


# ---- formatting -------------------------------------------------------------------------------------


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _aligned(header: list[str], rows: list[list[str]], left: int) -> str:
    """Plain-text table; the first `left` columns are left-aligned (text), the rest right-aligned."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i < left else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]).rstrip()


# ---- sections ---------------------------------------------------------------------------------------

HOW_TO_READ = f"""## How to read this

- **speedup** = CPU epoch time / GPU epoch time, where each epoch time is the **median** of the cell's
  non-warm-up epochs pooled across repeats. CPU and GPU are paired only when model, batch size, input
  pipeline and precision all match; a model measured on one device only shows "—".
- **[low–high]** after a speedup is its {CI_CONFIDENCE:.0%} bootstrap interval: the non-warm-up epoch
  samples (all epochs of all repeats) of each side are resampled with replacement, {CI_RESAMPLES}
  times with a fixed seed (so the same results always give the same interval), and the interval spans
  the central {CI_CONFIDENCE:.0%} of median(CPU resample) / median(GPU resample). It reflects the
  epoch-to-epoch and repeat-to-repeat spread on this machine, not other hardware. No bracket means a
  side has fewer than 2 samples.
- **noisy** = on that side the interquartile range (q75 − q25) of the epoch times is more than
  {NOISY_IQR_SHARE:.0%} of their median. **single-sample** = that side has only one epoch time, so no
  interval can be computed; run more epochs or repeats.
- **Epoch 1 is warm-up** (one-time costs such as cuDNN autotuning and cache filling) and is excluded.
  A cell that ran only one epoch is shown from its warm-up epoch and flagged "warm-up only".
- **data-wait share** = fraction of the epoch the device waited for input (including the host-to-device
  copy). A high share means the input pipeline, not the device, limits speed; a GPU cell above
  {INPUT_BOUND_SHARE:.0%} is called **input-bound**.
- **extrapolated** = the epoch was capped with `--max-steps` and its time scaled to a full epoch.
  **partial-eval** = accuracy comes from a capped test pass (part of the test set).
  **overlapped** = a run of that side shared its host with another trial while it ran (`--placement
  packed` or `partitioned`; the trials table's `overlapped_with` names them): its time may be distorted.
- Accuracy is the test accuracy after the last epoch, averaged over repeats; the test pass is not timed
  inside the epoch time.
- **GPU J/epoch** = median GPU energy per epoch from NVML's energy counter (the GPU board only), scaled
  to the full epoch like the epoch time; **GPU util** = median of the mean NVML utilization per epoch.
  CPU energy is the RAPL energy of all CPU packages (other processes included), only where RAPL is
  readable. **energy speedup** = CPU epoch energy (CPU packages) / GPU epoch energy (GPU + CPU
  packages); it needs both counters on both sides, else "—" (GPU energy alone would flatter the GPU).
  Why a counter was unreadable is listed under Environment.
"""


# Every column a results table can show: header -> how one speedup-table row renders in it.
_COLUMNS = {
    "model": lambda r: r.model,
    "params": lambda r: fmt_params(r.params),
    "batch": lambda r: str(r.batch_size),
    "pipeline": lambda r: r.pipeline,
    "precision": lambda r: r.precision,
    "CPU epoch s": lambda r: fmt_seconds(r.cpu_epoch_s),
    "GPU epoch s": lambda r: fmt_seconds(r.gpu_epoch_s),
    "speedup": lambda r: fmt_speedup_ci(r.speedup, r.speedup_low, r.speedup_high),
    "CPU acc": lambda r: fmt_pct(r.cpu_acc),
    "GPU acc": lambda r: fmt_pct(r.gpu_acc),
    "CPU data-wait": lambda r: fmt_pct(r.cpu_data_share, 0),
    "GPU data-wait": lambda r: fmt_pct(r.gpu_data_share, 0),
    "GPU J/epoch": lambda r: fmt_seconds(r.gpu_energy_j),
    "GPU util": lambda r: fmt_util(r.gpu_util_pct),
    "energy speedup": lambda r: fmt_speedup(r.energy_speedup),
    "n CPU/GPU": lambda r: f"{r.cpu_n}/{r.gpu_n}",
    "flags": lambda r: r.flags or "",
}
_TERMINAL = {"CPU epoch s": "CPU s", "GPU epoch s": "GPU s", "GPU J/epoch": "GPU J"}  # short headers


def _rows(table: pd.DataFrame, columns: list[str]) -> list[list[str]]:
    return [[_COLUMNS[c](r) for c in columns] for r in table.itertuples()]


def _table_section(table: pd.DataFrame) -> str:
    columns = list(_COLUMNS)
    return "## Results\n\n" + _md_table(columns, _rows(table, columns)) + "\n"


def _figure_keys(epochs: pd.DataFrame) -> list[str]:
    """The FIGURES that apply to these epochs, in order (throughput only with several batch sizes)."""
    return [key for key in FIGURES if key != "throughput" or figures.throughput_applies(epochs)]


def _figures_section(keys: list[str]) -> str:
    items = [f"![{CAPTIONS[k][0]}]({FIGURES[k]})\n\n*{CAPTIONS[k][1]}*\n" for k in keys]
    return "## Figures\n\n" + "\n".join(items)


def _paper_section(table: pd.DataFrame) -> str:
    rows = []
    for model, _label, params, _value, stated in PAPER_POINTS:
        mine = table[table["model"] == model]
        ours = [
            f"{fmt_speedup(r.speedup)} (batch {r.batch_size}, {r.pipeline}, {r.precision}; "
            + (
                f"CPU {fmt_seconds(r.cpu_epoch_s)} s, GPU {fmt_seconds(r.gpu_epoch_s)} s)"
                if r.cpu_n and r.gpu_n
                else f"only {'CPU' if r.cpu_n else 'GPU'} measured)"
            )
            for r in mine.itertuples()
        ]
        ours_params = fmt_params(mine["params"].max()) if len(mine) else DASH
        rows.append(
            [model, fmt_params(params), stated, ours_params, "<br>".join(ours) or f"{DASH} (not measured)"]
        )
    text = _md_table(["model", "paper params", "paper speedup", "our params", "our speedup"], rows)
    return (
        "## Compared with the paper\n\n"
        + text
        + "\n\nThe paper's hardware differs from ours; compare the trend "
        "(speedup growing with parameter count) more than the exact values.\n"
    )


def _pp(x, sign: bool = True) -> str:
    """A percentage (point) value with 2 decimals, signed by default; never "-0.00"."""
    return DASH if is_missing(x) else f"{round(float(x), 2) + 0.0:{'+' if sign else ''}.2f}"


def _parity_section(epochs: pd.DataFrame) -> str:
    """Final test accuracy CPU vs GPU per configuration: orchestrator.parity.parity_table."""
    header = ["model", "batch", "pipeline", "precision", "CPU acc", "GPU acc", "diff pp"]
    header += [f"{PARITY_CONFIDENCE:.0%} CI pp", "verdict", "n CPU/GPU"]
    rows = [
        [r.model, str(r.batch_size), r.pipeline, r.precision, f"{_pp(r.cpu_acc_pct, False)}%"]
        + [f"{_pp(r.gpu_acc_pct, False)}%", _pp(r.diff_pp)]
        + [DASH if is_missing(r.ci_low_pp) else f"[{_pp(r.ci_low_pp)}, {_pp(r.ci_high_pp)}]"]
        + [r.verdict, f"{r.cpu_n}/{r.gpu_n}"]
        for r in parity_table(epochs).itertuples()
    ]
    margin = f"±{EQUIVALENCE_MARGIN_PP:g} pp"
    return (
        "## Accuracy parity\n\n"
        "Does training on the GPU reach the CPU's accuracy? Per run, the final accuracy is the test accuracy "
        "after its last epoch; **diff** = mean GPU − mean CPU over the runs, in percentage points (pp). "
        f"The {PARITY_CONFIDENCE:.0%} CI is a Welch t interval over the runs (2+ per side). **verdict**: "
        f"an equivalence test (TOST: two one-sided Welch t tests at {TOST_ALPHA:g}, i.e. the "
        f"{1 - 2 * TOST_ALPHA:.0%} interval inside {margin}) when each side has {MIN_REPEATS}+ runs; "
        f'"not shown equivalent" means a gap of {margin} or more is not ruled out (often: too few or too '
        f'noisy repeats), not that a gap was found; "n<{MIN_REPEATS}" gives no verdict.\n\n'
        + (
            _md_table(header, rows)
            if rows
            else "No configuration ran on both CPU and GPU: nothing to compare."
        )
        + "\n"
    )


def _efficiency_section(epochs: pd.DataFrame) -> str:
    """Achieved TFLOP/s and MFU per cell and device name: orchestrator.peaks.efficiency_table."""
    header = ["model", "batch", "pipeline", "precision", "device", "device name", "GFLOP/train image"]
    header += ["images/s", "achieved TFLOP/s", "peak TFLOP/s", "MFU"]
    rows = [
        [r.model, str(r.batch_size), r.pipeline, r.precision, r.device.upper()]
        + [DASH if is_missing(r.device_name) else str(r.device_name), fmt_seconds(r.gflop_per_image)]
        + [fmt_seconds(r.images_per_s), fmt_seconds(r.achieved_tflops)]
        + [DASH if is_missing(r.peak_tflops) else f"{r.peak_tflops:g} ({PEAK_COLUMN[r.precision].upper()})"]
        + [fmt_pct(r.mfu)]
        for r in efficiency_table(epochs).itertuples()
    ]
    return (
        "## Compute efficiency\n\n"
        "**GFLOP/train image** = forward + backward FLOPs of one 32×32 training image (matrix products "
        "only: convolutions and linear layers, 2 FLOPs per multiply-add; counted by PyTorch's "
        "FlopCounterMode). **images/s** = median over the cell's non-warm-up epochs (input waits included). "
        "**achieved TFLOP/s** = GFLOP/train image × images/s / 1000. **MFU** = achieved / peak dense "
        "TFLOP/s of the GPU from its datasheet (orchestrator/peaks.py): the BF16 tensor-core peak for amp, "
        "the FP32 non-tensor peak for fp32. cuDNN may run fp32 convolutions on TF32 tensor cores (PyTorch's "
        "default), so fp32 MFU can exceed what the FP32 peak suggests, even 100%; it is shown as measured. "
        "No MFU (—) for CPUs and GPUs without a tabulated peak.\n\n" + _md_table(header, rows) + "\n"
    )


def _fidelity_rows(path: Path) -> list[dict]:
    """The rows of one bench/fidelity.py JSON file, validated; ResultsError naming the file if malformed.
    Plain json.loads: nothing is unpickled or executed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: not a readable fidelity JSON file ({exc}); fix or move it") from None
    if not isinstance(data, list):
        raise ResultsError(f"{path}: a fidelity file holds a JSON list of cells, found {type(data).__name__}")
    kinds = {
        "cell": (str,),
        "torch_threads": (int,),
        "data_workers": (int,),
        "benchctl_ips": (int, float),
        "plain_ips": (int, float),
        "ratio": (int, float),
        "within_bar": (bool,),
    }
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise ResultsError(f"{path}: entry {i} is {type(row).__name__}, not an object")
        for key, types in kinds.items():
            value = row.get(key)
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise ResultsError(
                    f"{path}: entry {i} ({row.get('cell', '?')}): `{key}` missing or not "
                    f"{'/'.join(t.__name__ for t in types)} (got {value!r})"
                )
    return data


def _read_fidelity(results_dirs: list[Path]) -> list[tuple[Path, list[dict]]]:
    """(file, rows) for every fidelity*.json in the results dirs, each file once, in a stable order."""
    files = dict.fromkeys(f.resolve() for d in results_dirs for f in sorted(Path(d).glob(FIDELITY_GLOB)))
    return [(f, _fidelity_rows(f)) for f in files if f.is_file()]


def _fixed(x: float, decimals: int) -> str:
    return f"{float(x):.{decimals}f}" if math.isfinite(float(x)) else DASH


def _fidelity_section(found: list[tuple[Path, list[dict]]]) -> str:
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
                "yes" if e["within_bar"] else "NO",
            ]
            rows.append(row + ([f"{path.parent.name}/{path.name}"] if several else []))
    table = _md_table(header + (["file"] if several else []), rows) if rows else "The file lists no cells."
    return (
        "## Fidelity: benchctl vs a plain PyTorch loop\n\n"
        "ratio = median benchctl steady-state images/s / median plain-loop images/s (bench/fidelity.py), "
        "same machine, same settings.\n\n" + table + "\n"
    )


def _notes_section(table: pd.DataFrame, summary: pd.DataFrame) -> str:
    notes = []
    for r in table.itertuples():
        name = f"{r.model} (batch {r.batch_size}, {r.pipeline}, {r.precision})"
        if r.flags:
            notes.append(f"- {name}: {r.flags}")
        for dev, other in (("cpu", "gpu"), ("gpu", "cpu")):
            if getattr(r, f"{dev}_n") == 0:
                notes.append(f"- {name}: no {dev.upper()} measurement, so no speedup (only {other.upper()})")
    if (summary["hosts"].str.contains(",")).any():
        notes.append("- some cells pool epochs from several hosts (see Environment)")
    return (
        "## Notes\n\n"
        + ("\n".join(notes) if notes else "No flags: every number is a full, measured epoch.")
        + "\n"
    )


def _distinct(df: pd.DataFrame, col: str) -> str:
    if col not in df:
        return DASH
    values = sorted({str(v) for v in df[col] if not is_missing(v) and str(v)})
    return ", ".join(f"`{v}`" for v in values) if values else DASH


def _environment_section(epochs: pd.DataFrame, trials: pd.DataFrame) -> str:
    source = trials if not trials.empty else epochs
    lines = ["## Environment\n"]
    lines.append(f"- hosts: {_distinct(pd.concat([epochs[['host']], source[['host']]]), 'host')}")
    for dev in ("cpu", "gpu"):
        lines.append(f"- {dev.upper()} devices: {_distinct(epochs[epochs['device'] == dev], 'device_name')}")
    for col, label in [
        ("cpu_model", "CPU models"),
        ("gpu_name", "GPU names"),
        ("gpu_driver", "GPU driver"),
        ("cuda_runtime", "CUDA runtime"),
        ("torch", "torch"),
        ("torchvision", "torchvision"),
        ("ray", "ray"),
        ("python", "python"),
        ("git_commit", "git commit"),
    ]:
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


def _failures_section(trials: pd.DataFrame) -> str:
    failed = trials[trials["status"] == "error"] if not trials.empty else trials
    if failed.empty:
        return "## Failed trial attempts\n\nNone.\n"
    rows = [
        [r.trial, str(r.attempt), r.host or DASH, (str(r.error or "").strip() or "(no message)")[:400]]
        for r in failed.sort_values(["trial", "attempt"]).itertuples()
    ]
    return (
        f"## Failed trial attempts ({len(rows)})\n\n"
        + _md_table(["trial", "attempt", "host", "error"], rows)
        + "\n"
    )


def terminal_table(table: pd.DataFrame) -> str:
    """The speedup table as aligned plain text for a terminal (GPU J = median GPU joules per epoch)."""
    columns = [
        "model",
        "params",
        "batch",
        "pipeline",
        "precision",
        "CPU epoch s",
        "GPU epoch s",
        "speedup",
        "CPU acc",
        "GPU acc",
        "GPU J/epoch",
    ]
    header = [_TERMINAL.get(c, c) for c in columns]
    rows = _rows(table, columns)
    text = _aligned(header, rows, left=1)
    flagged = [
        f"  {r.model} bs{r.batch_size} {r.pipeline} {r.precision}: {r.flags}"
        for r in table.itertuples()
        if r.flags
    ]
    if flagged:
        text += "\nflags:\n" + "\n".join(flagged)
    return text


# ---- entry point ------------------------------------------------------------------------------------


def _read_all(results_dirs: list[Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    if not results_dirs:
        raise ResultsError(
            "no results directories given; pass the folder(s) a sweep wrote, e.g. results/<sweep>"
        )
    pairs = [read_results(Path(d)) for d in results_dirs]  # a ResultsError propagates unchanged
    epochs = pd.concat([e for e, _ in pairs if not e.empty] or [pairs[0][0]], ignore_index=True)
    trials = pd.concat([t for _, t in pairs if not t.empty] or [pairs[0][1]], ignore_index=True)
    if not trials.empty:
        trials = trials.drop_duplicates(subset=["sweep", "trial", "attempt"]).reset_index(drop=True)
    return epochs, trials


def build_report(
    results_dirs: list[Path], out_dir: Path, formats: Iterable[ReportFormat | str] = tuple(ReportFormat)
) -> Report:
    """Read the sweeps, compute the tables, write out_dir/report.md and/or out_dir/report.html (formats)
    and out_dir/figures/*.png (always; a figure that does not apply is not drawn and a stale copy of it is
    removed)."""
    wanted = {ReportFormat(f) for f in formats}
    docs = [f"report.{f.value}" for f in ReportFormat if f in wanted]
    epochs, trials = _read_all(results_dirs)
    epochs = ok_epochs(epochs, trials)
    if epochs.empty:
        n_failed = int((trials["status"] == "error").sum()) if not trials.empty else 0
        raise ResultsError(
            f"{', '.join(str(d) for d in results_dirs)}: no completed epochs to report "
            f"({n_failed} failed trial attempt(s)); check the errors in trials/*.parquet, fix them "
            "and run the sweep again"
        )
    fidelity = _read_fidelity(results_dirs)  # a malformed file fails here, before anything is written
    summary = cell_summary(epochs)
    table = speedup_table(epochs)
    sweeps = sorted({str(s) for s in pd.concat([epochs["sweep"], trials.get("sweep", pd.Series())]).dropna()})
    n_runs = epochs[["sweep", "trial", "attempt"]].drop_duplicates().shape[0]
    datasets = ", ".join(sorted({str(d) for d in epochs["dataset"].dropna()})) or DASH
    markdown = "\n".join(
        [
            f"# GPU vs CPU training speedup: {', '.join(sweeps)}\n",
            f"Sweep(s): {', '.join(f'`{s}`' for s in sweeps)}. Dataset: {datasets}. "
            f"{len(epochs)} epoch rows from {n_runs} completed trial attempts.\n",
            HOW_TO_READ,
            _table_section(table),
            narrative.section(table),
            _figures_section(keys := _figure_keys(epochs)),
            _paper_section(table),
            _parity_section(epochs),
            _efficiency_section(epochs),
            *([_fidelity_section(fidelity)] if fidelity else []),
            _notes_section(table, summary),
            _environment_section(epochs, trials),
            _failures_section(trials),
        ]
    )
    terminal_text = terminal_table(table)

    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".report-", dir=out_dir))
    try:
        for key in keys:
            _DRAW[key](table, summary, epochs, staging / Path(FIGURES[key]).name)
        (staging / "report.md").write_text(markdown, encoding="utf-8")
        if ReportFormat.html in wanted:
            write_html(markdown, staging, staging / "report.html")  # figures embedded from staging
        figure_paths = [out_dir / FIGURES[key] for key in keys]
        (out_dir / "figures").mkdir(parents=True, exist_ok=True)
        # figures first, so report.md never links to a figure that is not there yet
        for path in figure_paths:
            os.replace(staging / path.name, path)
        for key in FIGURES.keys() - set(keys):
            (out_dir / FIGURES[key]).unlink(missing_ok=True)  # from an earlier report of other results
        for name in docs:
            os.replace(staging / name, out_dir / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    final = [out_dir / name for name in docs] + figure_paths
    return Report(table=table, summary=summary, paths=final, terminal_text=terminal_text)


def table_json(table: pd.DataFrame) -> str:
    """The speedup table as a JSON list of rows for scripts; missing numbers are null, never NaN."""
    return table.to_json(orient="records", indent=2)
