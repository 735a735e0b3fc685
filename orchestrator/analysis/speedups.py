"""Speedups between a CPU cell and a GPU cell: the ratio, its bootstrap interval, the energy ratio,
the flags that qualify a pair, and the table of every pair (definitions: orchestrator.analysis.stats).

    from orchestrator.analysis.speedups import speedup_table
    epochs, trials = read_results(Path("results/s1"))
    print(speedup_table(epochs))   # per (model, batch_size, pipeline, precision, CPU class, GPU class)
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from orchestrator.analysis.bootstrap import resampled_medians
from orchestrator.analysis.bounds import LAUNCH_BOUND_UTIL_PCT, launch_bound  # noqa: F401  (re-exported)
from orchestrator.analysis.pairing import PAIR, VARIANT_COLUMNS, class_pairs
from orchestrator.analysis.stats import DEVICES, HW_CLASS, is_noisy
from orchestrator.analysis.variants import Variants, variants
from trainables.config import NUM_CLASSES

# A side is flagged "steal" when the hypervisor took more than this share of the host's CPU time (%).
STEAL_FLAG_PCT = 2.0
# a --max-steps side this close to chance (10 classes: <= 15%) learned little in its capped epochs: its
# accuracy says so, not the device
FEW_STEPS_ACC = 1.5 / NUM_CLASSES
CI_CONFIDENCE = 0.95  # the speedup interval's confidence level
CI_RESAMPLES = 2000  # bootstrap resamples per interval
CI_SEED = 0  # fixed, so the same results always give the same report


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
    ratios = bootstrap_speedup_ratios(cpu_samples, gpu_samples, n_resamples=n_resamples, seed=seed)
    if ratios is None:
        return (math.nan, math.nan)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return (float(low), float(high))


def bootstrap_speedup_ratios(
    cpu_samples, gpu_samples, *, n_resamples: int = CI_RESAMPLES, seed: int = CI_SEED
) -> np.ndarray | None:
    """The n_resamples resampled speedups median(cpu resample) / median(gpu resample) that
    bootstrap_speedup_ci takes its percentiles of (the same draws for the same samples and seed);
    None where it gives (nan, nan): a side with fewer than 2 samples, or a resampled GPU median <= 0.
    analysis.scaling fits its exponent to these same resamples."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    cpu = np.atleast_1d(np.asarray(cpu_samples, dtype=float))
    gpu = np.atleast_1d(np.asarray(gpu_samples, dtype=float))
    cpu, gpu = cpu[~np.isnan(cpu)], gpu[~np.isnan(gpu)]
    if len(cpu) < 2 or len(gpu) < 2:
        return None
    # the report asks for each pair's resamples up to three times (its table, the explained answer, the
    # scaling fit): analysis.bootstrap keeps them
    return _cached_ratios(cpu.tobytes(), gpu.tobytes(), n_resamples, seed)


@functools.lru_cache(maxsize=512)
def _cached_ratios(cpu_bytes: bytes, gpu_bytes: bytes, n_resamples: int, seed: int) -> np.ndarray | None:
    cpu, gpu = np.frombuffer(cpu_bytes), np.frombuffer(gpu_bytes)
    # one generator: the CPU side's resamples first, then the GPU side's from where they left it
    cpu_medians = resampled_medians(cpu, (len(cpu),), n_resamples, seed)
    gpu_medians = resampled_medians(gpu, (len(cpu), len(gpu)), n_resamples, seed)
    if not (gpu_medians > 0).all():
        return None
    ratios = cpu_medians / gpu_medians
    ratios.setflags(write=False)  # shared by every caller of the cache
    return ratios


def bootstrap_median_ci(
    samples, *, n_resamples: int = CI_RESAMPLES, confidence: float = CI_CONFIDENCE, seed: int = CI_SEED
) -> tuple[float, float]:
    """Percentile bootstrap interval of median(samples): one side's epoch time, the result of a cell with
    no other device to divide by (a CPU-only sweep). Resampled as bootstrap_speedup_ci resamples a side;
    (nan, nan) with fewer than 2 samples."""
    values = np.atleast_1d(np.asarray(samples, dtype=float))
    values = values[~np.isnan(values)]
    if len(values) < 2:
        return (math.nan, math.nan)
    medians = resampled_medians(values, (len(values),), n_resamples, seed)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return (float(low), float(high))


def energy_speedup(cpu_cell: pd.Series | dict | None, gpu_cell: pd.Series | dict | None) -> float:
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


def _flags(side: str, row: dict | None) -> list[str]:
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


