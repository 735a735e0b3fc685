"""Resampled medians for the percentile bootstrap (speedups.bootstrap_speedup_ci, bootstrap_median_ci):
the same numbers as drawing `rng.integers(0, n, size=(R, n))` and taking each row's median, in a
fraction of the time, and each computed once per report.

    from orchestrator.analysis.bootstrap import resampled_medians
    resampled_medians(samples, sizes=(len(samples),), n_resamples=2000, seed=0)

How (exact, not an approximation):
    draws     a resample matrix depends only on the seed, R and the sizes drawn before it from the same
              generator (`sizes`: a speedup draws its CPU side, then its GPU side from the same stream),
              never on the values. So each matrix is drawn once and kept as counts: counts[j, i] = how
              often resample i drew sample j. Every cell with as many samples shares it.
    medians   a resample's median is an order statistic: the sample of the smallest rank r at which
              the resample's counts, summed in rank order, exceed m (m = n // 2, and n // 2 - 1 for an
              even n, averaged as np.median averages). The counts are summed over blocks of ~sqrt(n)
              ranks first, then within the one block that holds the crossing: a few passes of small
              integers per cell instead of partitioning R * n drawn values, and the same ranks, so the
              same medians (~1.5 ms instead of ~14 ms a cell of 400 samples, R = 2000).
"""

from __future__ import annotations

import functools
import math

import numpy as np


@functools.lru_cache(maxsize=64)
def draw_counts(seed: int, n_resamples: int, sizes: tuple[int, ...]) -> np.ndarray:
    """counts[j, i] (n x n_resamples): how often resample i of `default_rng(seed).integers(0, n, size=(R,
    n))` drew sample j, for n = sizes[-1], drawn after the same draws of each earlier size in `sizes`."""
    rng = np.random.default_rng(seed)
    for m in sizes[:-1]:
        rng.integers(0, m, size=(n_resamples, m))  # advances the stream exactly as the earlier side did
    n = sizes[-1]
    drawn = rng.integers(0, n, size=(n_resamples, n))
    flat = (drawn * n_resamples + np.arange(n_resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=n * n_resamples).reshape(n, n_resamples)
    out = counts.astype(np.uint16 if n < 2**16 else np.int64)  # a count is at most n
    out.setflags(write=False)  # shared through the cache
    return out


def _positions(counts: np.ndarray, order: np.ndarray, ks: list[int]) -> list[np.ndarray]:
    """For each m of `ks`, the rank (index into the sorted samples) of each resample's order statistic m.
    Plain numpy, no BLAS: a threaded matrix product stalls on a busy 2-core machine."""
    n, n_resamples = counts.shape
    block = max(1, math.isqrt(n))
    blocks = -(-n // block)
    # rank -> sample, padded to whole blocks with the last sample again: past the last rank the running
    # sum has passed m already, and adding more to it does not move the crossing
    padded = np.concatenate([order, np.full(blocks * block - n, order[-1])])
    ranked = counts[padded]  # (blocks * block) x R, rows in rank order
    upto = np.cumsum(ranked.reshape(blocks, block, n_resamples).sum(axis=1, dtype=np.int64), axis=0)
    resample = np.arange(n_resamples)
    flat = ranked.ravel()
    out = []
    for m in ks:
        g = np.count_nonzero(upto <= m, axis=0)  # the block holding order statistic m (upto[-1] >= n > m)
        before = np.where(g > 0, upto[np.maximum(g - 1, 0), resample], 0)
        rows = g[None, :] * block + np.arange(block)[:, None]
        within = before[None, :] + np.cumsum(flat[rows * n_resamples + resample[None, :]], axis=0)
        out.append(g * block + np.count_nonzero(within <= m, axis=0))
    return out


@functools.lru_cache(maxsize=1024)
def _cached(values_bytes: bytes, sizes: tuple[int, ...], n_resamples: int, seed: int) -> np.ndarray:
    values = np.frombuffer(values_bytes)
    n = len(values)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    ks = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
    picked = [ordered[p] for p in _positions(draw_counts(seed, n_resamples, sizes), order, ks)]
    medians = picked[0] if len(picked) == 1 else (picked[0] + picked[1]) / 2  # as np.median's mean of two
    medians.setflags(write=False)
    return medians


def resampled_medians(values: np.ndarray, sizes: tuple[int, ...], n_resamples: int, seed: int) -> np.ndarray:
    """The medians of the n_resamples resamples (with replacement) of `values` (float, no NaN) drawn
    from default_rng(seed) after the draws of `sizes[:-1]` (sizes[-1] == len(values)): equal to
    np.median(values[rng.integers(0, n, size=(R, n))], axis=1) with that generator. Read-only, cached."""
    values = np.ascontiguousarray(values, dtype=float)
    if sizes[-1] != len(values):
        raise ValueError(f"sizes[-1] must be len(values) = {len(values)}, got {sizes}")
    return _cached(values.tobytes(), tuple(sizes), n_resamples, seed)
