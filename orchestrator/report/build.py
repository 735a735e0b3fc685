"""Build the speedup report of one or more sweeps: report.md, report.html, PNG figures, a terminal table.

    from orchestrator.report import build_report
    report = build_report([Path("results/s1")], Path("reports/s1"))
    print(report.terminal_text)        # reports/s1/report.md, report.html, figures/*.png
    build_report(dirs, out, formats=[ReportFormat.md])   # report.md only (figures are always written)

Nothing is written until every number and figure is computed; figures are rendered into a hidden
staging folder and report.md goes through a temp file, each moved into place with os.replace. The
report opens with the answer (headline table, What this shows), then How to read this and the details.
The tables are rendered by report.tables, the other sections by report.sections; the figures are
drawn by report.figures and report.epoch_figures.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import pandas as pd

from orchestrator.analysis.compile_gain import compile_gain_table
from orchestrator.analysis.pairing import several_classes
from orchestrator.analysis.stats import (
    CI_CONFIDENCE,
    CI_RESAMPLES,
    FEW_STEPS_ACC,
    INPUT_BOUND_SHARE,
    LAUNCH_BOUND_UTIL_PCT,
    NOISY_IQR_SHARE,
    STEAL_FLAG_PCT,
    cell_summary,
    ok_epochs,
    speedup_table,
)
from orchestrator.errors import BenchctlError
from orchestrator.report import epoch_figures, figures, narrative
from orchestrator.report.formats import DASH
from orchestrator.report.html import write_html
from orchestrator.report.sections import (
    class_matrix_section,
    compile_gain_section,
    efficiency_section,
    environment_section,
    failures_section,
    fidelity_section,
    notes_section,
    paper_section,
    parity_section,
    read_fidelity,
)
from orchestrator.report.tables import details_section, has_classes, headline_section, terminal_table
from orchestrator.results import (
    CELL,
    EPOCH_SCHEMA,
    HW_CLASS,
    RUN,
    ResultsError,
    pooling,
    read_many,
    unfinished_trials,
)


class ReportFormat(str, Enum):
    """Documents build_report writes besides the figures (`benchctl report --format md,html`)."""

    md = "md"  # report.md, figures linked from figures/
    html = "html"  # report.html: the same content, one self-contained file (figures embedded)
    csv = "csv"  # summary.csv (the speedup table, as --json) and epochs.csv (every epoch row it used)


# the files each format writes into the report folder
_DOCS = {
    ReportFormat.md: ("report.md",),
    ReportFormat.html: ("report.html",),
    ReportFormat.csv: ("summary.csv", "epochs.csv"),
}


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
    "breakdown": lambda table, summary, epochs, path: epoch_figures.epoch_breakdown(epochs, path),
    "accuracy": lambda table, summary, epochs, path: epoch_figures.accuracy_per_epoch(epochs, path),
    "throughput": lambda table, summary, epochs, path: epoch_figures.throughput_vs_batch(epochs, path),
}


@dataclass
class Report:
    table: pd.DataFrame  # orchestrator.analysis.stats.speedup_table
    summary: pd.DataFrame  # orchestrator.analysis.stats.cell_summary
    paths: list[Path] = field(default_factory=list)  # report.md, report.html (those written), figures
    terminal_text: str = ""
    pooled: str = ""  # what was pooled across differing or unknown conditions (results.Pooling.note)


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
  interval can be computed; run more epochs or repeats. **steal N%** = on that side the VM's
  hypervisor took a median N% (over {STEAL_FLAG_PCT:.0f}%) of the host's CPU time while epochs were
  timed (`host_steal_pct` per epoch, from /proc/stat): the host was shared, and its times may be slow.
- **Epoch 1 is warm-up** (one-time costs such as cuDNN autotuning and cache filling) and is excluded.
  A cell that ran only one epoch is shown from its warm-up epoch and flagged "warm-up only".
- **data-wait share** = fraction of the epoch the device waited for input (including the host-to-device
  copy). A high share means the input pipeline, not the device, limits speed; a GPU cell above
  {INPUT_BOUND_SHARE:.0%} is called **input-bound**. A GPU cell that waited for input no more than that
  but kept the GPU busy less than {LAUNCH_BOUND_UTIL_PCT:.0f}% of its epochs (NVML's mean utilization) is
  called **launch-bound**: the host, issuing eager PyTorch's kernels one by one, sets its speed, not the
  GPU; `--compile on` (CUDA graphs) or a larger batch measures the GPU instead.
- **step** = `eager` (`--compile off`, the paper's) or `compiled` (`--compile on`, trainables/compiled.py:
  Inductor, CUDA graphs on a GPU, C++ on a CPU). CPU and GPU cells are compared only with cells of the
  same step; "Compiled against eager" shows what compiling gains on each device.
- **extrapolated** = the epoch was capped with `--max-steps` and its time scaled to a full epoch.
  **partial-eval** = accuracy comes from a capped test pass (part of the test set).
  **few steps trained** = that side's epochs were capped and its test accuracy is at most
  {FEW_STEPS_ACC:.0%} (1.5x chance): too few steps to learn, not a device difference.
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
# appended to HOW_TO_READ when the results record hardware classes (has_classes)
HOW_TO_READ_CLASSES = """\
- **CPU class / GPU class** = the hardware class of the node a cell ran on, e.g. `gpu:H200` or
  `cpu:EPYC-7763-64c` (CPU model and the cores Ray gives the node). Cells of different classes are never
  pooled: a configuration measured on several classes gets one speedup per (CPU class, GPU class) pair,
  each with its own interval and flags, also shown as a matrix under "Speedup by hardware class" when a
  configuration has more than one class on a side.
