"""Accuracy parity: does training on the GPU reach the same final test accuracy as on the CPU?

    from orchestrator.analysis.parity import parity_table
    print(parity_table(ok_epochs(epochs, trials)))   # one row per (model, batch_size, pipeline, precision)

Definitions (printed in report.md):
    final accuracy = test_acc of the last epoch (max epoch) of one run (sweep, trial, attempt), in percent
    diff           = mean(GPU final accuracies) - mean(CPU final accuracies), in percentage points (pp)
    95% CI         = Welch t interval of diff over the runs (repeats) of each side:
                     diff +/- t(1 - (1 - PARITY_CONFIDENCE) / 2, df) * se,  se = sqrt(s_c^2/n_c + s_g^2/n_g),
                     df = se^4 / ((s_c^2/n_c)^2 / (n_c - 1) + (s_g^2/n_g)^2 / (n_g - 1))
                     (Welch-Satterthwaite), s^2 the sample variance (ddof 1); needs >= 2 runs per side
    verdict        = TOST (two one-sided Welch t tests) at +/- EQUIVALENCE_MARGIN_PP, level TOST_ALPHA, when
                     each side has >= MIN_REPEATS runs: "equivalent" when both
                         p_low  = P(T_df >= (diff + margin) / se)   (H0: diff <= -margin)
                         p_high = P(T_df <= (diff - margin) / se)   (H0: diff >= +margin)
                     are < TOST_ALPHA, i.e. when the (1 - 2 * TOST_ALPHA) = 90% interval lies inside
                     (-margin, +margin); else "not shown equivalent" (not evidence of a difference: an
                     interval too wide says only that more repeats are needed). "n<3" when a side has
                     fewer runs. When every run of both sides has the same accuracy (se = 0) the
                     difference is exact: "equivalent" iff |diff| < margin. "not comparable (CPU
                     capped)" when one side's runs were capped (--max-steps epochs or a partial test
                     pass) and the other's were not: fewer training steps, not the device, would
                     explain the gap.

Student-t probabilities come from the regularized incomplete beta function of mpmath (a dependency of
torch through sympy, listed in pyproject): t_cdf(x) = 1 - I_{df/(df+x^2)}(df/2, 1/2) / 2 for x >= 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import mpmath
import numpy as np
import pandas as pd

from orchestrator.analysis.pairing import PAIR
from orchestrator.analysis.stats import RUN
from orchestrator.results.rows import with_cell_defaults

EQUIVALENCE_MARGIN_PP = 1.0  # GPU and CPU accuracy count as equivalent within +/- 1 percentage point
PARITY_CONFIDENCE = 0.95  # the confidence level of the interval shown
TOST_ALPHA = 0.05  # level of each one-sided test of the equivalence verdict
MIN_REPEATS = 3  # runs per side below which no verdict is given
EQUIVALENT, NOT_SHOWN, TOO_FEW = "equivalent", "not shown equivalent", f"n<{MIN_REPEATS}"
NOT_COMPARABLE = "not comparable"  # one side's accuracy is from capped work, the other's is not
CAPPED = ("extrapolated", "eval_partial")  # epoch columns that mark capped work (speedups.capped)


def t_cdf(x: float, df: float) -> float:
    """P(T <= x) for Student's t with df > 0 degrees of freedom (df may be fractional):
    1 - I_{df/(df+x^2)}(df/2, 1/2) / 2 for x >= 0, and 1 - t_cdf(-x) for x < 0."""
    if not df > 0:
        raise ValueError(f"df must be > 0, got {df}")
    if math.isinf(x):
        return 1.0 if x > 0 else 0.0
    tail = 0.5 * float(mpmath.betainc(df / 2, 0.5, 0, df / (df + x * x), regularized=True))
    return 1.0 - tail if x >= 0 else tail


def t_pdf(x: float, df: float) -> float:
    """Student's t density: Gamma((df+1)/2) / (sqrt(df pi) Gamma(df/2)) * (1 + x^2/df)^(-(df+1)/2)."""
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))


