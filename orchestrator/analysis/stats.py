"""Statistics for the report: pure functions over the epoch DataFrame (no I/O, no plotting).

    from orchestrator.results import read_results
    from orchestrator.analysis.stats import speedup_table
    epochs, trials = read_results(Path("results/s1"))
    print(speedup_table(epochs))   # per (model, batch_size, pipeline, precision, CPU class, GPU class)

Definitions used everywhere (and printed in report.md):
    cell          = (model, device, batch_size, pipeline, precision, hw_class); repeats of a cell are
                    pooled, hardware classes never (hw_class null or absent, as in schema-1 results, is "")
    steady epochs = epochs with warmup == False (epoch 1 carries one-time costs: cuDNN autotune, caches)
    epoch time    = median(epoch_s) over the cell's steady epochs, pooled across repeats
    epoch_s_iqr   = q75 - q25 of the same samples (numpy's default linear-interpolated percentiles)
    speedup       = median(cpu epoch_s) / median(gpu epoch_s), only between cells with the same
                    model, batch_size, pipeline and precision; one per (CPU class, GPU class) combination
                    (orchestrator.analysis.pairing.class_pairs)
    speedup CI    = percentile bootstrap interval (95%, seeded) of median(cpu)/median(gpu), each side
                    resampled with replacement from its steady epoch samples: bootstrap_speedup_ci
    noisy         = a side's epoch_s_iqr > NOISY_IQR_SHARE (10%) of its epoch_s median
    single-sample = a side has exactly one epoch_s sample, so no interval can be computed
    steal         = a side's median host_steal_pct > STEAL_FLAG_PCT (2%): the VM's hypervisor took that
                    share of the host's CPU time while it was measured (trainables.energy.host_load)
    J/image       = energy_j / (full_steps / steps * images): energy is scaled to the full epoch, while
                    `images` counts only the measured (possibly --max-steps capped) window
    energy speedup = CPU cell's median cpu_energy_j / GPU cell's median(gpu_energy_j + cpu_energy_j),
                    only when all three are measured (RAPL is often unreadable: then NaN, never a guess)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from orchestrator import results
from orchestrator.analysis.pairing import PAIR, class_pairs
from trainables.config import NUM_CLASSES

CELL = list(results.CELL)  # the cell key: defined once, in orchestrator.results
HW_CLASS = results.HW_CLASS  # e.g. "gpu:H200", "cpu:EPYC-7763-64c" (orchestrator.hardware); "" when unknown
CLASS_CELL = CELL + [HW_CLASS]  # what cell_summary groups by: a cell never pools hardware classes
DEVICES = ("cpu", "gpu")
RUN = list(results.RUN)  # one training run (a repeat of a cell)
# Settings that should be constant inside a cell; pooling differing values would mix two experiments.
_MUST_MATCH = ["dataset", "cpus_allotted", "torch_threads", "data_workers"]
# A side is flagged "noisy" when the IQR of its epoch_s samples exceeds this share of their median.
NOISY_IQR_SHARE = 0.10
# A side is flagged "steal" when the hypervisor took more than this share of the host's CPU time (%).
STEAL_FLAG_PCT = 2.0
# a --max-steps side this close to chance (10 classes: <= 15%) learned little in its capped epochs: its
# accuracy says so, not the device
FEW_STEPS_ACC = 1.5 / NUM_CLASSES
# A GPU cell is "input-bound" when its data-wait share (data_s / epoch_s) exceeds this: the input
# pipeline, not the device, then limits its speed (and so the speedup).
INPUT_BOUND_SHARE = 0.30
# A GPU cell is "launch-bound" when the GPU was busy less than this share of its epochs (NVML's mean
# utilization, %) while it waited for input no more than INPUT_BOUND_SHARE: neither the device nor the
# data then limits it, but the host launching kernels one by one (eager PyTorch at small batches); a
# compiled step (--compile on: CUDA graphs) or a larger batch removes that limit.
LAUNCH_BOUND_UTIL_PCT = 60.0
CI_CONFIDENCE = 0.95  # the speedup interval's confidence level
CI_RESAMPLES = 2000  # bootstrap resamples per interval
CI_SEED = 0  # fixed, so the same results always give the same report

# The paper's published numbers (CIFAR-10, 10 epochs), shown beside ours: a reference, not our results.
PAPER_POINTS = [
    # (our model name, label, parameters, speedup, how the paper states it)
    ("simple_cnn", "simple CNN (paper)", 0.5e6, 2.0, "~2x"),
    ("resnet18", "ResNet18 (paper)", 11.7e6, 7.0, ">7x"),
    ("resnet50", "ResNet50 (paper)", 25.6e6, 40.6, "40.6x (134 s GPU vs >5400 s CPU)"),
]


def ok_epochs(epochs: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """The epochs of finished trials, one row per (sweep, trial, epoch).

    A trial is finished when one of its attempts has status "ok". Its epochs are, per epoch number, the
    row of the latest attempt up to that one which has it: an attempt that continued from a checkpoint
    adds the epochs it took over from the attempt before it, while a retry that started again from
    epoch 1 replaces them all. Each row keeps the attempt that measured it in `from_attempt`, and
    `attempt` becomes the finishing attempt's, so one run stays one run. Trials whose attempts are
    all "partial" (cut off) or "error" are left out; rows of trials the trials table does not know at
    all are kept as they are. A results dir passed twice is not counted twice. Each row gains its
    finishing attempt's `overlapped_with` (other trials on its host meanwhile; null if none)."""
    out = epochs.assign(from_attempt=epochs["attempt"]) if "attempt" in epochs else epochs
    if not trials.empty and not epochs.empty:
        final = (
            trials.loc[trials["status"] == "ok"].groupby(["sweep", "trial"])["attempt"].max().rename("_final")
        )
        known = trials[["sweep", "trial"]].drop_duplicates().assign(_known=True)
        marked = out.merge(known, on=["sweep", "trial"], how="left").merge(
            final.reset_index(), on=["sweep", "trial"], how="left"
        )
        keep = marked["_known"].isna() | (marked["attempt"] <= marked["_final"])
        marked = marked[keep.to_numpy()]
        final_attempt = marked["_final"].fillna(marked["attempt"]).astype(out["attempt"].dtype)
        marked = marked.assign(attempt=final_attempt)
        marked = marked.sort_values("from_attempt", kind="stable")
        out = marked.drop(columns=["_known", "_final"])
        out = out.drop_duplicates(subset=RUN + ["epoch"], keep="last").sort_values(RUN + ["epoch"])
        if "overlapped_with" in trials and "overlapped_with" not in out:
            overlap = trials[RUN + ["overlapped_with"]].drop_duplicates(subset=RUN)
            out = out.merge(overlap, on=RUN, how="left")
    return out.drop_duplicates(subset=RUN + ["epoch"]).reset_index(drop=True)


