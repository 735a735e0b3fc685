"""analysis.bootstrap gives the medians of drawing the resamples and taking np.median, exactly."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.analysis.bootstrap import draw_counts, resampled_medians


def drawn_medians(values: np.ndarray, sizes: tuple[int, ...], n_resamples: int, seed: int) -> np.ndarray:
    """The plain way: draw each earlier side, then this one, and take each resample's median."""
    rng = np.random.default_rng(seed)
    for m in sizes[:-1]:
        rng.integers(0, m, size=(n_resamples, m))
    return np.median(values[rng.integers(0, len(values), size=(n_resamples, len(values)))], axis=1)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 17, 36, 37, 400, 401])
@pytest.mark.parametrize("ties", [False, True])
def test_medians_equal_the_drawn_resamples_medians(n, ties):
    values = np.random.default_rng(n).lognormal(0, 0.3, n)
    values = np.round(values, 1) if ties else values  # ties: equal values of different samples
    for sizes, seed in [((n,), 0), ((7, n), 0), ((n,), 5)]:
        got = resampled_medians(values, sizes, 300, seed)
        assert np.array_equal(got, drawn_medians(values, sizes, 300, seed))


def test_counts_are_the_draws_and_are_shared_by_cells_of_one_size():
    counts = draw_counts(3, 50, (9,))
    drawn = np.random.default_rng(3).integers(0, 9, size=(50, 9))
    assert counts.shape == (9, 50) and (counts.sum(axis=0) == 9).all()
    assert all(counts[j, i] == (drawn[i] == j).sum() for i in range(50) for j in range(9))
    assert draw_counts(3, 50, (9,)) is counts  # drawn once, whatever the values


def test_a_size_that_does_not_match_the_values_is_refused():
    with pytest.raises(ValueError, match="sizes"):
        resampled_medians(np.array([1.0, 2.0]), (3,), 10, 0)
