"""Compare two result sets cell by cell (`benchctl compare A B`): analysis only, no display.

    from orchestrator.analysis.compare import compare
    result = compare(Path("results/torch211"), Path("results/torch214"))
    for cell in result.cells:
        print(cell.label, cell.ratio, cell.low, cell.high, cell.verdict)

Definitions:
    cell      = stats.CLASS_CELL's values (model, device, the other axes of plan.axes.AXES, hw_class): a
                cell of A is matched only with the same cell of B (hardware classes never pooled)
    ratio     = median(B steady epoch_s) / median(A steady epoch_s): above 1, B took longer
    interval  = speedups.bootstrap_speedup_ci(B samples, A samples): the same seeded percentile bootstrap
                as the speedup interval, so the same results always give the same interval
    verdict   = "slower" (B) when the interval lies above 1, "faster" when below 1, "same within noise"
                when it contains 1, "no interval" when a side has fewer than 2 steady epochs
Rendering lives in orchestrator.report.compare_view.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from orchestrator.analysis.speedups import bootstrap_speedup_ci, speedup
from orchestrator.analysis.stats import CLASS_CELL, ok_epochs, steady_epochs
from orchestrator.plan.axes import AXES, CONFIG_AXES, Kind
from orchestrator.plan.spec import condition_differences, read_stored_spec
from orchestrator.results.files import ResultsError
from orchestrator.results.reader import read_results

_NUMBERS = {a.trial_field for a in AXES if a.kind is Kind.ints}  # batch_size; the other axes are text
SLOWER, FASTER, SAME, NO_INTERVAL = "slower", "faster", "same within noise", "no interval"


@dataclass(frozen=True)
class Cell:
    """One cell's identity: its values of stats.CLASS_CELL (each axis of plan.axes.AXES, then hw_class, ""
    when not recorded), read as attributes (`cell.model`, `cell.compile`); `label` names it in one line."""

    values: tuple  # in CLASS_CELL's order

    def __getattr__(self, column: str):
        if column != "values" and column in CLASS_CELL:
            return self.values[CLASS_CELL.index(column)]
        raise AttributeError(column)

    def as_dict(self) -> dict:
        return dict(zip(CLASS_CELL, self.values, strict=True))

    @property
    def label(self) -> str:
        """e.g. "resnet18 gpu (batch 128, loader, fp32, compiled, gpu:H200)": the unmarked values left out."""
        tags = [tag for a in CONFIG_AXES if (tag := a.tag(getattr(self, a.trial_field)))]
        return f"{self.model} {self.device} ({', '.join(tags + ([self.hw_class] if self.hw_class else []))})"


@dataclass(frozen=True)
class CellRatio:
    """A cell found in both result sets: its epoch times and B/A with its interval."""

    cell: Cell
    a_epoch_s: float  # median steady epoch time in A
    b_epoch_s: float
    ratio: float  # b_epoch_s / a_epoch_s
    low: float  # NaN when a side has fewer than 2 samples
    high: float
    a_n: int  # steady epoch samples
    b_n: int
    verdict: str  # SLOWER / FASTER / SAME / NO_INTERVAL


@dataclass(frozen=True)
class Comparison:
    """What compare() found; missing numbers are NaN, never a guess."""

    a: Path
    b: Path
    cells: tuple[CellRatio, ...]
    only_a: tuple[Cell, ...]
    only_b: tuple[Cell, ...]
    differing: dict[str, tuple]  # condition key -> (A's value, B's value): spec.condition_differences
    unknown_conditions: tuple[Path, ...]  # of A and B, those without a readable spec.json

    def to_dict(self) -> dict:
        """Plain JSON-ready data (NaN as None), for --json."""

        def clean(x):
            if isinstance(x, float) and math.isnan(x):
                return None
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, list | tuple):
                return [clean(v) for v in x]
            return str(x) if isinstance(x, Path) else x

        return clean(
            {
                "a": self.a,
                "b": self.b,
                "cells": [
                    {**c.cell.as_dict(), **{k: v for k, v in asdict(c).items() if k != "cell"}}
                    for c in self.cells
                ],  # fmt: skip
                "only_a": [c.as_dict() for c in self.only_a],
                "only_b": [c.as_dict() for c in self.only_b],
                "differing_conditions": {k: {"a": a, "b": b} for k, (a, b) in self.differing.items()},
                "unknown_conditions": list(self.unknown_conditions),
            }
        )


def verdict(low: float, high: float) -> str:
    """B "slower" / "faster" than A only when the interval excludes 1; "no interval" without one."""
    if math.isnan(low) or math.isnan(high):
        return NO_INTERVAL
    if low > 1:
        return SLOWER
    if high < 1:
        return FASTER
    return SAME


def _samples(results_dir: Path) -> dict[Cell, pd.Series]:
    """Each cell's steady epoch_s samples from the finished trials of one results directory."""
    epochs, trials = read_results(results_dir)  # a ResultsError names the directory
    steady = steady_epochs(ok_epochs(epochs, trials)) if not epochs.empty else epochs
    if steady.empty:
        raise ResultsError(f"{results_dir}: no completed epochs to compare; run or resume the sweep first")
    out = {}
    for key, g in steady.groupby(CLASS_CELL, dropna=False, sort=True):
        values = tuple(int(v) if k in _NUMBERS else str(v) for k, v in zip(CLASS_CELL, key, strict=True))
        out[Cell(values)] = g["epoch_s"]
    return out


def _ratio(cell: Cell, a: pd.Series, b: pd.Series) -> CellRatio:
    low, high = bootstrap_speedup_ci(b, a)  # median(b) / median(a): the same seeded bootstrap
    return CellRatio(
        cell=cell,
        a_epoch_s=float(a.median()),
        b_epoch_s=float(b.median()),
        ratio=speedup(b, a),
        low=low,
        high=high,
        a_n=int(a.notna().sum()),
        b_n=int(b.notna().sum()),
        verdict=verdict(low, high),
    )


def compare(a: Path, b: Path) -> Comparison:
    """Compare result set B against A (each a results directory written by `benchctl sweep`)."""
    a, b = Path(a), Path(b)
    sa, sb = _samples(a), _samples(b)
    specs = {a: read_stored_spec(a), b: read_stored_spec(b)}
    known = specs[a] is not None and specs[b] is not None
    return Comparison(
        a=a,
        b=b,
        cells=tuple(_ratio(c, sa[c], sb[c]) for c in sa if c in sb),
        only_a=tuple(c for c in sa if c not in sb),
        only_b=tuple(c for c in sb if c not in sa),
        differing=condition_differences(specs[a], specs[b]) if known else {},
        unknown_conditions=tuple(d for d, s in specs.items() if s is None),
    )
