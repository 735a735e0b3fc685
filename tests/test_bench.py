"""The pure parts of the benchmark scripts in bench/ (they run on the GPU machine, not in CI)."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cores_round_trip_with_the_core_book_notation():
    from trainables.affinity import format_cores

    plain_loop = load("plain_loop")
    assert plain_loop.parse_cores("0-2,5") == {0, 1, 2, 5}
    assert plain_loop.parse_cores("7") == {7}
    for cores in ([0, 1, 2, 5], [3], [6, 7, 9, 10]):
        assert plain_loop.parse_cores(format_cores(cores)) == set(cores)


def test_fidelity_ratio_and_spread_follow_their_formulas():
    fidelity = load("fidelity")
    assert fidelity.ratio([100.0, 110.0, 90.0], [50.0, 50.0]) == pytest.approx(2.0)  # median / median
    runs = [
        [
            {"epoch": 1, "images_per_s": 1.0},
            {"epoch": 2, "images_per_s": 100.0},
            {"epoch": 3, "images_per_s": 100.0},
        ],
        [
            {"epoch": 1, "images_per_s": 1.0},
            {"epoch": 2, "images_per_s": 90.0},
            {"epoch": 3, "images_per_s": 90.0},
        ],
        [{"epoch": 1, "images_per_s": 1.0}, {"epoch": 2, "images_per_s": 95.0}],
    ]
    # per-run steady medians 100, 90, 95 (epoch 1 left out): (100 - 90) / 95
    assert fidelity.spread(runs) == pytest.approx(10 / 95)
    assert fidelity.spread(runs[:1]) is None  # one run: no spread


def test_fidelity_pools_every_repeat_of_a_cell():
    import pandas as pd

    fidelity = load("fidelity")
    group = pd.DataFrame(
        [
            {
                "repeat": r,
                "epoch": e,
                "warmup": e == 1,
                "images_per_s": ips,
                "torch_threads": 1,
                "data_workers": 0,
            }
            for r, per in enumerate([[1.0, 100.0, 104.0], [1.0, 90.0, 92.0]])
            for e, ips in enumerate(per, start=1)
        ]
    )
    plain = [[{"epoch": 1, "images_per_s": 1.0}, {"epoch": 2, "images_per_s": 95.0}]]
    row = fidelity._row("c", group, plain, None)
    assert row["benchctl_ips"] == pytest.approx(96.0)  # median of 90, 92, 100, 104 (warm-up left out)
    assert row["ratio"] == pytest.approx(96.0 / 95.0) and row["within_bar"]
    assert row["benchctl_repeats"] == 2
    assert row["benchctl_spread"] == pytest.approx((102 - 91) / 96.5)  # per-repeat medians 102 and 91


def test_fidelity_pairs_follow_their_formulas():
    import math

    pairs = load("fidelity_pairs")
    row = {"torch_threads": 1, "data_workers": 0}
    rounds = [
        [{**row, "cell": "a", "ratio": 0.9, "benchctl_ips": 90.0, "plain_ips": 100.0}],
        [{**row, "cell": "a", "ratio": 1.0, "benchctl_ips": 100.0, "plain_ips": 100.0},
         {**row, "cell": "b", "ratio": 1.02, "benchctl_ips": 51.0, "plain_ips": 50.0}],
        [{**row, "cell": "a", "ratio": 1.2, "benchctl_ips": 120.0, "plain_ips": 100.0}],
    ]  # fmt: skip
    a, b = pairs.pair_rows(rounds)
    assert a["pairs"] == 3 and a["pair_ratios"] == [0.9, 1.0, 1.2] and a["ratio"] == 1.0 and a["within_bar"]
    assert b["pairs"] == 1 and b["ratio"] == 1.02
    mean, low, high = pairs.geometric_ci([0.9, 1.0, 1.2])
    logs = [math.log(x) for x in (0.9, 1.0, 1.2)]
    centre = sum(logs) / 3
    sd = math.sqrt(sum((x - centre) ** 2 for x in logs) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, df=2)
    assert mean == pytest.approx(math.exp(centre))
    assert (low, high) == (pytest.approx(math.exp(centre - half)), pytest.approx(math.exp(centre + half)))
    assert math.isnan(pairs.geometric_ci([1.1])[1])  # one pair: no interval
