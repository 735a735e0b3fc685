"""Statistics for the report: pure functions over the epoch DataFrame (no I/O, no plotting).

    from orchestrator.results.reader import read_results
    from orchestrator.analysis.stats import cell_summary
    epochs, trials = read_results(Path("results/s1"))
    print(cell_summary(epochs))   # per cell: medians, IQR, accuracy, energy, flags' inputs

The speedups between cells and their flags: orchestrator.analysis.speedups.

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
                    resampled with replacement from its steady epoch samples: speedups.bootstrap_speedup_ci
    noisy         = a side's epoch_s_iqr > NOISY_IQR_SHARE (10%) of its epoch_s median
    single-sample = a side has exactly one epoch_s sample, so no interval can be computed
    steal         = a side's median host_steal_pct > speedups.STEAL_FLAG_PCT (2%): the VM's hypervisor
                    took that share of the host's CPU time while it was measured (trainables.energy.host_load)
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

from orchestrator.analysis.bounds import INPUT_BOUND_SHARE  # noqa: F401  (defined there, read from here)
from orchestrator.results import rows

CELL = list(rows.CELL)  # the cell key: defined once, in orchestrator.results.rows
HW_CLASS = rows.HW_CLASS  # e.g. "gpu:H200", "cpu:EPYC-7763-64c" (orchestrator.lab.hardware); "" when unknown
CLASS_CELL = CELL + [HW_CLASS]  # what cell_summary groups by: a cell never pools hardware classes
DEVICES = ("cpu", "gpu")
RUN = list(rows.RUN)  # one training run (a repeat of a cell)
# Settings that should be constant inside a cell; pooling differing values would mix two experiments.
_MUST_MATCH = ["dataset", "cpus_allotted", "torch_threads", "data_workers"]
# A side is flagged "noisy" when the IQR of its epoch_s samples exceeds this share of their median.
NOISY_IQR_SHARE = 0.10

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
    """A copy of `epochs` whose cell-key columns with a default (rows.CELL_DEFAULTS, e.g. hw_class "")
    hold it where null or where the column is absent (results written before the column existed)."""
    out = rows.with_cell_defaults(epochs).copy()
    for col, default in rows.CELL_DEFAULTS.items():
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


def numeric(df: pd.DataFrame, col: str) -> pd.Series:
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
    steps = numeric(epochs, "steps")
    return numeric(epochs, "full_steps") / steps.where(steps > 0) * numeric(epochs, "images")


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

    The epoch's split and speed, medians over the same epochs (what the breakdown and throughput figures
    draw): data_s, compute_s, eval_s (the test pass, outside epoch_s), images_per_s; other_s =
    max(epoch_s - data_s - compute_s, 0), a missing data_s / compute_s counting as 0, so that data +
    compute + other stack up to the median epoch time.
    """
    columns = CLASS_CELL + [
        "params", "epoch_s", "epoch_s_iqr", "n", "runs", "data_share", "test_acc", "extrapolated",
        "eval_partial", "warmup_only", "overlapped", "mixed", "device_names", "hosts", "gpu_energy_j",
        "cpu_energy_j", "gpu_util_pct", "gpu_j_per_image", "cpu_j_per_image", "energy_j", "energy_scope",
        "energy_j_per_image", "host_steal_pct", *_SPLIT, "other_s",
    ]  # fmt: skip
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    epochs = with_hw_class(epochs)
    steady = steady_epochs(epochs)
    # one group-by per statistic over all cells at once: the former per-cell loop with boolean masks
    # over every row cost ~55 s at 100k rows
    epoch_s = numeric(steady, "epoch_s")
    steady = steady.assign(
        _epoch_s=epoch_s,
        _ratio=numeric(steady, "data_s") / epoch_s.where(epoch_s > 0),
        _extrapolated=steady["extrapolated"].fillna(False).astype(bool),
        _overlapped=steady["overlapped_with"].notna() if "overlapped_with" in steady else False,
        _steal=numeric(steady, "host_steal_pct"),
        **{f"_{c}": numeric(steady, c) for c in _SPLIT},
        **_energy_columns(steady),
    )
    g = steady.groupby(CLASS_CELL, dropna=False, sort=False)
    out = g.agg(
        params=("params", "max"),
        epoch_s=("_epoch_s", "median"),
        n=("_epoch_s", "count"),
        data_share=("_ratio", "median"),
        extrapolated=("_extrapolated", "any"),
        warmup_only=("warmup_only", "all"),
        overlapped=("_overlapped", "any"),
        device_names=("device_name", _names),
        hosts=("host", _names),
        host_steal_pct=("_steal", "median"),
        **{c: (f"_{c}", "median") for c in _ENERGY_MEDIANS + _SPLIT},
    )
    out["epoch_s_iqr"] = _iqrs(steady["_epoch_s"].to_numpy(dtype=float), g.ngroup().to_numpy())
    out["other_s"] = (out["epoch_s"] - out["data_s"].fillna(0) - out["compute_s"].fillna(0)).clip(lower=0)
    runs = steady.drop_duplicates(CLASS_CELL + RUN)
    out["runs"] = runs.groupby(CLASS_CELL, dropna=False, sort=False).size()
    mixed = {c: g[c].nunique(dropna=True) > 1 for c in _MUST_MATCH if c in steady}
    out["mixed"] = [", ".join(c for c in mixed if mixed[c].iloc[i]) for i in range(len(out))]
    whole = epochs.assign(_partial=epochs["eval_partial"].fillna(False).astype(bool))
    out["eval_partial"] = whole.groupby(CLASS_CELL, dropna=False, sort=False)["_partial"].any()
    last = epochs.sort_values("epoch", kind="stable").groupby(RUN, dropna=False).tail(1)
    out["test_acc"] = numeric(last, "test_acc").groupby([last[c] for c in CLASS_CELL], dropna=False).mean()
    out = out.reset_index()
    out["params"] = out["params"].astype(float) if out["params"].isna().any() else out["params"].astype(int)
    scope = np.where(out["device"] == "cpu", "CPU", np.where(out.pop("both") > 0, "GPU+CPU", "GPU only"))
    out["energy_scope"] = np.where(out["energy_j"].isna(), "", scope)
    out = out[columns].astype({"extrapolated": bool, "eval_partial": bool, "overlapped": bool})
    return out.sort_values(SUMMARY_ORDER, kind="stable").reset_index(drop=True)