"""


def _figure_keys(epochs: pd.DataFrame) -> list[str]:
    """The FIGURES that apply to these epochs, in order (throughput only with several batch sizes)."""
    return [key for key in FIGURES if key != "throughput" or epoch_figures.throughput_applies(epochs)]


def _figures_section(keys: list[str]) -> str:
    items = [f"![{CAPTIONS[k][0]}]({FIGURES[k]})\n\n*{CAPTIONS[k][1]}*\n" for k in keys]
    return "## Figures\n\n" + "\n".join(items)


# ---- entry point ------------------------------------------------------------------------------------


# What the report reads of each kind: the trials files carry 64 columns and the epochs files 45, and
# every column of every file costs its decoding (~6 us a column, 9,600 files at 100,800 rows).
# The trials columns a section, ok_epochs or compile_gain reads:
_TRIAL_COLUMNS = RUN + CELL + (HW_CLASS, "host") + (
    "status", "error", "epochs_planned", "epochs_done", "overlapped_with", "compile_s", "energy_notes",
    "cpu_model", "gpu_name", "gpu_driver", "cuda_runtime", "torch", "torchvision", "ray", "python",
    "git_commit",
)  # fmt: skip
# the epoch columns nothing in the report reads; --format csv writes every column, so it reads them too
_UNREAD_EPOCH_COLUMNS = ("repeat", "seed", "restored", "measured_s", "train_loss", "eval_images",
                         "gpu_mem_peak_mb", "host_busy_pct", "checkpoint_s", "checkpoint_mb")  # fmt: skip


def _read_all(results_dirs: list[Path], every_epoch_column: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    if not results_dirs:
        raise ResultsError(
            "no results directories given; pass the folder(s) a sweep wrote, e.g. results/<sweep>"
        )
    epoch_columns = (
        None if every_epoch_column else [c for c in EPOCH_SCHEMA.names if c not in _UNREAD_EPOCH_COLUMNS]
    )
    # every directory's files at once; a ResultsError propagates unchanged
    epochs, trials = read_many(
        map(Path, results_dirs), epoch_columns=epoch_columns, trial_columns=_TRIAL_COLUMNS
    )
    if not trials.empty:
        trials = trials.drop_duplicates(subset=["sweep", "trial", "attempt"]).reset_index(drop=True)
    return epochs, trials


def build_report(
    results_dirs: list[Path],
    out_dir: Path,
    formats: Iterable[ReportFormat | str] = (ReportFormat.md, ReportFormat.html),
    pool: bool = False,
) -> Report:
    """Read the sweeps, compute the tables, write out_dir/report.md and/or out_dir/report.html (formats)
    and out_dir/figures/*.png (always; a figure that does not apply is not drawn and a stale copy of it is
    removed). Sweeps run under different conditions (spec.condition_differences) are refused unless
    `pool`; then the report says what was pooled."""
    wanted = {ReportFormat(f) for f in formats}
    docs = [name for f in ReportFormat if f in wanted for name in _DOCS[f]]
    epochs, trials = _read_all(results_dirs, every_epoch_column=ReportFormat.csv in wanted)
    pooled = pooling(results_dirs, allow=pool)  # refuses differing conditions unless allowed
    epochs = ok_epochs(epochs, trials)
    if epochs.empty:
        n_failed = int((trials["status"] == "error").sum()) if not trials.empty else 0
        raise ResultsError(
            f"{', '.join(str(d) for d in results_dirs)}: no completed epochs to report "
            f"({n_failed} failed trial attempt(s)); check the errors in trials/*.parquet, fix them "
            "and run the sweep again"
        )
    fidelity = read_fidelity(results_dirs)  # a malformed file fails here, before anything is written
    summary = cell_summary(epochs)
    table = speedup_table(epochs, summary)
    sweeps = sorted({str(s) for s in pd.concat([epochs["sweep"], trials.get("sweep", pd.Series())]).dropna()})
    n_runs = epochs[["sweep", "trial", "attempt"]].drop_duplicates().shape[0]
    unfinished = [
        (Path(d), t)
        for d in results_dirs
        for t in unfinished_trials(Path(d), trials, map(Path, results_dirs))
    ]
    datasets = ", ".join(sorted({str(d) for d in epochs["dataset"].dropna()})) or DASH
    markdown = "\n".join(
        [
            f"# GPU vs CPU training speedup: {', '.join(sweeps)}\n",
            f"Sweep(s): {', '.join(f'`{s}`' for s in sweeps)}. Dataset: {datasets}. "
            f"{len(epochs)} epoch rows from {n_runs} completed trial attempts"
            + (f"; {len(unfinished)} planned trial(s) have no result (see Notes)" if unfinished else "")
            + ".\n",
            *([f"**{text}**\n"] if (text := pooled.note(len(results_dirs) > 1, "`")) else []),
            # the answer first (headline table, what it shows), then how to read it, then the rest
            headline_section(table),
            narrative.section(table),
            *([class_matrix_section(table)] if several_classes(table) else []),
            HOW_TO_READ + (HOW_TO_READ_CLASSES if has_classes(table) else ""),
            details_section(table),
            _figures_section(keys := _figure_keys(epochs)),
            paper_section(table),
            parity_section(epochs),
            efficiency_section(epochs),
            *([compile_gain_section(gain)] if len(gain := compile_gain_table(epochs, trials)) else []),
            *([fidelity_section(fidelity)] if fidelity else []),
            notes_section(table, summary, unfinished, trials),
            environment_section(epochs, trials),
            failures_section(trials),
        ]
    )
    terminal_text = terminal_table(table)
    pooled_note = pooled.note(len(results_dirs) > 1)

    try:  # try the write itself: a pre-check with os.access would be wrong for root and on NFS
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BenchctlError(
            f"--out: cannot create {out_dir} ({exc.strerror}); choose a writable --out"
        ) from None
    staging = Path(tempfile.mkdtemp(prefix=".report-", dir=out_dir))
    try:
        for key in keys:
            _DRAW[key](table, summary, epochs, staging / Path(FIGURES[key]).name)
        (staging / "report.md").write_text(markdown, encoding="utf-8")
        if ReportFormat.csv in wanted:  # for a spreadsheet: the same rows and columns as the JSON
            table.to_csv(staging / "summary.csv", index=False)
            epochs.to_csv(staging / "epochs.csv", index=False)
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
    return Report(table=table, summary=summary, paths=final, terminal_text=terminal_text, pooled=pooled_note)


def table_json(table: pd.DataFrame) -> str:
    """The speedup table as a JSON list of rows for scripts (one per configuration and hardware pair, with
    cpu_class / gpu_class: "" when unknown); missing numbers are null, never NaN."""
    return table.to_json(orient="records", indent=2)
