"""orchestrator.analysis.stats on hand-made epoch rows whose expected numbers are worked out in the comments.

.venv/bin/pytest -q tests/test_stats.py
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis.pairing import (
    class_label,
    pair_label,
    several_classes,
    several_pairs,
    speedup_matrices,
)
from orchestrator.analysis.speedups import bootstrap_speedup_ci, energy_speedup, speedup, speedup_table
from orchestrator.analysis.stats import (
    NOISY_IQR_SHARE,
    cell_summary,
    full_epoch_images,
    iqr,
    is_noisy,
    ok_epochs,
    steady_epochs,
)
from orchestrator.report.formats import fmt_speedup_ci, fmt_util

WARMUP_S = 1e6  # a warm-up epoch far slower than any real one: if it leaks into a median, numbers explode


def run_rows(model="resnet18", device="cpu", epoch_s=(WARMUP_S, 30.0, 34.0), repeat=0, **over) -> list[dict]:
    """Epoch rows of one run (a repeat of a cell); epoch 1 is the warm-up, as the trainable writes it."""
    bs, pipeline, precision = (
        over.pop("batch_size", 128),
        over.pop("pipeline", "loader"),
        over.pop("precision", "fp32"),
    )
    trial = f"{model}/{device}/bs{bs}/{pipeline}/{precision}/r{repeat}"
    rows = []
    for i, secs in enumerate(epoch_s, start=1):
        rows.append(
            {
                "sweep": "s1",
                "cell": trial.rsplit("/", 1)[0],
                "trial": trial,
                "attempt": 1,
                "model": model,
                "params": {"simple_cnn": 500_000, "resnet18": 11_689_512, "resnet50": 25_557_032}[model],
                "device": device,
                "device_name": "NVIDIA H200" if device == "gpu" else "Xeon 8480+",
                "host": "node1",
                "batch_size": bs,
                "pipeline": pipeline,
                "precision": precision,
                "dataset": "cifar10",
                "repeat": repeat,
                "seed": repeat,
                "cpus_allotted": 8,
                "torch_threads": 8,
                "data_workers": 2,
                "epoch": i,
                "warmup": i == 1,
                "epoch_s": secs,
                "measured_s": secs,
                "data_s": secs / 4,
                "compute_s": secs * 3 / 4,
                "eval_s": 1.0,
                "steps": 391,
                "full_steps": 391,
                "extrapolated": False,
                "images": 50_000,
                "images_per_s": 50_000 / secs,
                "train_loss": 1.0,
                "test_acc": 0.1 * i,
                "eval_images": 10_000,
                "eval_partial": False,
                "gpu_mem_peak_mb": 1000.0 if device == "gpu" else None,
            }
        )
        rows[-1].update(over)
    return rows


def frame(*runs: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([row for run in runs for row in run])


def pooled_pair() -> pd.DataFrame:
    # CPU steady epochs pooled over two repeats: 30, 34, 32, 40 -> median 33
    # GPU steady epochs pooled over two repeats:  4,  6,  5,  7 -> median 5.5      speedup = 33 / 5.5
    return frame(
        run_rows(device="cpu", epoch_s=(WARMUP_S, 30.0, 34.0), repeat=0),
        run_rows(device="cpu", epoch_s=(WARMUP_S, 32.0, 40.0), repeat=1),
        run_rows(device="gpu", epoch_s=(WARMUP_S, 4.0, 6.0), repeat=0),
        run_rows(device="gpu", epoch_s=(WARMUP_S, 5.0, 7.0), repeat=1),
    )


def test_speedup_is_exactly_ratio_of_pooled_steady_medians():
    table = speedup_table(pooled_pair())
    assert len(table) == 1
    row = table.iloc[0]
    assert row["cpu_epoch_s"] == 33.0
    assert row["gpu_epoch_s"] == 5.5
    assert row["speedup"] == 33.0 / 5.5
    # not the ratio of means (34 / 5.5) nor the mean of per-repeat ratios: the formula is pinned
    assert row["speedup"] != 34.0 / 5.5
    assert (row["cpu_n"], row["gpu_n"]) == (4, 4)
    # IQR (linear percentiles): CPU 35.5 - 31.5 = 4 > 10% of 33; GPU 6.25 - 4.75 = 1.5 > 10% of 5.5
    assert (row["cpu_epoch_s_iqr"], row["gpu_epoch_s_iqr"]) == (4.0, 1.5)
    assert row["flags"] == "noisy (cpu), noisy (gpu)"


def test_speedup_function():
    assert speedup([30.0, 34.0, 32.0, 40.0], [4.0, 6.0, 5.0, 7.0]) == 33.0 / 5.5
    assert speedup(10.0, 4.0) == 2.5
    assert math.isnan(speedup([], [1.0]))
    assert math.isnan(speedup([1.0], []))
    assert math.isnan(speedup([1.0], [0.0]))
    assert speedup([3.0, None, 5.0], [2.0]) == 2.0  # nulls ignored: median(3, 5) / 2


def test_steady_epochs_excludes_warmup():
    steady = steady_epochs(pooled_pair())
    assert not steady["warmup"].any()
    assert WARMUP_S not in steady["epoch_s"].tolist()
    assert len(steady) == 8
    assert not steady["warmup_only"].any()


def test_warmup_only_cell_falls_back_and_is_flagged():
    df = frame(
        run_rows(device="cpu", epoch_s=(WARMUP_S, 30.0)),
        run_rows(device="gpu", epoch_s=(12.0,)),  # a 1-epoch run: only its warm-up epoch exists
    )
    steady = steady_epochs(df)
    gpu = steady[steady["device"] == "gpu"]
    assert gpu["epoch_s"].tolist() == [12.0] and gpu["warmup_only"].all()
    assert not steady.loc[steady["device"] == "cpu", "warmup_only"].any()
    summary = cell_summary(df).set_index("device")
    assert summary.loc["gpu", "warmup_only"] and not summary.loc["cpu", "warmup_only"]
    row = speedup_table(df).iloc[0]
    assert row["speedup"] == 30.0 / 12.0
    assert row["flags"] == "single-sample (cpu), warm-up only (gpu), single-sample (gpu)"
    assert math.isnan(row["speedup_low"]) and math.isnan(row["speedup_high"])


@pytest.mark.parametrize(
    "gpu_over",
    [{"batch_size": 256}, {"pipeline": "resident"}, {"precision": "amp"}],
    ids=["batch_size", "pipeline", "precision"],
)
def test_pairing_never_crosses_mismatched_settings(gpu_over):
    df = frame(run_rows(device="cpu"), run_rows(device="gpu", epoch_s=(WARMUP_S, 3.0), **gpu_over))
    table = speedup_table(df)
    assert len(table) == 2  # two rows, each with one device and no speedup
    assert table["speedup"].isna().all()
    cpu_row = table[table["cpu_n"] > 0].iloc[0]
    gpu_row = table[table["gpu_n"] > 0].iloc[0]
    assert cpu_row["cpu_epoch_s"] == 32.0 and math.isnan(cpu_row["gpu_epoch_s"])
    assert gpu_row["gpu_epoch_s"] == 3.0 and math.isnan(gpu_row["cpu_epoch_s"])


def test_cpu_only_model_has_no_speedup():
    df = frame(
        run_rows(device="cpu"),
        run_rows(device="gpu", epoch_s=(WARMUP_S, 4.0)),
        run_rows(model="resnet50", device="cpu", epoch_s=(WARMUP_S, 500.0)),
    )
    table = speedup_table(df).set_index("model")
    assert table.loc["resnet18", "speedup"] == 32.0 / 4.0
    assert math.isnan(table.loc["resnet50", "speedup"])
    assert math.isnan(table.loc["resnet50", "gpu_epoch_s"]) and table.loc["resnet50", "gpu_n"] == 0
    assert table.loc["resnet50", "cpu_epoch_s"] == 500.0


def test_table_sorted_by_params():
    df = frame(
        run_rows(model="resnet50", device="gpu"),
        run_rows(model="simple_cnn", device="gpu"),
        run_rows(model="resnet18", device="gpu"),
    )
    assert speedup_table(df)["model"].tolist() == ["simple_cnn", "resnet18", "resnet50"]


def test_cell_summary_numbers():
    df = pooled_pair()
    # data_s / epoch_s is 1/4 on every row except one GPU epoch set to 3/6 = 0.5: median of 1/4 x3, 0.5 -> 1/4
    df.loc[(df["device"] == "gpu") & (df["epoch"] == 2) & (df["repeat"] == 0), "data_s"] = 3.0
    # final accuracy: last epoch (3) of each run; repeat 0 -> 0.5, repeat 1 -> 0.7, mean 0.6 (epoch 2 ignored)
    df.loc[(df["epoch"] == 3) & (df["repeat"] == 0), "test_acc"] = 0.5
    df.loc[(df["epoch"] == 3) & (df["repeat"] == 1), "test_acc"] = 0.7
    summary = cell_summary(df).set_index("device")
    assert summary.loc["cpu", "epoch_s"] == 33.0 and summary.loc["gpu", "epoch_s"] == 5.5
    assert summary.loc["gpu", "data_share"] == 0.25
    assert summary.loc["cpu", "test_acc"] == pytest.approx(0.6)
    assert summary.loc["gpu", "n"] == 4 and summary.loc["gpu", "runs"] == 2
    assert summary.loc["gpu", "device_names"] == "NVIDIA H200"
    assert summary.loc["cpu", "device_names"] == "Xeon 8480+"


def test_data_share_is_median_of_ratios():
    # steady ratios 1/10, 4/20, 0.9/1 -> median 0.2; median(data)/median(epoch) = 1/10 would differ
    df = frame(run_rows(device="gpu", epoch_s=(WARMUP_S, 10.0, 20.0, 1.0)))
    df["data_s"] = [0.0, 1.0, 4.0, 0.9]  # warm-up ratio 0 excluded
    assert cell_summary(df).iloc[0]["data_share"] == pytest.approx(0.2)


def test_flags_extrapolated_and_partial_eval():
    df = frame(
        run_rows(device="cpu", extrapolated=True),
        run_rows(device="gpu", epoch_s=(WARMUP_S, 4.0), eval_partial=True),
    )
    flags = speedup_table(df).iloc[0]["flags"]
    assert "extrapolated (cpu)" in flags and "extrapolated (gpu)" not in flags
    assert "partial-eval (gpu)" in flags and "partial-eval (cpu)" not in flags


def test_mixed_settings_inside_a_cell_are_flagged():
    df = frame(run_rows(device="cpu", repeat=0), run_rows(device="cpu", repeat=1, torch_threads=4))
    assert "mixed torch_threads (cpu)" in speedup_table(df).iloc[0]["flags"]


def test_workers_and_cpus_make_variant_rows_not_mixed_ones():
    """data_workers and cpus_allotted are what a variant cell is (analysis.variants): runs that differ in
    them are two rows, each its own median, never one "mixed" cell."""
    df = frame(run_rows(device="cpu", repeat=0), run_rows(device="cpu", repeat=1, data_workers=8))
    table = speedup_table(df)
    assert list(table["cpu_workers"]) == [2, 8] and not table["flags"].str.contains("mixed").any()


def test_ok_epochs_drops_failed_attempts_and_duplicates():
    df = pooled_pair()
    failed = df[df["repeat"] == 1][["sweep", "trial", "attempt"]].drop_duplicates().assign(status="error")
    trials = pd.concat(
        [failed, pd.DataFrame({"sweep": ["s1"], "trial": ["x"], "attempt": [1], "status": ["ok"]})]
    )
    kept = ok_epochs(pd.concat([df, df]), trials)
    assert len(kept) == 6 and set(kept["repeat"]) == {0}
    assert np.array_equal(
        np.sort(kept["epoch_s"].to_numpy()), np.sort(df[df["repeat"] == 0]["epoch_s"].to_numpy())
    )


def test_empty_input_gives_empty_tables():
    empty = pd.DataFrame(columns=pooled_pair().columns)
    assert speedup_table(empty).empty and "speedup" in speedup_table(empty).columns
    assert cell_summary(empty).empty and "epoch_s" in cell_summary(empty).columns


# ---- energy ------------------------------------------------------------------------------------------

WARMUP_J = 1e9  # a warm-up epoch's energy far above any real one: if it leaks into a median, it shows


def energy_run(device, gpu_j=None, cpu_j=None, util=None, **over) -> list[dict]:
    """One run with 3 steady epochs; per-epoch energy lists (None = not measured) after a warm-up epoch.
    Capped like --max-steps 100 of 400: 100 steps x 128 images measured, energy scaled to the full epoch,
    so the full epoch has 400 / 100 * 12_800 = 51_200 images."""
    rows = run_rows(device=device, epoch_s=(WARMUP_S, 30.0, 34.0, 32.0), **over)
    for name, values in (("gpu_energy_j", gpu_j), ("cpu_energy_j", cpu_j), ("gpu_util_pct", util)):
        for row, value in zip(rows, [WARMUP_J, *values] if values else [None] * 4, strict=True):
            row[name] = value
    for row in rows:
        row.update(steps=100, full_steps=400, images=12_800, extrapolated=True)
    return rows


def test_full_epoch_images_scales_the_measured_window():
    df = frame(energy_run("gpu"))
    assert full_epoch_images(df).tolist() == [51_200.0] * 4
    df.loc[1, "steps"] = 0  # no steps measured: no image count, not a division by zero
    assert math.isnan(full_epoch_images(df)[1])


def test_energy_medians_and_joules_per_image():
    # GPU cell: steady GPU J 800, 1000, 900 -> median 900; CPU J 100, 200, 400 -> median 200
    # util 40, 60, 50 -> 50; per-epoch GPU+CPU 900, 1200, 1300 -> median 1200 (not 900 + 200 = 1100)
    # J/image divides by the full-epoch images 51_200, not the 12_800 measured (4x too high)
    df = frame(
        energy_run("gpu", gpu_j=[800.0, 1000.0, 900.0], cpu_j=[100.0, 200.0, 400.0], util=[40, 60, 50])
    )
    row = cell_summary(df).iloc[0]
    assert row["gpu_energy_j"] == 900.0
    assert row["cpu_energy_j"] == 200.0
    assert row["gpu_util_pct"] == 50.0
    assert row["gpu_j_per_image"] == 900.0 / 51_200
    assert row["cpu_j_per_image"] == 200.0 / 51_200
    assert row["energy_j"] == 1200.0 and row["energy_scope"] == "GPU+CPU"
    assert row["energy_j_per_image"] == 1200.0 / 51_200
    assert row["gpu_j_per_image"] != 900.0 / 12_800


def test_energy_per_image_is_a_median_of_per_epoch_ratios():
    # epochs with different caps: 800 J / (400/100 * 12_800) = 800/51_200; 1000 J / (400/200 * 25_600)
    # = 1000/51_200; 600 J / (400/400 * 40_000) = 600/40_000 -> sorted 0.015, 0.015625, 0.01953 -> 0.015625
    df = frame(energy_run("gpu", gpu_j=[800.0, 1000.0, 600.0]))
    df.loc[2, ["steps", "images"]] = [200, 25_600]
    df.loc[3, ["steps", "images"]] = [400, 40_000]
    assert cell_summary(df).iloc[0]["gpu_j_per_image"] == 800.0 / 51_200


def test_gpu_cell_without_cpu_energy_is_gpu_only_and_has_no_energy_speedup():
    df = frame(
        energy_run("cpu", cpu_j=[3000.0, 3400.0, 3200.0]),
        energy_run("gpu", gpu_j=[800.0, 1000.0, 900.0], util=[40, 60, 50]),  # RAPL unreadable on GPU host
    )
    summary = cell_summary(df).set_index("device")
    assert summary.loc["gpu", "energy_j"] == 900.0 and summary.loc["gpu", "energy_scope"] == "GPU only"
    assert math.isnan(summary.loc["gpu", "cpu_energy_j"])
    assert summary.loc["cpu", "energy_j"] == 3200.0 and summary.loc["cpu", "energy_scope"] == "CPU"
    assert math.isnan(summary.loc["cpu", "gpu_energy_j"]) and math.isnan(summary.loc["cpu", "gpu_util_pct"])
    row = speedup_table(df).iloc[0]
    assert math.isnan(row["energy_speedup"])  # 3200 / 900 would compare CPU packages with a GPU board only
    assert row["gpu_energy_j"] == 900.0 and row["gpu_util_pct"] == 50.0
    assert row["gpu_energy_scope"] == "GPU only" and row["cpu_energy_j"] == 3200.0


def test_energy_speedup_exact_when_all_counters_are_known():
    # CPU cell: CPU J 3000, 3400, 3200 -> 3200; GPU cell: per-epoch GPU+CPU 900, 1200, 1300 -> 1200
    df = frame(
        energy_run("cpu", cpu_j=[3000.0, 3400.0, 3200.0]),
        energy_run("gpu", gpu_j=[800.0, 1000.0, 900.0], cpu_j=[100.0, 200.0, 400.0]),
    )
    row = speedup_table(df).iloc[0]
    assert row["energy_speedup"] == 3200.0 / 1200.0
    assert row["gpu_cell_energy_j"] == 1200.0 and row["gpu_energy_scope"] == "GPU+CPU"
    assert row["speedup"] == 1.0  # same epoch times on both sides: the energy ratio is its own number


@pytest.mark.parametrize(
    "cpu_side, gpu_side",
    [
        ({}, {"gpu_j": [800.0, 1000.0, 900.0], "cpu_j": [100.0, 200.0, 400.0]}),  # no RAPL on the CPU host
        ({"cpu_j": [3000.0, 3400.0, 3200.0]}, {"cpu_j": [100.0, 200.0, 400.0]}),  # no NVML energy
        ({"cpu_j": [3000.0, 3400.0, 3200.0]}, {}),  # nothing on the GPU side
    ],
    ids=["cpu-side-rapl-missing", "gpu-energy-missing", "gpu-side-empty"],
)
def test_energy_speedup_nan_when_a_counter_is_missing(cpu_side, gpu_side):
    df = frame(energy_run("cpu", **cpu_side), energy_run("gpu", **gpu_side))
    assert math.isnan(speedup_table(df).iloc[0]["energy_speedup"])


def test_energy_speedup_nan_without_a_gpu_cell_and_when_columns_are_absent():
    assert math.isnan(energy_speedup(None, None))
    only_cpu = frame(energy_run("cpu", cpu_j=[3000.0, 3400.0, 3200.0]))
    assert math.isnan(speedup_table(only_cpu).iloc[0]["energy_speedup"])
    old = pooled_pair()  # results written before the energy columns existed
    assert "gpu_energy_j" not in old
    row = speedup_table(old).iloc[0]
    assert math.isnan(row["energy_speedup"]) and math.isnan(row["gpu_energy_j"])
    assert cell_summary(old)["energy_scope"].tolist() == ["", ""]


def test_fmt_util():
    assert fmt_util(49.6) == "50%" and fmt_util(None) == "—" and fmt_util(float("nan")) == "—"


# ---- speedup interval and noise flags ----------------------------------------------------------------


def synthetic(seed: int = 12345, n: int = 40, noise: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """CPU epochs ~ 10 s and GPU epochs ~ 2 s, each times (1 + small noise): the true ratio is 5.0."""
    rng = np.random.default_rng(seed)
    return 10.0 * (1 + noise * rng.standard_normal(n)), 2.0 * (1 + noise * rng.standard_normal(n))


def test_bootstrap_ci_contains_true_ratio_and_is_narrow():
    cpu, gpu = synthetic()
    low, high = bootstrap_speedup_ci(cpu, gpu)
    assert low < 5.0 < high
    assert 4.0 < low < high < 6.0  # narrower than [4, 6]
    assert low <= speedup(cpu, gpu) <= high


def test_bootstrap_ci_is_reproducible_and_uses_the_seed():
    cpu, gpu = synthetic()
    assert bootstrap_speedup_ci(cpu, gpu) == bootstrap_speedup_ci(cpu, gpu)
    assert bootstrap_speedup_ci(cpu, gpu, seed=7) == bootstrap_speedup_ci(cpu, gpu, seed=7)
    assert bootstrap_speedup_ci(cpu, gpu, seed=7) != bootstrap_speedup_ci(cpu, gpu, seed=8)


def test_bootstrap_ci_is_of_the_median_ratio():
    # one CPU outlier among 21 samples: a resample's median is 10 unless 11+ draws hit the outlier, which
    # 2000 resamples essentially never do, so the interval is exactly [5, 5]; a mean would move it up
    low, high = bootstrap_speedup_ci([10.0] * 20 + [1000.0], [2.0] * 21)
    assert (low, high) == (5.0, 5.0)


def test_bootstrap_ci_confidence_widens_the_interval():
    cpu, gpu = synthetic(n=10, noise=0.1)
    low50, high50 = bootstrap_speedup_ci(cpu, gpu, confidence=0.5)
    low99, high99 = bootstrap_speedup_ci(cpu, gpu, confidence=0.99)
    assert low99 < low50 < high50 < high99


@pytest.mark.parametrize(
    "cpu, gpu",
    [([10.0], [2.0, 2.1]), ([10.0, 11.0], [2.0]), ([], [2.0, 2.1]), ([10.0, None], [2.0, 2.1]), (10.0, 2.0)],
    ids=["one-cpu", "one-gpu", "no-cpu", "null-ignored", "scalars"],
)
def test_bootstrap_ci_nan_with_fewer_than_two_samples(cpu, gpu):
    low, high = bootstrap_speedup_ci(cpu, gpu)
    assert math.isnan(low) and math.isnan(high)


def test_bootstrap_ci_rejects_bad_arguments():
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_speedup_ci([1.0, 2.0], [1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_speedup_ci([1.0, 2.0], [1.0, 2.0], n_resamples=0)


def test_speedup_table_ci_uses_the_pooled_steady_samples():
    row = speedup_table(pooled_pair()).iloc[0]
    # warm-up epochs (1e6 s) excluded: had they leaked in, the upper bound would explode
    expected = bootstrap_speedup_ci([30.0, 34.0, 32.0, 40.0], [4.0, 6.0, 5.0, 7.0])
    assert (row["speedup_low"], row["speedup_high"]) == expected
    assert row["speedup_low"] < row["speedup"] < row["speedup_high"] <= 40.0 / 4.0  # max cpu / min gpu


def test_iqr():
    assert iqr([1.0, 2.0, 3.0, 4.0]) == 1.5  # q75 3.25 - q25 1.75
    assert iqr([5.0]) == 0.0
    assert iqr([3.0, None, 1.0, 2.0, 4.0]) == 1.5  # nulls ignored
    assert math.isnan(iqr([]))


def test_is_noisy_threshold():
    assert NOISY_IQR_SHARE == 0.10
    assert not is_noisy(1.0, 10.0)  # exactly 10%: not noisy
    assert is_noisy(1.0 + 1e-9, 10.0)  # just above
    assert not is_noisy(0.5, 10.0)
    assert not is_noisy(float("nan"), 10.0) and not is_noisy(1.0, None)


@pytest.mark.parametrize(
    "gpu_epochs, noisy",
    [((9.0, 10.0, 11.0), False), ((9.0, 10.0, 11.02), True), ((10.0, 10.0, 10.0), False)],
    ids=["iqr-exactly-10pct", "iqr-just-above", "no-spread"],
)
def test_noisy_flag_fires_just_above_ten_percent(gpu_epochs, noisy):
    # GPU steady epochs 9, 10, 11 -> median 10, q25 9.5, q75 10.5: IQR 1.0 = exactly 10% of the median;
    # with 11.02 instead, q75 = 10.51 and the IQR 1.01 is just above. The CPU side has no spread.
    df = frame(
        run_rows(device="cpu", epoch_s=(WARMUP_S, 100.0, 100.0, 100.0)),
        run_rows(device="gpu", epoch_s=(WARMUP_S, *gpu_epochs)),
    )
    row = speedup_table(df).iloc[0]
    assert row["flags"] == ("noisy (gpu)" if noisy else "")
    assert row["gpu_epoch_s"] == 10.0


def test_noisy_flag_on_the_cpu_side():
    df = frame(
        run_rows(device="cpu", epoch_s=(WARMUP_S, 90.0, 100.0, 120.0)),  # IQR 15 > 10
        run_rows(device="gpu", epoch_s=(WARMUP_S, 10.0, 10.0)),
    )
    assert speedup_table(df).iloc[0]["flags"] == "noisy (cpu)"


def test_steal_flag_from_the_median_of_steady_epochs():
    # CPU steady epochs with 1%, 5%, 9% steal -> median 5% > 2%; the warm-up's 50% is not counted.
    # The GPU side's 1%, 2%, 3% -> median 2%: exactly the threshold is not flagged.
    df = frame(
        run_rows(device="cpu", epoch_s=(WARMUP_S, 30.0, 30.0, 30.0)),
        run_rows(device="gpu", epoch_s=(WARMUP_S, 3.0, 3.0, 3.0)),
    )
    df["host_steal_pct"] = [50.0, 1.0, 5.0, 9.0, 50.0, 1.0, 2.0, 3.0]
    row = speedup_table(df).iloc[0]
    assert row["flags"] == "steal 5% (cpu)"
    assert cell_summary(df).set_index("device").loc["cpu", "host_steal_pct"] == 5.0


def test_no_steal_column_no_steal_flag():
    # results written before schema 4 have no host_steal_pct: no flag, NaN in the summary
    df = pooled_pair()
    assert "steal" not in speedup_table(df).iloc[0]["flags"]
    assert cell_summary(df)["host_steal_pct"].isna().all()


def test_single_sample_flag_only_with_one_steady_sample():
    one = frame(
        run_rows(device="cpu", epoch_s=(WARMUP_S, 30.0)), run_rows(device="gpu", epoch_s=(WARMUP_S, 3.0, 3.0))
    )
    row = speedup_table(one).iloc[0]
    assert row["flags"] == "single-sample (cpu)"
    assert row["speedup"] == 10.0 and math.isnan(row["speedup_low"]) and math.isnan(row["speedup_high"])
    two = frame(
        run_rows(device="cpu", epoch_s=(WARMUP_S, 30.0, 30.0)),
        run_rows(device="gpu", epoch_s=(WARMUP_S, 3.0, 3.0)),
    )
    row = speedup_table(two).iloc[0]
    assert row["flags"] == ""
    assert (row["speedup_low"], row["speedup_high"]) == (10.0, 10.0)


def test_fmt_speedup_ci():
    assert fmt_speedup_ci(7.123, 6.8, 7.4) == "7.12x [6.80–7.40]"
    assert fmt_speedup_ci(7.123, float("nan"), float("nan")) == "7.12x"
    assert fmt_speedup_ci(float("nan"), float("nan"), float("nan")) == "—"


def test_overlapped_flag_comes_from_the_trials_table():
    epochs = frame(run_rows(device="cpu"), run_rows(device="gpu", epoch_s=(WARMUP_S, 4.0)))
    runs = epochs.drop_duplicates("trial")[["sweep", "trial", "attempt"]]
    trials = runs.assign(status="ok", overlapped_with=[None, "other/cell/r0"])  # only the gpu run shared
    flags = speedup_table(ok_epochs(epochs, trials)).iloc[0]["flags"]
    assert "overlapped (gpu)" in flags and "overlapped (cpu)" not in flags
    alone = trials.assign(overlapped_with=None)
    assert "overlapped" not in speedup_table(ok_epochs(epochs, alone)).iloc[0]["flags"]


# ---- hardware classes ----------------------------------------------------------------------------------

EPYC, XEON, H200, A100 = "cpu:EPYC-7763-64c", "cpu:Xeon-Platinum-8480+-16c", "gpu:H200", "gpu:A100"


def class_run(hw_class: str, epoch_s: tuple, repeat: int = 0, model: str = "resnet18", **over) -> list[dict]:
    """A run pinned to a hardware class (`benchctl sweep --per-class`): the class replaces the device in
    the cell and trial ids, as matrix.py names them."""
    device = hw_class.split(":", 1)[0]
    cell = f"{model}/{hw_class}/bs128/loader/fp32"
    return run_rows(
        model=model, device=device, epoch_s=epoch_s, repeat=repeat, hw_class=hw_class, cell=cell,
        trial=f"{cell}/r{repeat}", **over,
    )  # fmt: skip


def two_cpu_classes() -> pd.DataFrame:
    # EPYC steady 20, 24 -> median 22; Xeon 60, 64 -> median 62; H200 4, 6 -> median 5
    # speedups: EPYC 22 / 5 = 4.4, Xeon 62 / 5 = 12.4 (pooled, the CPU median would be 42 -> 8.4)
    return frame(
        class_run(EPYC, (WARMUP_S, 20.0, 24.0)),
        class_run(XEON, (WARMUP_S, 60.0, 64.0)),
        class_run(H200, (WARMUP_S, 4.0, 6.0)),
    )


def test_two_cpu_classes_and_one_gpu_class_give_two_rows():
    table = speedup_table(two_cpu_classes())
    assert len(table) == 2
    assert table["cpu_class"].tolist() == [EPYC, XEON]  # sorted by class name
    assert table["gpu_class"].tolist() == [H200, H200]
    epyc, xeon = table.iloc[0], table.iloc[1]
    assert (epyc["cpu_epoch_s"], epyc["gpu_epoch_s"], epyc["speedup"]) == (22.0, 5.0, 22.0 / 5.0)
    assert (xeon["cpu_epoch_s"], xeon["gpu_epoch_s"], xeon["speedup"]) == (62.0, 5.0, 62.0 / 5.0)
    assert 42.0 / 5.0 not in table["speedup"].tolist()  # never the pooled CPU median
    # each row's interval is that pair's own bootstrap: its CPU class's samples against the GPU's
    assert (epyc["speedup_low"], epyc["speedup_high"]) == bootstrap_speedup_ci([20.0, 24.0], [4.0, 6.0])
    assert (xeon["speedup_low"], xeon["speedup_high"]) == bootstrap_speedup_ci([60.0, 64.0], [4.0, 6.0])
    # flags per row: GPU IQR 5.5 - 4.5 = 1 > 10% of 5; CPU IQR 2 < 10% of 22 and of 62
    assert table["flags"].tolist() == ["noisy (gpu)", "noisy (gpu)"]
    assert table["cpu_n"].tolist() == [2, 2] and table["gpu_n"].tolist() == [2, 2]


def test_cell_summary_never_pools_hardware_classes():
    # a fast and a slow CPU class of the same model: two cells, two epoch times, not median(20..64) = 42
    summary = cell_summary(two_cpu_classes())
    cpu = summary[summary["device"] == "cpu"].set_index("hw_class")
    assert len(cpu) == 2
    assert cpu.loc[EPYC, "epoch_s"] == 22.0 and cpu.loc[XEON, "epoch_s"] == 62.0
    assert cpu.loc[EPYC, "n"] == 2 and cpu.loc[XEON, "runs"] == 1
    assert cpu.loc[EPYC, "epoch_s_iqr"] == 2.0  # 23 - 21, within the class only
    assert summary.loc[summary["device"] == "gpu", "hw_class"].tolist() == [H200]


def test_warmup_only_is_decided_per_class():
    # the Xeon run has one epoch only (warm-up); the EPYC cell has steady epochs and must not fall back
    df = frame(class_run(EPYC, (WARMUP_S, 20.0)), class_run(XEON, (70.0,)), class_run(H200, (WARMUP_S, 5.0)))
    table = speedup_table(df).set_index("cpu_class")
    assert table.loc[EPYC, "speedup"] == 20.0 / 5.0 and "warm-up only" not in table.loc[EPYC, "flags"]
    assert table.loc[XEON, "speedup"] == 70.0 / 5.0 and "warm-up only (cpu)" in table.loc[XEON, "flags"]


def test_two_by_two_classes_give_four_rows_with_their_own_flags():
    # GPU: H200 4, 6 -> 5; A100 10 (one sample: single-sample (gpu) on its rows only)
    df = frame(
        class_run(EPYC, (WARMUP_S, 20.0, 24.0)),
        class_run(XEON, (WARMUP_S, 60.0, 64.0)),
        class_run(H200, (WARMUP_S, 4.0, 6.0)),
        class_run(A100, (WARMUP_S, 10.0)),
    )
    table = speedup_table(df)
    pairs = list(zip(table["cpu_class"], table["gpu_class"], table["speedup"], strict=True))
    assert pairs == [(EPYC, A100, 2.2), (EPYC, H200, 4.4), (XEON, A100, 6.2), (XEON, H200, 12.4)]
    a100 = table[table["gpu_class"] == A100]
    assert a100["flags"].tolist() == ["single-sample (gpu)"] * 2 and a100["speedup_low"].isna().all()


def test_a_class_measured_on_one_device_only_has_no_speedup():
    df = frame(class_run(EPYC, (WARMUP_S, 20.0)), class_run(XEON, (WARMUP_S, 60.0)))
    table = speedup_table(df)
    assert table["cpu_class"].tolist() == [EPYC, XEON] and table["gpu_class"].tolist() == ["", ""]
    assert table["speedup"].isna().all() and table["gpu_n"].tolist() == [0, 0]


@pytest.mark.parametrize("classes", ["absent", "null", "one each"])
def test_rows_without_or_with_one_class_give_the_table_of_before(classes):
    df = pooled_pair()  # as written before schema 2: no hw_class column
    if classes == "null":
        df["hw_class"] = None
    elif classes == "one each":
        df["hw_class"] = np.where(df["device"] == "gpu", H200, EPYC)
    table = speedup_table(df)
    assert len(table) == 1 and list(table.columns[5:7]) == ["cpu_class", "gpu_class"]  # after PAIR
    before = speedup_table(pooled_pair()).drop(columns=["cpu_class", "gpu_class"])
    pd.testing.assert_frame_equal(table.drop(columns=["cpu_class", "gpu_class"]), before)
    row = table.iloc[0]
    assert row["speedup"] == 33.0 / 5.5 and (row["cpu_n"], row["gpu_n"]) == (4, 4)
    expected = ("", "") if classes != "one each" else (EPYC, H200)
    assert (row["cpu_class"], row["gpu_class"]) == expected
    summary = cell_summary(df)
    assert len(summary) == 2 and summary["hw_class"].tolist() == [expected[0], expected[1]]


def test_unknown_class_beside_a_known_one_is_its_own_class():
    # old (no class) and new (EPYC) CPU results of one configuration are not pooled either
    df = frame(
        run_rows(device="cpu", epoch_s=(WARMUP_S, 30.0)),
        class_run(EPYC, (WARMUP_S, 20.0)),
        class_run(H200, (WARMUP_S, 5.0)),
    )
    table = speedup_table(df)
    assert list(zip(table["cpu_class"], table["speedup"], strict=True)) == [("", 6.0), (EPYC, 4.0)]


def test_pairing_helpers():
    table = speedup_table(two_cpu_classes())
    assert several_classes(table) and several_pairs(table)
    [(key, gpus, cpus, at)] = speedup_matrices(table)
    assert key == ("resnet18", 128, "loader", "fp32", "off") and gpus == [H200] and cpus == [EPYC, XEON]
    assert at[(H200, EPYC)].speedup == 4.4 and at[(H200, XEON)].speedup == 62.0 / 5.0
    one = speedup_table(pooled_pair())
    assert not several_classes(one) and not several_pairs(one)
    assert [m[1:3] for m in speedup_matrices(one)] == [([""], [""])]
    # two classes on the CPU side but no GPU run: nothing to compare, so no matrix either
    cpu_only = speedup_table(frame(class_run(EPYC, (WARMUP_S, 20.0)), class_run(XEON, (WARMUP_S, 60.0))))
    assert not several_classes(cpu_only) and speedup_matrices(cpu_only) == []
    assert not several_classes(pd.DataFrame({"model": ["m"], "speedup": [2.0]}))  # no class columns
    assert pair_label(EPYC, H200) == f"{H200} vs {EPYC}" and pair_label("", H200) == H200
    assert pair_label(None, "") == class_label("") == "unknown class"


def test_a_one_sided_cell_gets_an_interval_on_its_epoch_time():
    """A CPU-only sweep has no speedup; its result is the epoch time, so that gets the 95% interval."""
    from orchestrator.analysis.speedups import bootstrap_median_ci
    from orchestrator.report.formats import fmt_seconds_ci

    samples = [17.0, 17.2, 18.9]
    low, high = bootstrap_median_ci(samples)
    assert 17.0 <= low <= 17.2 <= high <= 18.9
    assert bootstrap_median_ci(samples) == (low, high)  # seeded: the same samples, the same interval
    assert all(math.isnan(v) for v in bootstrap_median_ci([17.0]))
    assert fmt_seconds_ci(17.2, 17.0, 18.9) == "17.2 [17.0–18.9]"
    assert fmt_seconds_ci(17.2, math.nan, math.nan) == "17.2"
