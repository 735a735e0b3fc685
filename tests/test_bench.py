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