def with_hw_class(epochs: pd.DataFrame) -> pd.DataFrame:
    """A copy of `epochs` whose cell-key columns with a default (results.CELL_DEFAULTS, e.g. hw_class "")
    hold it where null or where the column is absent (results written before the column existed)."""
    out = results.with_cell_defaults(epochs).copy()
    for col, default in results.CELL_DEFAULTS.items():
        out[col] = out[col].astype(type(default))
    return out


def steady_epochs(epochs: pd.DataFrame) -> pd.DataFrame:
    """Rows with warmup == False, plus a bool column `warmup_only` and hw_class as with_hw_class.

    A cell that has no steady epoch at all (every run was 1 epoch) keeps its warm-up rows instead, with
    warmup_only = True, so the report can show a number and say it is "warm-up only"."""
    epochs = with_hw_class(epochs)
    warm = epochs["warmup"].fillna(False).astype(bool).to_numpy()
    has_steady = (
        epochs.assign(_steady=~warm).groupby(CLASS_CELL, dropna=False)["_steady"].transform("any").to_numpy()
    )
    keep = ~warm | ~has_steady
    out = epochs[keep].copy()
    out["warmup_only"] = ~has_steady[keep]
    return out.reset_index(drop=True)


def is_missing(x) -> bool:
    """None or NaN/NA: a number that was not measured (here, not in report.formats, so that analysis never
    imports display code; report.formats re-exports it)."""
    return x is None or (isinstance(x, float) and math.isnan(x)) or pd.isna(x)


def _names(values: Iterable) -> str:
    """Distinct non-empty values, sorted, comma-joined ("" if none)."""
    distinct = values.unique() if isinstance(values, pd.Series) else values  # ~10^5 rows, a few names
    return ", ".join(sorted({str(v) for v in distinct if v is not None and not pd.isna(v) and str(v)}))