def _cornish_fisher(p: float, df: float) -> float:
    """A start for t_quantile: the normal quantile z corrected in powers of 1/df (Cornish-Fisher;
    Abramowitz & Stegun 26.7.5), ~1e-5 off at df = 3 and closer as df grows."""
    z = NormalDist().inv_cdf(p)
    z2 = z * z
    return z * (
        1
        + (z2 + 1) / (4 * df)
        + (5 * z2**2 + 16 * z2 + 3) / (96 * df**2)
        + (3 * z2**3 + 19 * z2**2 + 17 * z2 - 15) / (384 * df**3)
    )


def t_quantile(p: float, df: float) -> float:
    """The x with t_cdf(x, df) == p, to 1e-12 relative (0 < p < 1): Newton steps on t_cdf from the
    Cornish-Fisher start, each kept inside the bracket the evaluations so far give (bisected, or doubled
    while there is no upper end, when a step would leave it). Each t_cdf is an mpmath incomplete beta and
    the report computes one interval per configuration, 120 in a large sweep: ~3-4 calls each, where a
    start at the bracket's middle needed ~19."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    low, high = 0.0, math.inf
    x = max(_cornish_fisher(p, df), 1e-12)
    for _ in range(200):
        error = t_cdf(x, df) - p
        if error < 0:
            low = x
        else:
            high = x
        step = x - error / t_pdf(x, df)
        new = step if low < step < high else (2 * x if math.isinf(high) else (low + high) / 2)
        if abs(new - x) <= 1e-12 * abs(new) or (high < math.inf and high - low <= 1e-12 * high):
            return new
        x = new
    return x


@dataclass(frozen=True)
class Welch:
    diff: float  # mean(gpu) - mean(cpu)
    se: float  # sqrt(s_c^2/n_c + s_g^2/n_g)
    df: float  # Welch-Satterthwaite degrees of freedom (inf when se == 0)
    low: float  # the PARITY_CONFIDENCE interval of diff
    high: float


def welch(cpu, gpu, confidence: float = PARITY_CONFIDENCE) -> Welch:
    """Welch t interval of diff = mean(gpu) - mean(cpu), in the unit of the samples (see the module
    docstring). Nulls are ignored; NaN interval (and se, df) when a side has fewer than 2 samples; a zero
    interval at diff when both sides have no spread (se = 0)."""
    diff, se, df = _moments(cpu, gpu)
    if not se > 0:  # NaN (a side too small) or 0 (no spread): no quantile needed
        return Welch(diff, se, df, diff if se == 0 else math.nan, diff if se == 0 else math.nan)
    half = t_quantile((1 + confidence) / 2, df) * se
    return Welch(diff, se, df, diff - half, diff + half)


def _moments(cpu, gpu) -> tuple[float, float, float]:
    """(diff, se, df) of welch, without its interval: the TOST needs no t quantile, and each quantile is
    ~15 mpmath incomplete betas (tost_p computing the whole interval tripled parity's time)."""
    c, g = _clean(cpu), _clean(gpu)
    if not (len(c) and len(g)):
        return (math.nan, math.nan, math.nan)
    diff = float(g.mean() - c.mean())
    if len(c) < 2 or len(g) < 2:
        return (diff, math.nan, math.nan)
    vc, vg = c.var(ddof=1) / len(c), g.var(ddof=1) / len(g)
    se = math.sqrt(vc + vg)
    if se == 0:
        return (diff, 0.0, math.inf)
    return (diff, se, (vc + vg) ** 2 / (vc**2 / (len(c) - 1) + vg**2 / (len(g) - 1)))


def tost_p(cpu, gpu, margin: float = EQUIVALENCE_MARGIN_PP) -> float:
    """max(p_low, p_high) of the two one-sided Welch t tests of |mean(gpu) - mean(cpu)| < margin (module
    docstring); 0.0 or 1.0 when se == 0 (the difference is exact), NaN when a side has < 2 samples."""
    diff, se, df = _moments(cpu, gpu)
    if math.isnan(se):
        return math.nan
    if se == 0:
        return 0.0 if abs(diff) < margin else 1.0
    p_low = 1 - t_cdf((diff + margin) / se, df)
    p_high = t_cdf((diff - margin) / se, df)
    return max(p_low, p_high)


def verdict(
    cpu, gpu, margin: float = EQUIVALENCE_MARGIN_PP, alpha: float = TOST_ALPHA, p: float | None = None
) -> str:
    """ "equivalent" when tost_p(cpu, gpu, margin) < alpha, "not shown equivalent" otherwise, "n<3" when a
    side has fewer than MIN_REPEATS samples. `p`: that tost_p, when the caller has it already."""
    if min(len(_clean(cpu)), len(_clean(gpu))) < MIN_REPEATS:
        return TOO_FEW
    return EQUIVALENT if (tost_p(cpu, gpu, margin) if p is None else p) < alpha else NOT_SHOWN


def _clean(values) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    return arr[~np.isnan(arr)]


def final_accuracies(epochs: pd.DataFrame) -> pd.DataFrame:
    """One row per run (sweep, trial, attempt): PAIR + device + final_acc_pct = 100 * test_acc of the
    run's last epoch (max epoch); runs whose last test_acc is missing are dropped."""
    epochs = with_cell_defaults(epochs)
    columns = PAIR + ["device"] + RUN + ["final_acc_pct"]
    if epochs.empty or "test_acc" not in epochs:
        return pd.DataFrame(columns=columns)
    last = epochs.sort_values("epoch", kind="stable").groupby(RUN, dropna=False).tail(1)
    last = last.assign(final_acc_pct=100 * pd.to_numeric(last["test_acc"], errors="coerce").astype(float))
    return last.dropna(subset=["final_acc_pct"])[columns].reset_index(drop=True)


def parity_table(epochs: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, batch_size, pipeline, precision) measured on both CPU and GPU:

    cpu_acc_pct, gpu_acc_pct   mean final accuracy over the side's runs, in percent
    diff_pp                    gpu_acc_pct - cpu_acc_pct
    ci_low_pp, ci_high_pp      welch(cpu, gpu): the PARITY_CONFIDENCE interval (NaN with < 2 runs a side)
    tost_p                     tost_p(cpu, gpu) (NaN with < 2 runs a side)
    verdict                    verdict(cpu, gpu): "equivalent", "not shown equivalent" or "n<3"; or
                               "not comparable (CPU capped)" when exactly one side is capped
    cpu_n, gpu_n               runs per side
    cpu_capped, gpu_capped     any of the side's epochs was extrapolated or had a partial test pass

    Pass successful epochs (stats.ok_epochs). Pairs measured on one device only are left out."""
    epochs = with_cell_defaults(epochs)
    columns = PAIR + [
        "cpu_acc_pct", "gpu_acc_pct", "diff_pp", "ci_low_pp", "ci_high_pp", "tost_p", "verdict", "cpu_n",
        "gpu_n", "cpu_capped", "gpu_capped",
    ]  # fmt: skip
    finals = final_accuracies(epochs)
    if finals.empty:
        return pd.DataFrame(columns=columns)
    flags = [c for c in CAPPED if c in epochs]
    capped_rows = epochs[epochs[flags].fillna(False).astype(bool).any(axis=1)] if flags else epochs.iloc[:0]
    capped = set(capped_rows[PAIR + ["device"]].itertuples(index=False, name=None))
    rows = []
    for key, g in finals.groupby(PAIR, dropna=False, sort=True):
        cpu = g.loc[g["device"] == "cpu", "final_acc_pct"].to_numpy()
        gpu = g.loc[g["device"] == "gpu", "final_acc_pct"].to_numpy()
        if not (len(cpu) and len(gpu)):
            continue
        w, p = welch(cpu, gpu), tost_p(cpu, gpu)
        cpu_capped, gpu_capped = (tuple(key) + (dev,) in capped for dev in ("cpu", "gpu"))
        if cpu_capped != gpu_capped:
            label = NOT_COMPARABLE + f" ({'CPU' if cpu_capped else 'GPU'} capped)"
        else:
            label = verdict(cpu, gpu, p=p)
        rows.append(
            dict(
                zip(PAIR, key, strict=True),
                cpu_acc_pct=float(cpu.mean()),
                gpu_acc_pct=float(gpu.mean()),
                diff_pp=w.diff,
                ci_low_pp=w.low,
                ci_high_pp=w.high,
                tost_p=p,
                verdict=label,
                cpu_n=len(cpu),
                gpu_n=len(gpu),
                cpu_capped=cpu_capped,
                gpu_capped=gpu_capped,
            )
        )
    return pd.DataFrame(rows, columns=columns)
