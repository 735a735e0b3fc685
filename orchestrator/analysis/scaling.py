"""Does the speedup grow with model size? A power law fitted per configuration, with a bootstrap interval.

    from orchestrator.analysis.scaling import scaling_table, paper_scaling
    fits = scaling_table(pair_table(v), v)   # one row per configuration with >= MIN_MODELS models
    paper = paper_scaling()                  # the paper's three points, fitted the same way

Definitions:
    fit          log(speedup) = a + b * log(params), least squares over the models of one configuration
                 (the pair's axes but the model, its hardware pair and both sides' workers and CPUs:
                 analysis.answer.pair_table), with at least MIN_MODELS models of at least 2 sizes
    exponent     b: speedup ~ params^b. b > 0: larger models gain more from the GPU; b > 1: the gain
                 grows faster than the parameter count ("super-linear")
    interval     the CI_CONFIDENCE percentile interval of b over the CI_RESAMPLES bootstrap resamples
                 of every model's speedup: the same resamples (speedups.bootstrap_speedup_ratios, same
                 samples, same seed) whose percentiles are that speedup's interval; b is refitted on
                 each. NaN when a model has fewer than 2 samples a side. Every interval draws with one
                 seed, so models with equally many samples are resampled at the same positions; were
                 resample i of each model fitted together, noise shared by position (the same jitter
                 pattern, a trend over epochs) would cancel in the slope and shrink its interval. So
                 each model's resamples after the first are shuffled (seeded, SHUFFLE_SEED + position)
                 before they are paired: the same resamples, independently paired.
    verdict      "grows" (the interval lies above 0), "shrinks" (below 0), "no evidence" (it holds 0),
                 "no interval" (none could be computed)
    band         the CI_CONFIDENCE band of the fitted line a + b * log(params) over the same resamples,
                 at BAND_POINTS parameter counts between the smallest and largest model (for the figure)
    paper_scaling  the same least-squares fit over stats.PAPER_POINTS (one number per model, so no
                 interval: verdict "no interval")
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from orchestrator.analysis.speedups import CI_CONFIDENCE, bootstrap_speedup_ratios
from orchestrator.analysis.stats import PAPER_POINTS
from orchestrator.analysis.variants import Variants
from orchestrator.results.rows import CONFIG

MIN_MODELS = 3
SHUFFLE_SEED = 1  # pairs the models' resamples at random, reproducibly (see interval)
BAND_POINTS = 40
GROWS, SHRINKS, NO_EVIDENCE, NO_INTERVAL = "grows", "shrinks", "no evidence", "no interval"
CONFIGURATION = [*CONFIG, "cpu_class", "gpu_class", "cpu_workers", "cpu_cpus", "gpu_workers", "gpu_cpus"]
COLUMNS = [*CONFIGURATION, "exponent", "exponent_low", "exponent_high", "intercept", "n_models", "models"]
COLUMNS += ["verdict", "band"]


def fit(params, speedups) -> tuple[float, float]:
    """(b, a) of the least-squares line log(speedup) = a + b * log(params); NaN with fewer than 2 sizes."""
    x, y = np.log(np.asarray(params, dtype=float)), np.log(np.asarray(speedups, dtype=float))
    xc = x - x.mean()
    if len(x) < 2 or not (xc**2).sum() > 0:
        return math.nan, math.nan
    b = float((xc * (y - y.mean())).sum() / (xc**2).sum())
    return b, float(y.mean() - b * x.mean())


def verdict(low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return NO_INTERVAL
    return GROWS if low > 0 else SHRINKS if high < 0 else NO_EVIDENCE


def resampled_fit(params, ratios: np.ndarray, confidence: float = CI_CONFIDENCE):
    """(low, high, band) of the exponent over resampled speedups `ratios` (resamples x models): the
    percentile interval of b refitted on each resample, and the band (log-spaced params, low, high) of
    the fitted line."""
    x = np.log(np.asarray(params, dtype=float))
    y = np.log(ratios)
    xc = x - x.mean()
    b = (y - y.mean(axis=1, keepdims=True)) @ xc / (xc**2).sum()
    a = y.mean(axis=1) - b * x.mean()
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(b, [tail, 100 - tail])
    grid = np.linspace(x.min(), x.max(), BAND_POINTS)
    lines = a[:, None] + b[:, None] * grid[None, :]
    band_low, band_high = np.percentile(lines, [tail, 100 - tail], axis=0)
    return float(low), float(high), (np.exp(grid), np.exp(band_low), np.exp(band_high))


def scaling_table(pairs: pd.DataFrame, v: Variants) -> pd.DataFrame:
    """One row per configuration of `pairs` (answer.pair_table) with >= MIN_MODELS models: COLUMNS."""
    ok = pairs[np.isfinite(pd.to_numeric(pairs["speedup"], errors="coerce").to_numpy(dtype=float))]
    ok = ok[(ok["speedup"].astype(float) > 0).to_numpy()] if len(ok) else ok
    rows = []
    for key, g in ok.groupby(CONFIGURATION, sort=True, dropna=False):
        g = g.sort_values(["params", "model"], kind="stable")
        if g["model"].nunique() < MIN_MODELS or g["params"].nunique() < 2 or len(g) != g["model"].nunique():
            continue
        b, a = fit(g["params"], g["speedup"])
        drawn = [
            bootstrap_speedup_ratios(v.samples[r.cpu_cell], v.samples[r.gpu_cell]) for r in g.itertuples()
        ]
        low = high = math.nan
        band = None
        if all(d is not None for d in drawn):
            paired = [
                d if i == 0 else d[np.random.default_rng(SHUFFLE_SEED + i).permutation(len(d))]
                for i, d in enumerate(drawn)
            ]
            low, high, band = resampled_fit(g["params"], np.column_stack(paired))
        rows.append(
            dict(
                zip(CONFIGURATION, key, strict=True), exponent=b, exponent_low=low, exponent_high=high,
                intercept=a, n_models=len(g), models=", ".join(g["model"]), verdict=verdict(low, high),
                band=band,
            )
        )  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def paper_scaling() -> dict:
    """The fit over the paper's three points (stats.PAPER_POINTS): exponent, intercept, n_models, the
    points; no interval (exponent_low / exponent_high NaN, verdict "no interval")."""
    params = [p[2] for p in PAPER_POINTS]
    speedups = [p[3] for p in PAPER_POINTS]
    b, a = fit(params, speedups)
    return dict(
        exponent=b,
        exponent_low=math.nan,
        exponent_high=math.nan,
        intercept=a,
        n_models=len(PAPER_POINTS),
        models=", ".join(p[0] for p in PAPER_POINTS),
        verdict=NO_INTERVAL,
        points=[dict(model=m, params=x, speedup=y) for m, _, x, y, _ in PAPER_POINTS],
    )