def _iqrs(values: np.ndarray, group: np.ndarray) -> list[float]:
    """q75 - q25 of each group's non-null values (group: each value's group number, 0..k-1 in output
    order), NaN for none, as Series.quantile computes them (np.percentile, linear), one np.percentile a
    group: a lambda a group through pandas cost ~1.5 s at 100,800 rows."""
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(group.max() + 2 if len(group) else 1))
    out = []
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        v = values[order[start:end]]
        v = v[~np.isnan(v)]
        q25, q75 = np.percentile(v, [25, 75]) if len(v) else (np.nan, np.nan)
        out.append(float(q75 - q25))
    return out


# cell_summary's row order (stable: cells of one class keep their order of appearance)
SUMMARY_ORDER = ["params", "model", "device", HW_CLASS]
# the epoch split and speed columns of cell_summary: medians of the epoch column of that name
_SPLIT = ("data_s", "compute_s", "eval_s", "images_per_s")
# the energy columns of cell_summary that are medians of a per-epoch column of _energy_columns
_ENERGY_MEDIANS = ("gpu_energy_j", "cpu_energy_j", "gpu_util_pct", "gpu_j_per_image", "cpu_j_per_image",
                   "energy_j", "energy_j_per_image", "both")  # fmt: skip


def _energy_columns(steady: pd.DataFrame) -> dict[str, pd.Series]:
    """Per steady epoch, the values whose per-cell medians are cell_summary's energy columns (see its
    docstring): a GPU cell's epoch energy is GPU + CPU where the cell has any epoch with both known (NaN
    where either is unknown, dropped by the median), else GPU alone; a CPU cell's is its CPU energy."""
    gpu, cpu = numeric(steady, "gpu_energy_j"), numeric(steady, "cpu_energy_j")
    images = full_epoch_images(steady)
    both = (gpu.notna() & cpu.notna()).groupby([steady[c] for c in CLASS_CELL], dropna=False).transform("any")
    total = np.where(steady["device"] == "cpu", cpu, np.where(both, gpu + cpu, gpu))
    total = pd.Series(total, index=steady.index, dtype=float)
    return {
        "_gpu_energy_j": gpu,
        "_cpu_energy_j": cpu,
        "_gpu_util_pct": numeric(steady, "gpu_util_pct"),
        "_gpu_j_per_image": gpu / images,
        "_cpu_j_per_image": cpu / images,
        "_energy_j": total,
        "_energy_j_per_image": total / images,
        "_both": both.astype(float),  # 1.0 for a cell with both counters: median 1.0
    }


def accuracy_curves(epochs: pd.DataFrame) -> pd.DataFrame:
    """Test accuracy after each epoch: one row per cell (CELL, hardware classes pooled) and epoch with
    test_acc = the median over the cell's runs of that epoch's test_acc (non-null ones; epochs without any
    are left out) and params (max), sorted by params, model, cell and epoch."""
    columns = CELL + ["epoch", "params", "test_acc"]
    acc = (
        rows.with_cell_defaults(epochs.assign(test_acc=numeric(epochs, "test_acc")))
        if len(epochs)
        else epochs
    )
    if acc.empty:
        return pd.DataFrame(columns=columns)
    acc = acc[np.isfinite(acc["test_acc"].to_numpy(dtype=float))]
    out = acc.groupby(CELL + ["epoch"], dropna=False).agg(
        params=("params", "max"), test_acc=("test_acc", "median")
    )
    out = out.reset_index()[columns]
    return out.sort_values(["params", "model", *CELL[1:], "epoch"], kind="stable").reset_index(drop=True)


def epochs_on_disk(epochs: pd.DataFrame, trials: pd.DataFrame, wanted) -> dict[tuple, tuple[int, int]]:
    """(sweep, trial) -> (epochs on disk, epochs planned) for each (sweep, trial) of `wanted`: the distinct
    epoch numbers of the trial's epoch rows over all its attempts (an attempt that continued from a
    checkpoint adds to the ones before it; a retry from epoch 1 counts them once), at least the trials
    table's largest epochs_done; planned is its largest epochs_planned. Trials with no epoch are left out."""
    wanted = set(wanted)
    if not wanted or trials.empty or "epochs_done" not in trials:
        return {}
    mine = trials[[k in wanted for k in zip(trials["sweep"], trials["trial"], strict=True)]]
    if mine.empty:
        return {}
    by_trial = mine.groupby(["sweep", "trial"])
    sides = by_trial.agg(done=("epochs_done", "max"), planned=("epochs_planned", "max"))
    if not epochs.empty:
        rows = epochs[[k in wanted for k in zip(epochs["sweep"], epochs["trial"], strict=True)]]
        distinct = rows.drop_duplicates(["sweep", "trial", "epoch"]).groupby(["sweep", "trial"]).size()
        sides["done"] = np.fmax(sides["done"].astype(float), distinct.reindex(sides.index).astype(float))
    return {
        key: (int(r.done), int(r.planned))
        for key, r in zip(sides.index, sides.itertuples(), strict=True)
        if not is_missing(r.done) and r.done > 0
    }