def speedup_table(epochs: pd.DataFrame, summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """pair_speedups of the variant cells of `epochs` (stats.ok_epochs rows; analysis.variants).
    `summary`: cell_summary(epochs), when the caller has it already (the report does: computing it
    again cost ~0.5 s at 100k rows)."""
    return pair_speedups(variants(epochs, summary))


def pair_speedups(v: Variants) -> pd.DataFrame:
    """One row per (model, batch_size, pipeline, precision) and per (CPU cell, GPU cell) combination of
    its variant cells (analysis.variants: a cell and the workers and CPUs that fed it; analysis.pairing.
    class_pairs: every CPU class and variant x every GPU class and variant, as analysis.answer.pair_table
    pairs them; a class is "" when unknown, e.g. schema-1 results, so one class and one variant a side
    give one row), sorted by params:

    cpu_class, gpu_class (the cells' hw_class), params, cpu_epoch_s, gpu_epoch_s (cell medians, see
    cell_summary), cpu_epoch_s_iqr, gpu_epoch_s_iqr, cpu_epoch_s_low/high and gpu_epoch_s_low/high (each
    side's 95% bootstrap interval of its median, bootstrap_median_ci; NaN under 2 samples),
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

    cpu_workers, cpu_cpus, gpu_workers, gpu_cpus (pairing.VARIANT_COLUMNS): each side's variant, its
    data_workers and cpus_allotted (-1 where not recorded, null for a missing side). Each cell's values
    are single, so "mixed" never names them.
    """
    columns = PAIR + [
        "cpu_class", "gpu_class", "params", "cpu_epoch_s", "gpu_epoch_s", "cpu_epoch_s_iqr",
        "gpu_epoch_s_iqr", "cpu_epoch_s_low", "cpu_epoch_s_high", "gpu_epoch_s_low", "gpu_epoch_s_high",
        "speedup", "speedup_low", "speedup_high", "cpu_acc", "gpu_acc", "cpu_data_share",
        "gpu_data_share", "cpu_n", "gpu_n", "cpu_device", "gpu_device", "flags", "cpu_energy_j",
        "gpu_energy_j", "gpu_util_pct", "gpu_cell_energy_j", "gpu_energy_scope", "energy_speedup",
        "cpu_capped", "gpu_capped", *VARIANT_COLUMNS,
    ]  # fmt: skip
    if v.cells.empty:
        return pd.DataFrame(columns=columns)
    # the cells' rows as records, grouped by PAIR key in order of appearance (a group-by with
    # iterrows per key cost ~4 s at 100,800 rows, most of it building a Series per row)
    groups: dict[tuple, list[dict]] = {}
    for cell in v.cells.to_dict("records"):
        groups.setdefault(tuple(None if pd.isna(cell[c]) else cell[c] for c in PAIR), []).append(cell)
    rows = []
    for cells in groups.values():
        params = [c["params"] for c in cells if not pd.isna(c["params"])]
        for cpu_cell, gpu_cell in class_pairs(cells):
            side = {"cpu": cpu_cell, "gpu": gpu_cell}
            drawn = {dev: _samples(v, side[dev]) for dev in DEVICES}
            key = {c: cells[0][c] for c in PAIR}
            rows.append(dict(key, params=max(params) if params else np.nan, **_pair_row(side, drawn)))
    out = pd.DataFrame(rows, columns=columns)
    for col in VARIANT_COLUMNS:  # integers, null where a side is missing (as analysis.answer's tables)
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("Int64")
    return out.sort_values(["params"] + PAIR, kind="stable").reset_index(drop=True)


def _samples(v: Variants, cell: dict | None) -> np.ndarray:
    """The steady epoch_s samples of one variant cell; none for a missing side."""
    return np.array([], dtype=float) if cell is None else v.samples[cell["name"]]


def _epoch_ci(device: str, samples: np.ndarray) -> dict:
    """A side's epoch-time interval (bootstrap_median_ci), as `{cpu,gpu}_epoch_s_low` and `_high`."""
    low, high = bootstrap_median_ci(samples)
    return {f"{device}_epoch_s_low": low, f"{device}_epoch_s_high": high}


def _pair_row(side: dict[str, dict | None], samples: dict[str, np.ndarray]) -> dict:
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
        **_epoch_ci("cpu", samples["cpu"]),
        **_epoch_ci("gpu", samples["gpu"]),
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
        cpu_workers=get("cpu", "data_workers", None),
        cpu_cpus=get("cpu", "cpus_allotted", None),
        gpu_workers=get("gpu", "data_workers", None),
        gpu_cpus=get("gpu", "cpus_allotted", None),
    )


def capped(cell: pd.Series | dict | None) -> bool:
    """Whether a cell_summary row's accuracy comes from capped work: --max-steps epochs (fewer training
    steps than a full epoch, so less learning) or a capped test pass (part of the test set)."""
    return cell is not None and bool(cell["extrapolated"] or cell["eval_partial"])


def accuracy_comparable(cpu_capped: bool, gpu_capped: bool) -> bool:
    """CPU and GPU accuracies compare only when both sides ran the same kind of work: a capped side's
    accuracy beside a full one's would read as a device difference that is really a step-count one."""
    return bool(cpu_capped) == bool(gpu_capped)
