"""What limits a cell's speed: the bottleneck thresholds and the verdict rule, defined once.

    from orchestrator.analysis.bounds import verdict, INPUT_BOUND_SHARE, LAUNCH_BOUND_UTIL_PCT
    verdict("gpu", data_share=0.61, gpu_util_pct=10.0)   # ("input-bound", "waits for data 61% ...")

Every other module reads these names from here (stats and speedups re-export them for older imports):
the report's "input-bound" sentence, the launch-bound flag of the speedup table, the breakdown figure's
dashed line and the per-cell verdicts of analysis.bottleneck.

Definitions (evidence per cell: cell_summary's medians over the cell's steady epochs):
    data-wait share  data_s / epoch_s: the share of the epoch the device waited for its next batch
    GPU busy         gpu_util_pct: NVML's mean utilization over the timed window, in %
    input-bound      data-wait share > INPUT_BOUND_SHARE, on either device: the input pipeline, not the
                     device, sets the speed
    launch-bound     a GPU cell, not input-bound, GPU busy < LAUNCH_BOUND_UTIL_PCT: neither the device
                     nor the data limits it, but the host launching kernels one by one (eager PyTorch at
                     small batches); a compiled step (CUDA graphs) or a larger batch removes the limit
    compute-bound    a GPU cell, not input-bound, GPU busy >= LAUNCH_BOUND_UTIL_PCT; a CPU cell that is
                     not input-bound (its cores run the model). MFU (analysis.efficiency) says how much
                     of the device's peak that compute reaches.
    memory-bound     not given: it needs the device's memory throughput, which no results column holds
                     (rows.EPOCH_SCHEMA); a busy GPU with a low MFU is reported as compute-bound, MFU shown
    not input-bound  a GPU cell, not input-bound, whose GPU busy % was not measured (no NVML)
    unknown          no data-wait share (no data_s)
"""

from __future__ import annotations

import math

# A cell is "input-bound" when its data-wait share (data_s / epoch_s) exceeds this.
INPUT_BOUND_SHARE = 0.30
# A GPU cell is "launch-bound" when the GPU was busy less than this share of its epochs (NVML's mean
# utilization, %) while it waited for input no more than INPUT_BOUND_SHARE.
LAUNCH_BOUND_UTIL_PCT = 60.0

INPUT, LAUNCH, COMPUTE, NOT_INPUT, UNKNOWN = (
    "input-bound", "launch-bound", "compute-bound", "not input-bound", "unknown",
)  # fmt: skip
VERDICTS = (INPUT, LAUNCH, COMPUTE, NOT_INPUT, UNKNOWN)


def _number(x) -> float:
    """x as a float; NaN for None, NaN, NA or anything that is not a number."""
    try:
        value = float(x)
    except (TypeError, ValueError):
        return math.nan
    return value


def launch_bound(gpu_util_pct, data_share) -> bool:
    """A GPU cell the host's kernel launches hold back: util < LAUNCH_BOUND_UTIL_PCT and data-wait share
    <= INPUT_BOUND_SHARE, both measured (NaN or None: not called)."""
    util, share = _number(gpu_util_pct), _number(data_share)
    return util < LAUNCH_BOUND_UTIL_PCT and share <= INPUT_BOUND_SHARE  # NaN compares False


def verdict(device: str, data_share, gpu_util_pct=None) -> tuple[str, str]:
    """(verdict, the reason in words) for one cell by the module docstring's rule."""
    share, util = _number(data_share), _number(gpu_util_pct)
    if math.isnan(share):
        return UNKNOWN, "no data-wait time recorded"
    waits = f"waits for data {share:.0%} of the epoch"
    if share > INPUT_BOUND_SHARE:
        return INPUT, f"{waits} (> {INPUT_BOUND_SHARE:.0%})"
    if device != "gpu":
        return COMPUTE, f"{waits} (<= {INPUT_BOUND_SHARE:.0%}): the cores run the model"
    if math.isnan(util):
        return NOT_INPUT, f"{waits}; GPU busy not measured"
    if util < LAUNCH_BOUND_UTIL_PCT:
        return LAUNCH, f"{waits}, yet the GPU is busy only {util:.0f}% (< {LAUNCH_BOUND_UTIL_PCT:.0f}%)"
    return COMPUTE, f"{waits}; the GPU is busy {util:.0f}% (>= {LAUNCH_BOUND_UTIL_PCT:.0f}%)"