def _num(df: pd.DataFrame, col: str) -> pd.Series:
    """Column `col` as floats; all NaN when the column is absent (results written before it existed)."""
    if col not in df:
        return pd.Series(np.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[col], errors="coerce").astype(float)


def _median(values: pd.Series) -> float:
    """Median of the non-null values; NaN when there are none."""
    values = values.dropna()
    return float(np.median(values)) if len(values) else np.nan


def iqr(values) -> float:
    """IQR = q75 - q25 of the non-null values (numpy's default linear-interpolated percentiles); NaN when
    there are none, 0.0 for a single value."""
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    arr = arr[~np.isnan(arr)]
    if not len(arr):
        return np.nan
    q25, q75 = np.percentile(arr, [25, 75])
    return float(q75 - q25)


def is_noisy(epoch_s_iqr, epoch_s) -> bool:
    """noisy = epoch_s_iqr > NOISY_IQR_SHARE * epoch_s (the median); exactly 10% is not noisy, and a
    missing number is never noisy."""
    if is_missing(epoch_s_iqr) or is_missing(epoch_s):
        return False
    return float(epoch_s_iqr) > NOISY_IQR_SHARE * float(epoch_s)


def full_epoch_images(epochs: pd.DataFrame) -> pd.Series:
    """Images of the full epoch: full_steps / steps * images (`images` counts the measured window only;
    NaN where steps is missing or not positive)."""
    steps = _num(epochs, "steps")
    return _num(epochs, "full_steps") / steps.where(steps > 0) * _num(epochs, "images")


