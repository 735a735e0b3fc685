"""orchestrator.analysis.parity on hand-computed Welch t intervals and TOST verdicts.

.venv/bin/pytest -q tests/test_parity.py
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from orchestrator.analysis.parity import (
    EQUIVALENCE_MARGIN_PP,
    final_accuracies,
    parity_table,
    t_cdf,
    t_quantile,
    tost_p,
    verdict,
    welch,
)

# Student-t quantiles from printed tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2), 6 significant digits
T_TABLE = [(0.975, 1, 12.7062), (0.975, 2, 4.30265), (0.975, 4, 2.77645), (0.95, 4, 2.13185)]
T_TABLE += [(0.975, 10, 2.22814), (0.975, 30, 2.04227), (0.99, 5, 3.36493)]


@pytest.mark.parametrize(("p", "df", "expected"), T_TABLE)
def test_t_quantile_matches_printed_tables(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-4)
    assert t_quantile(1 - p, df) == pytest.approx(-expected, abs=1e-4)


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.999])
def test_t_quantile_closed_forms(p):
    # df = 1 is the Cauchy distribution: tan(pi (p - 1/2)); df = 2: (2p - 1) / sqrt(2 p (1 - p))
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)


def test_t_cdf_fractional_df_lies_between_its_integer_neighbours():
    x = 2.5
    assert t_cdf(x, 2) < t_cdf(x, 2.94) < t_cdf(x, 3)
    assert t_cdf(t_quantile(0.975, 2.94), 2.94) == pytest.approx(0.975, abs=1e-12)
    assert t_cdf(0.0, 7) == 0.5 and t_cdf(math.inf, 3) == 1.0


def test_welch_equal_variances_gives_integer_df():
    # CPU 80, 81, 82 and GPU 83, 84, 85: diff 3; s^2 = 1 each side, se = sqrt(1/3 + 1/3) = 0.816497;
    # df = (2/3)^2 / ((1/3)^2 / 2 + (1/3)^2 / 2) = 4; t(0.975, 4) = 2.776445 -> 3 +/- 2.266958
    w = welch([80, 81, 82], [83, 84, 85])
    assert w.diff == 3.0 and w.df == pytest.approx(4.0) and w.se == pytest.approx(math.sqrt(2 / 3))
    assert (w.low, w.high) == pytest.approx((3 - 2.776445 * 0.816497, 3 + 2.776445 * 0.816497), abs=1e-5)


def test_welch_unequal_variances():
    # CPU 80, 81, 82 (s^2 = 1) vs GPU 82, 84, 86 (s^2 = 4): diff 3, se = sqrt(1/3 + 4/3) = 1.290994;
    # df = (5/3)^2 / ((1/3)^2 / 2 + (4/3)^2 / 2) = (25/9) / (17/18) = 50/17 = 2.941176
    w = welch([80, 81, 82], [82, 84, 86])
    assert w.df == pytest.approx(50 / 17) and w.se == pytest.approx(math.sqrt(5 / 3))
    half = t_quantile(0.975, 50 / 17) * math.sqrt(5 / 3)
    assert 4.30265 > t_quantile(0.975, 50 / 17) > 3.18245  # between t(0.975, 2) and t(0.975, 3)
    assert (w.low, w.high) == pytest.approx((3 - half, 3 + half))


def test_identical_accuracies_are_equivalent():
    # diff 0, s = 0.2 each side: se = 0.163299, df = 4; the 90% interval 0 +/- 2.131847 * 0.163299 =
    # +/- 0.348 lies inside +/- 1 pp, so both one-sided tests reject
    same = [80.0, 80.2, 80.4]
    assert verdict(same, same) == "equivalent"
    # p = P(T_4 >= 1 / 0.163299 = 6.1237) = 0.00181 (printed tables: t(0.999, 4) = 7.173, t(0.995, 4) = 4.604)
    assert 0.001 < tost_p(same, same) < 0.005
    assert verdict([80.0] * 3, [80.0] * 3) == "equivalent"  # no spread at all: the difference is exact
    assert welch([80.0] * 3, [80.0] * 3).low == 0.0


def test_a_five_point_gap_is_not_equivalent():
    assert verdict([80.0, 80.2, 80.4], [85.0, 85.2, 85.4]) == "not shown equivalent"
    assert tost_p([80.0, 80.2, 80.4], [85.0, 85.2, 85.4]) > 0.99
    assert verdict([80.0] * 3, [85.0] * 3) == "not shown equivalent"


def test_a_wide_interval_is_not_shown_equivalent_even_at_zero_difference():
    # diff 0 but s = 1 each side: 90% interval 0 +/- 2.131847 * 0.816497 = +/- 1.74, wider than the margin
    assert verdict([79, 80, 81], [79, 80, 81]) == "not shown equivalent"


def test_two_repeats_give_numbers_but_no_verdict():
    w = welch([80.0, 81.0], [81.0, 82.0])
    assert w.diff == 1.0 and not math.isnan(w.low)  # s^2 = 0.5 each side: se = sqrt(0.5), df = 2
    assert (w.low, w.high) == pytest.approx((1 - 4.302653 * math.sqrt(0.5), 1 + 4.302653 * math.sqrt(0.5)))
    assert verdict([80.0, 81.0], [81.0, 82.0]) == "n<3"
    assert verdict([80.0, 80.0, 80.0], [80.0, 80.0]) == "n<3"


def test_one_run_a_side_gives_the_difference_only():
    w = welch([80.0], [82.5])
    assert w.diff == 2.5 and math.isnan(w.low) and math.isnan(w.high)
    assert math.isnan(tost_p([80.0], [82.5]))


def test_margin_is_one_point():
    assert EQUIVALENCE_MARGIN_PP == 1.0


def epoch_rows(device: str, repeat: int, accs: list[float], **over) -> list[dict]:
    config = {"batch_size": 128, "pipeline": "loader", "precision": "fp32", **over}
    trial = f"resnet18/{device}/{config['precision']}/r{repeat}"
    base = {"sweep": "s1", "trial": trial, "attempt": 1, "model": "resnet18", "device": device, **config}
    return [{**base, "epoch": i, "test_acc": acc} for i, acc in enumerate(accs, start=1)]


def test_parity_table_uses_the_last_epoch_of_each_run():
    rows = []
    for r, final in enumerate([0.800, 0.802, 0.804]):
        rows += epoch_rows("cpu", r, [0.1, 0.5, final])
        rows += epoch_rows("gpu", r, [0.9, 0.9, final])  # early epochs must not count
    rows += epoch_rows("cpu", 0, [0.1, 0.7], precision="amp")  # CPU only: left out
    epochs = pd.DataFrame(rows).sample(frac=1, random_state=0)  # order must not matter
    assert len(final_accuracies(epochs)) == 7
    table = parity_table(epochs)
    assert len(table) == 1
    row = table.iloc[0]
    assert row["cpu_acc_pct"] == pytest.approx(80.2) and row["gpu_acc_pct"] == pytest.approx(80.2)
    assert row["diff_pp"] == pytest.approx(0.0, abs=1e-9)
    half = 2.776445 * math.sqrt(2 * 0.04 / 3)  # s = 0.2 pp each side, df = 4
    assert (row["ci_low_pp"], row["ci_high_pp"]) == pytest.approx((-half, half), abs=1e-5)
    assert row["verdict"] == "equivalent" and (row["cpu_n"], row["gpu_n"]) == (3, 3)


def test_parity_table_without_accuracy_or_rows():
    assert parity_table(pd.DataFrame()).empty
    no_acc = pd.DataFrame(epoch_rows("cpu", 0, [0.5])).drop(columns="test_acc")
    assert parity_table(no_acc).empty
