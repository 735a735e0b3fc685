"""The report's figures, drawn in forked worker processes while the report's text is rendered.

    with FigureWorkers() as workers:        # forked now: they load matplotlib while the model is built
        model = build_model(dirs)
        drawn = workers.draw(model, keys)    # starts drawing each figure (markdown.FIGURES keys)
        text = markdown.render(model, keys)  # meanwhile
        pngs = drawn()                       # {key: PNG bytes}; a figure's exception is raised here

The figures depend on the model only, and drawing them (matplotlib's import included) is a large share of a
big report's time: on two cores or more the workers take it off the main process. The workers are forked,
so they see this process's modules as they are (a test's monkeypatch included) and nothing is imported
twice from disk; with one core, or where fork is not offered, the figures are drawn here, when asked for.
The main process never loads matplotlib.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from orchestrator.report.markdown import FIGURES

if TYPE_CHECKING:
    from orchestrator.report.model import ReportModel

WORKERS = 2  # at most, and no more than the cores: more would only queue


def _load() -> None:
    """A worker's start: load matplotlib and the figure modules before the first figure is asked for."""
    from orchestrator.report import epoch_figures  # noqa: F401  (imports report.figures and pyplot)


def draw(key: str, model: ReportModel, path: Path) -> None:
    """Draw figure `key` (a markdown.FIGURES key) of `model` into `path`."""
    from orchestrator.report import epoch_figures, figures

    if key == "speedup":
        figures.speedup_vs_params(model.table, path, model.explained.scaling)
    elif key == "epoch_time":
        figures.epoch_time(model.summary, path)
    elif key == "breakdown":
        epoch_figures.epoch_breakdown(model.summary, path)
    elif key == "accuracy":
        epoch_figures.accuracy_per_epoch(model.accuracy, path, model.chance_pct)
    elif key == "throughput":
        epoch_figures.throughput_vs_batch(model.summary, path)
    else:
        raise KeyError(key)


def _png(key: str, model: ReportModel) -> bytes:
    """Figure `key` of `model` as PNG bytes (drawn into a private folder: the worker owns no report path)."""
    with tempfile.TemporaryDirectory(prefix="benchctl-figure-") as tmp:
        path = Path(tmp) / Path(FIGURES[key]).name
        draw(key, model, path)
        return path.read_bytes()


def _slim(model: ReportModel) -> ReportModel:
    """`model` without the epoch and trial rows, which no figure reads: the copy sent to the workers."""
    return replace(model, epochs=pd.DataFrame(), trials=pd.DataFrame())


class FigureWorkers:
    """Worker processes that draw figures (the module doc says why); a context manager that ends them."""

    def __init__(self, workers: int = WORKERS) -> None:
        cores = os.cpu_count() or 1
        n = min(workers, cores) if cores > 1 else 0  # one core: drawing here costs the same, less memory
        forkable = "fork" in multiprocessing.get_all_start_methods()
        self._pool = (
            ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"), initializer=_load)
            if n >= 1 and forkable
            else None
        )
        if self._pool is not None:
            self._pool.submit(_load)  # forks the workers now, before this process starts other threads

    def __enter__(self) -> FigureWorkers:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def draw(self, model: ReportModel, keys: Iterable[str]) -> Callable[[], dict[str, bytes]]:
        """Start drawing the figures `keys` of `model`; the callable returned waits for them: key -> PNG."""
        keys = list(keys)
        if self._pool is None:
            return lambda: {key: _png(key, model) for key in keys}
        slim = _slim(model)
        futures: dict[str, Future] = {key: self._pool.submit(_png, key, slim) for key in keys}
        return lambda: {key: future.result() for key, future in futures.items()}