def cell_summary(epochs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell (model, device, batch_size, pipeline, precision, hw_class) with:

    params        max(params) of the cell's rows (a model has one count)
    epoch_s       median(epoch_s) over the cell's steady epochs, pooled across repeats
    epoch_s_iqr   iqr(epoch_s) = q75 - q25 over the same samples (NaN when there are none)
    n             number of epoch_s samples in that median; runs = number of (sweep, trial, attempt)
    data_share    median(data_s / epoch_s) over the same epochs (share of the epoch spent waiting for input)
    test_acc      mean over runs of the test_acc of each run's last epoch (max epoch)
    extrapolated  any steady epoch was capped (--max-steps) and scaled to a full epoch
    eval_partial  any epoch's test pass was capped (accuracy from a subset of the test set)
    warmup_only   the median uses warm-up epochs because no steady epoch exists
    overlapped    any run of the cell shared its host with another trial (placement packed/partitioned)
    mixed         settings in _MUST_MATCH that differ inside the cell ("" if none)
    device_names, hosts   distinct values, comma-joined

    Energy, over the same epochs as epoch_s (NaN where nothing was measured, never a guess):
    gpu_energy_j, cpu_energy_j, gpu_util_pct   median of the epoch column (J per full epoch; GPU util in %)
    gpu_j_per_image, cpu_j_per_image           median over epochs of
                  energy_j / (full_steps / steps * images)
                  i.e. J per image of the full epoch: energy_j is scaled to the full epoch like epoch_s,
                  while `images` counts only the measured (possibly --max-steps capped) window
    energy_j      the cell's energy per epoch: for a GPU cell median(gpu_energy_j + cpu_energy_j) over the
                  epochs where both are known, else median(gpu_energy_j) alone; for a CPU cell
                  median(cpu_energy_j)
    energy_scope  what energy_j covers: "GPU+CPU", "GPU only", "CPU", or "" when energy_j is NaN
    energy_j_per_image   median over the same epochs of that epoch energy / full-epoch images
    host_steal_pct       median over the same epochs of the hypervisor's share of host CPU time (%)
    """
    columns = CLASS_CELL + [
        "params", "epoch_s", "epoch_s_iqr", "n", "runs", "data_share", "test_acc", "extrapolated",
        "eval_partial", "warmup_only", "overlapped", "mixed", "device_names", "hosts", "gpu_energy_j",
        "cpu_energy_j", "gpu_util_pct", "gpu_j_per_image", "cpu_j_per_image", "energy_j", "energy_scope",
        "energy_j_per_image", "host_steal_pct",
    ]  # fmt: skip
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    epochs = with_hw_class(epochs)
    steady = steady_epochs(epochs)
    # one group-by per statistic over all cells at once: the former per-cell loop with boolean masks
    # over every row cost ~55 s at 100k rows
    epoch_s = _num(steady, "epoch_s")
    steady = steady.assign(
        _epoch_s=epoch_s,
        _ratio=_num(steady, "data_s") / epoch_s.where(epoch_s > 0),
        _extrapolated=steady["extrapolated"].fillna(False).astype(bool),
        _overlapped=steady["overlapped_with"].notna() if "overlapped_with" in steady else False,
        _steal=_num(steady, "host_steal_pct"),
        **_energy_columns(steady),
    )
    g = steady.groupby(CLASS_CELL, dropna=False, sort=False)
    out = g.agg(
        params=("params", "max"),
        epoch_s=("_epoch_s", "median"),
        _q25=("_epoch_s", lambda v: v.quantile(0.25)),
        _q75=("_epoch_s", lambda v: v.quantile(0.75)),
        n=("_epoch_s", "count"),
        data_share=("_ratio", "median"),
        extrapolated=("_extrapolated", "any"),
        warmup_only=("warmup_only", "all"),
        overlapped=("_overlapped", "any"),
        device_names=("device_name", _names),
        hosts=("host", _names),
        host_steal_pct=("_steal", "median"),
        **{c: (f"_{c}", "median") for c in _ENERGY_MEDIANS},
    )
    out["epoch_s_iqr"] = out.pop("_q75") - out.pop("_q25")
    runs = steady.drop_duplicates(CLASS_CELL + RUN)
    out["runs"] = runs.groupby(CLASS_CELL, dropna=False, sort=False).size()
    mixed = {c: g[c].nunique(dropna=True) > 1 for c in _MUST_MATCH if c in steady}
    out["mixed"] = [", ".join(c for c in mixed if mixed[c].iloc[i]) for i in range(len(out))]
    whole = epochs.assign(_partial=epochs["eval_partial"].fillna(False).astype(bool))
    out["eval_partial"] = whole.groupby(CLASS_CELL, dropna=False, sort=False)["_partial"].any()
    last = epochs.sort_values("epoch", kind="stable").groupby(RUN, dropna=False).tail(1)
    out["test_acc"] = _num(last, "test_acc").groupby([last[c] for c in CLASS_CELL], dropna=False).mean()
    out = out.reset_index()
    out["params"] = out["params"].astype(float) if out["params"].isna().any() else out["params"].astype(int)
    scope = np.where(out["device"] == "cpu", "CPU", np.where(out.pop("both") > 0, "GPU+CPU", "GPU only"))
    out["energy_scope"] = np.where(out["energy_j"].isna(), "", scope)
    out = out[columns].astype({"extrapolated": bool, "eval_partial": bool, "overlapped": bool})
    return out.sort_values(["params", "model", "device", HW_CLASS], kind="stable").reset_index(drop=True)


# the energy columns of cell_summary that are medians of a per-epoch column of _energy_columns
_ENERGY_MEDIANS = ("gpu_energy_j", "cpu_energy_j", "gpu_util_pct", "gpu_j_per_image", "cpu_j_per_image",
                   "energy_j", "energy_j_per_image", "both")  # fmt: skip


def _energy_columns(steady: pd.DataFrame) -> dict[str, pd.Series]:
    """Per steady epoch, the values whose per-cell medians are cell_summary's energy columns (see its
    docstring): a GPU cell's epoch energy is GPU + CPU where the cell has any epoch with both known (NaN
    where either is unknown, dropped by the median), else GPU alone; a CPU cell's is its CPU energy."""
    gpu, cpu = _num(steady, "gpu_energy_j"), _num(steady, "cpu_energy_j")
    images = full_epoch_images(steady)
    both = (gpu.notna() & cpu.notna()).groupby([steady[c] for c in CLASS_CELL], dropna=False).transform("any")
    total = np.where(steady["device"] == "cpu", cpu, np.where(both, gpu + cpu, gpu))
    total = pd.Series(total, index=steady.index, dtype=float)
    return {
        "_gpu_energy_j": gpu,
        "_cpu_energy_j": cpu,
        "_gpu_util_pct": _num(steady, "gpu_util_pct"),
        "_gpu_j_per_image": gpu / images,
        "_cpu_j_per_image": cpu / images,
        "_energy_j": total,
        "_energy_j_per_image": total / images,
        "_both": both.astype(float),  # 1.0 for a cell with both counters: median 1.0
    }


