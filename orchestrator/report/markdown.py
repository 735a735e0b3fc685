"""report.md: the report model rendered as one Markdown document (report.html converts this text).

    from orchestrator.report import markdown
    text = markdown.render(model, keys)   # model: report.model.build_model(...); keys: figures drawn

The answer first (headline table, What this shows), then How to read this, the details, the figures
and the other sections (report.tables, report.narrative, report.sections).
"""

from __future__ import annotations

from orchestrator.analysis.speedups import (
    CI_CONFIDENCE,
    CI_RESAMPLES,
    FEW_STEPS_ACC,
    LAUNCH_BOUND_UTIL_PCT,
    STEAL_FLAG_PCT,
)
from orchestrator.analysis.stats import INPUT_BOUND_SHARE, NOISY_IQR_SHARE
from orchestrator.report import answer, narrative
from orchestrator.report.formats import DASH
from orchestrator.report.model import ReportModel
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
)
from orchestrator.report.tables import details_section, headline_section

# key -> the figure's path in the report folder, in the order report.md shows them
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

HOW_TO_READ = f"""## How to read this

- **speedup** = CPU epoch time / GPU epoch time, where each epoch time is the **median** of the cell's
  non-warm-up epochs pooled across repeats. CPU and GPU are paired only when model, batch size, input
  pipeline and precision all match; a model measured on one device only shows "—".
- **[low–high]** after a speedup is its {CI_CONFIDENCE:.0%} bootstrap interval: the non-warm-up epoch
  samples (all epochs of all repeats) of each side are resampled with replacement, {CI_RESAMPLES}
  times with a fixed seed (so the same results always give the same interval), and the interval spans
  the central {CI_CONFIDENCE:.0%} of median(CPU resample) / median(GPU resample). It reflects the
  epoch-to-epoch and repeat-to-repeat spread on this machine, not other hardware. After the epoch time
  of a cell measured on one device only, the same interval of its median. No bracket means a side has
  fewer than 2 samples.
- **noisy** = on that side the interquartile range (q75 − q25) of the epoch times is more than
  {NOISY_IQR_SHARE:.0%} of their median. **single-sample** = that side has only one epoch time, so no
  interval can be computed; run more epochs or repeats. **steal N%** = on that side the VM's
  hypervisor took a median N% (over {STEAL_FLAG_PCT:.0f}%) of the host's CPU time while epochs were
  timed (`host_steal_pct` per epoch, from /proc/stat): the host was shared, and its times may be slow.
- **Epoch 1 is warm-up** (one-time costs such as cuDNN autotuning and cache filling) and is excluded.
  A cell that ran only one epoch is shown from its warm-up epoch and flagged "warm-up only".
- **data-wait share** = fraction of the epoch the device waited for input (including the host-to-device
  copy). A high share means the input pipeline, not the device, limits speed.
- **input-bound** = a GPU cell whose data-wait share is above {INPUT_BOUND_SHARE:.0%}. A GPU cell that
  waited for input no more than that but kept the GPU busy less than {LAUNCH_BOUND_UTIL_PCT:.0f}% of its
  epochs (NVML's mean utilization) is called **launch-bound**: the host, issuing eager PyTorch's kernels
  one by one, sets its speed, not the GPU; `--compile on` (CUDA graphs) or a larger batch measures the
  GPU instead.
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
# appended to HOW_TO_READ when a configuration's side was fed several ways (several_variants)
HOW_TO_READ_VARIANTS = """\
- **CPU fed by / GPU fed by** = the DataLoader workers and the CPUs a side's trials ran with
  (`--workers`, `--cpus-per-trial`, `--gpu-cpus`): trials that differ in them are never pooled, so a
  configuration measured with several gets one row (and one speedup) per CPU and GPU pair of them, as
  The answer names its cells.
"""


# HOW_TO_READ's bullets about a GPU side or a speedup (by their first words): not in a CPU-only report
_GPU_BULLETS = ("**speedup**", "**[low–high]**", "**input-bound**", "**GPU J/epoch**")


def how_to_read(model: ReportModel) -> str:
    """HOW_TO_READ (and HOW_TO_READ_CLASSES where the results name classes, HOW_TO_READ_VARIANTS where
    a side was fed several ways); for CPU-only results without the bullets on what only a GPU side or a
    speedup has."""
    text = HOW_TO_READ + (HOW_TO_READ_CLASSES if model.has_classes else "")
    text += HOW_TO_READ_VARIANTS if model.several_variants else ""
    if not model.cpu_only:
        return text
    head, *bullets = text.split("\n- ")
    return "\n- ".join([head, *(b for b in bullets if not b.startswith(_GPU_BULLETS))])


def _figures_section(keys: list[str]) -> str:
    items = [f"![{CAPTIONS[k][0]}]({FIGURES[k]})\n\n*{CAPTIONS[k][1]}*\n" for k in keys]
    return "## Figures\n\n" + "\n".join(items)


def render(model: ReportModel, figure_keys: list[str]) -> str:
    """The whole report.md; `figure_keys`: the FIGURES drawn, in order."""
    epochs, unfinished = model.epochs, model.unfinished
    datasets = ", ".join(sorted({str(d) for d in epochs["dataset"].dropna().unique()})) or DASH
    return "\n".join(
        [
            f"# GPU vs CPU training speedup: {', '.join(model.sweeps)}\n",
            f"Sweep(s): {', '.join(f'`{s}`' for s in model.sweeps)}. Dataset: {datasets}. "
            f"{len(epochs)} epoch rows from {model.n_runs} completed trial attempts"
            + (f"; {len(unfinished)} planned trial(s) have no result (see Notes)" if unfinished else "")
            + ".\n",
            *([f"**{text}**\n"] if (text := model.pooled_note("`")) else []),
            # the answer first (explained, headline table, what it shows), then how to read it, the rest
            answer.section(model),
            headline_section(model),
            narrative.section(model),
            *([class_matrix_section(model)] if model.several_classes else []),
            how_to_read(model),
            details_section(model),
            _figures_section(figure_keys),
            # a CPU-only run has no speedup to hold against the paper's, no accuracy pair, no MFU
            *(
                []
                if model.cpu_only
                else [paper_section(model), parity_section(model), efficiency_section(model)]
            ),
            *([compile_gain_section(model)] if len(model.compile_gain) else []),
            *([fidelity_section(model)] if model.fidelity else []),
            notes_section(model),
            environment_section(model),
            failures_section(model),
        ]
    )