def speedup(cpu_epoch_s, gpu_epoch_s) -> float:
    """speedup = median(cpu_epoch_s) / median(gpu_epoch_s).

    Each argument is one epoch time or a sequence of them (nulls ignored). NaN when either side has no
    samples or the GPU median is not positive: a missing device never gets a made-up number."""
    cpu = pd.Series(np.atleast_1d(np.asarray(cpu_epoch_s, dtype=float))).dropna()
    gpu = pd.Series(np.atleast_1d(np.asarray(gpu_epoch_s, dtype=float))).dropna()
    if cpu.empty or gpu.empty:
        return math.nan
    denominator = float(np.median(gpu))
    if not denominator > 0:
        return math.nan
    return float(np.median(cpu)) / denominator


def bootstrap_speedup_ci(
    cpu_samples,
    gpu_samples,
    *,
    n_resamples: int = CI_RESAMPLES,
    confidence: float = CI_CONFIDENCE,
    seed: int = CI_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of speedup = median(cpu) / median(gpu).

    Each resample draws len(cpu) values from cpu_samples and len(gpu) values from gpu_samples, with
    replacement (numpy Generator seeded with `seed`, so the same samples always give the same interval),
    and computes median(cpu resample) / median(gpu resample). The interval is the (1 - confidence) / 2
    and (1 + confidence) / 2 percentiles of the n_resamples ratios.

    Nulls are ignored. (nan, nan) when either side has fewer than 2 samples (a single sample has no
    spread to resample) or a resampled GPU median is not positive."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    cpu = np.atleast_1d(np.asarray(cpu_samples, dtype=float))
    gpu = np.atleast_1d(np.asarray(gpu_samples, dtype=float))
    cpu, gpu = cpu[~np.isnan(cpu)], gpu[~np.isnan(gpu)]
    if len(cpu) < 2 or len(gpu) < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    cpu_medians = _resampled_medians(rng, cpu, n_resamples)
    gpu_medians = _resampled_medians(rng, gpu, n_resamples)
    if not (gpu_medians > 0).all():
        return (math.nan, math.nan)
    ratios = cpu_medians / gpu_medians
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return (float(low), float(high))


def _resampled_medians(rng: np.random.Generator, values: np.ndarray, n_resamples: int) -> np.ndarray:
    """Medians of n_resamples resamples (with replacement) of `values`: the same draws as
    rng.choice(values, size=(n_resamples, n)) and the same medians as np.median(axis=1). The drawn
    indices are mapped to the values' ranks and those small integers partitioned (half the time of
    partitioning the drawn floats): the median's ranks give the median's values, as sorting is monotone."""
    n = len(values)
    drawn = rng.integers(0, n, size=(n_resamples, n))
    order = np.argsort(values, kind="stable")
    rank = np.empty(n, dtype=np.int16 if n < 2**15 else np.intp)
    rank[order] = np.arange(n)
    ranks = rank[drawn]
    middle = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
    ranks.partition(middle, axis=1)
    return values[order][ranks[:, middle]].mean(axis=1)


def energy_speedup(cpu_cell: pd.Series | None, gpu_cell: pd.Series | None) -> float:
    """energy speedup = CPU cell's cpu_energy_j / GPU cell's energy_j (median GPU + CPU energy per epoch).

    Rows of cell_summary. NaN unless the CPU cell has CPU energy and the GPU cell has both GPU and CPU
    energy (energy_scope == "GPU+CPU"): comparing CPU-package energy with GPU-only energy would flatter
    the GPU, and a missing counter never gets a made-up number."""
    if cpu_cell is None or gpu_cell is None or gpu_cell["energy_scope"] != "GPU+CPU":
        return math.nan
    numerator, denominator = float(cpu_cell["cpu_energy_j"]), float(gpu_cell["energy_j"])
    if math.isnan(numerator) or not denominator > 0:
        return math.nan
    return numerator / denominator


def _flags(side: str, row: pd.Series | None) -> list[str]:
    if row is None:
        return []
    flags = []
    if row["extrapolated"]:
        flags.append(f"extrapolated ({side})")
    if row["warmup_only"]:
        flags.append(f"warm-up only ({side})")
    if row["eval_partial"]:
        flags.append(f"partial-eval ({side})")
    if row["extrapolated"] and row["test_acc"] <= FEW_STEPS_ACC:  # NaN (no accuracy) compares False
        flags.append(f"few steps trained ({side})")
    if row.get("overlapped", False):
        flags.append(f"overlapped ({side})")
    if row["mixed"]:
        flags.append(f"mixed {row['mixed']} ({side})")
    if is_noisy(row["epoch_s_iqr"], row["epoch_s"]):
        flags.append(f"noisy ({side})")
    if row["n"] == 1:
        flags.append(f"single-sample ({side})")
    if row.get("host_steal_pct", math.nan) > STEAL_FLAG_PCT:
        flags.append(f"steal {row['host_steal_pct']:.0f}% ({side})")
    if side == "gpu" and launch_bound(row.get("gpu_util_pct", math.nan), row["data_share"]):
        flags.append("launch-bound (gpu)")
    return flags


def launch_bound(gpu_util_pct, data_share) -> bool:
    """A GPU cell the host's kernel launches hold back: util < LAUNCH_BOUND_UTIL_PCT and data-wait share
    <= INPUT_BOUND_SHARE, both measured (NaN or None: not called)."""
    try:
        util, share = float(gpu_util_pct), float(data_share)
    except (TypeError, ValueError):
        return False
    return util < LAUNCH_BOUND_UTIL_PCT and share <= INPUT_BOUND_SHARE


def speedup_table(epochs: pd.DataFrame, summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (model, batch_size, pipeline, precision) and per (cpu_class, gpu_class) combination of
    the hardware classes measured for it (analysis.pairing.class_pairs: every CPU class x every GPU
    class; a class is "" when unknown, e.g. schema-1 results, so one class a side gives one row), sorted
    by params:

    cpu_class, gpu_class (the cells' hw_class), params, cpu_epoch_s, gpu_epoch_s (cell medians, see
    cell_summary), cpu_epoch_s_iqr, gpu_epoch_s_iqr,
    speedup = speedup(cpu steady epoch_s, gpu steady epoch_s) = cpu_epoch_s / gpu_epoch_s (NaN when a
    device is missing), speedup_low, speedup_high = bootstrap_speedup_ci(the same samples) (NaN when a
    side has fewer than 2 samples), cpu_acc, gpu_acc, cpu_data_share, gpu_data_share, cpu_n, gpu_n,
    cpu_device, gpu_device, and flags: a comma-joined str of "extrapolated (cpu)", "warm-up only (gpu)",
    "partial-eval (cpu)", "mixed ... (cpu)", "noisy (gpu)" (see is_noisy), "single-sample (cpu)" (n == 1),
    ... ("" if none).

    Energy: cpu_energy_j (CPU cell's median CPU J/epoch), gpu_energy_j and gpu_util_pct (GPU cell's
    median GPU J/epoch and GPU utilization %), gpu_cell_energy_j and gpu_energy_scope (the GPU cell's
    energy_j, "GPU+CPU" or "GPU only"), and energy_speedup = energy_speedup(cpu cell, gpu cell): NaN
    unless CPU energy is known on both sides and GPU energy on the GPU side.

    cpu_capped, gpu_capped: the side's accuracy comes from capped work (capped: extrapolated epochs or a
    partial test pass), so it is not comparable with an uncapped other side's (accuracy_comparable).

    `summary`: cell_summary(epochs), when the caller has it already (the report does: computing it
    again cost ~0.5 s at 100k rows).
    """
    columns = PAIR + [
        "cpu_class", "gpu_class", "params", "cpu_epoch_s", "gpu_epoch_s", "cpu_epoch_s_iqr",
        "gpu_epoch_s_iqr", "speedup",
        "speedup_low", "speedup_high", "cpu_acc", "gpu_acc", "cpu_data_share",
        "gpu_data_share", "cpu_n", "gpu_n", "cpu_device", "gpu_device", "flags", "cpu_energy_j",
        "gpu_energy_j", "gpu_util_pct", "gpu_cell_energy_j", "gpu_energy_scope", "energy_speedup",
        "cpu_capped", "gpu_capped",
    ]  # fmt: skip
    summary = cell_summary(epochs) if summary is None else summary
    if summary.empty:
        return pd.DataFrame(columns=columns)
    steady = steady_epochs(epochs)
    # every cell's steady epoch_s samples in one group-by, looked up per pair (no per-pair masks)
    samples = {
        key: values.to_numpy(dtype=float)
        for key, values in _num(steady, "epoch_s").groupby([steady[c] for c in CLASS_CELL], dropna=False)
    }
    rows = []
    for key, g in summary.groupby(PAIR, dropna=False, sort=False):
        for cpu_cell, gpu_cell in class_pairs(g):
            side = {"cpu": cpu_cell, "gpu": gpu_cell}
            drawn = {dev: _samples(samples, side[dev]) for dev in DEVICES}
            rows.append(dict(zip(PAIR, key, strict=True), params=g["params"].max(), **_pair_row(side, drawn)))
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(["params"] + PAIR, kind="stable").reset_index(drop=True)


def _samples(samples: dict[tuple, np.ndarray], cell: pd.Series | None) -> np.ndarray:
    """The steady epoch_s samples of one cell (a cell_summary row); none for a missing side."""
    if cell is None:
        return np.array([], dtype=float)
    key = tuple(cell[c] for c in CLASS_CELL)
    found = samples.get(key)
    if found is None:  # a null key value: groupby keys hold NaN, which never equals itself
        found = next(
            (v for k, v in samples.items() if all(_same(a, b) for a, b in zip(k, key, strict=True))), None
        )
    return np.array([], dtype=float) if found is None else found


def _same(a, b) -> bool:
    return (pd.isna(a) and pd.isna(b)) if pd.isna(a) or pd.isna(b) else a == b


def _pair_row(side: dict[str, pd.Series | None], samples: dict[str, pd.Series]) -> dict:
    """The speedup_table columns after params for one CPU cell and one GPU cell (either may be None)."""

    def get(dev: str, col: str, default=np.nan):
        return side[dev][col] if side[dev] is not None else default

    low, high = bootstrap_speedup_ci(samples["cpu"], samples["gpu"])
    return dict(
        cpu_class=get("cpu", HW_CLASS, ""),
        gpu_class=get("gpu", HW_CLASS, ""),
        cpu_epoch_s=get("cpu", "epoch_s"),
        gpu_epoch_s=get("gpu", "epoch_s"),
        cpu_epoch_s_iqr=get("cpu", "epoch_s_iqr"),
        gpu_epoch_s_iqr=get("gpu", "epoch_s_iqr"),
        speedup=speedup(samples["cpu"], samples["gpu"]),
        speedup_low=low,
        speedup_high=high,
        cpu_acc=get("cpu", "test_acc"),
        gpu_acc=get("gpu", "test_acc"),
        cpu_data_share=get("cpu", "data_share"),
        gpu_data_share=get("gpu", "data_share"),
        cpu_n=get("cpu", "n", 0),
        gpu_n=get("gpu", "n", 0),
        cpu_device=get("cpu", "device_names", ""),
        gpu_device=get("gpu", "device_names", ""),
        flags=", ".join(_flags("cpu", side["cpu"]) + _flags("gpu", side["gpu"])),
        cpu_energy_j=get("cpu", "cpu_energy_j"),
        gpu_energy_j=get("gpu", "gpu_energy_j"),
        gpu_util_pct=get("gpu", "gpu_util_pct"),
        gpu_cell_energy_j=get("gpu", "energy_j"),
        gpu_energy_scope=get("gpu", "energy_scope", ""),
        energy_speedup=energy_speedup(side["cpu"], side["gpu"]),
        cpu_capped=capped(side["cpu"]),
        gpu_capped=capped(side["gpu"]),
    )


def capped(cell: pd.Series | None) -> bool:
    """Whether a cell_summary row's accuracy comes from capped work: --max-steps epochs (fewer training
    steps than a full epoch, so less learning) or a capped test pass (part of the test set)."""
    return cell is not None and bool(cell["extrapolated"] or cell["eval_partial"])


def accuracy_comparable(cpu_capped: bool, gpu_capped: bool) -> bool:
    """CPU and GPU accuracies compare only when both sides ran the same kind of work: a capped side's
    accuracy beside a full one's would read as a device difference that is really a step-count one."""
    return bool(cpu_capped) == bool(gpu_capped)
