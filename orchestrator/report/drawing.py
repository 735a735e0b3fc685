"""The report's figures, drawn in forked worker processes while the report's text is rendered.

    with FigureWorkers() as workers:        # forked now: they load matplotlib while the model is built
        model = build_model(dirs, on_cells=lambda part: workers.draw(part, ["epoch_time"]))
        workers.draw(model, ["speedup"])     # starts drawing (markdown.FIGURES keys)
        text = markdown.render(model, keys)  # meanwhile
        pngs = workers.pngs()                # {key: PNG bytes}; a figure's exception is raised here

The figures depend on the model only, most of them on its per-cell parts (build_model's on_cells), which
are known before the speedups; drawing them (matplotlib's import included) is a large share of a big
report's time: on two cores or more the workers take it off the main process, and start early. The
workers are forked, so they see this process's modules as they are (a test's monkeypatch included) and
nothing is imported twice from disk; with one core, or where fork is not offered, the figures are drawn
here, when asked for.
The main process never loads matplotlib.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from orchestrator.report.markdown import FIGURES

if TYPE_CHECKING:
    from orchestrator.report.model import ReportModel

WORKERS = 2  # at most, and no more than the cores: more would only queue
NICE = 10  # the workers' niceness, added to this process's


def _load() -> None:
    """A worker's start: load matplotlib and the figure modules before the first figure is asked for. The
    worker yields the cores to the main process, whose model is the report's longest path."""
    os.nice(NICE)
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
        self._drawing: dict[str, Future | Callable[[], bytes]] = {}
        if self._pool is not None:
            # a task forks every worker now (ProcessPoolExecutor forks them all at once), before this
            # process starts other threads; each loads itself in `initializer` (its niceness added once)
            self._pool.submit(os.getpid)

    def __enter__(self) -> FigureWorkers:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def draw(self, model: ReportModel, keys: Iterable[str]) -> None:
        """Start drawing the figures `keys` of `model` (drawn here, by pngs(), where there are no workers)."""
        slim = _slim(model) if self._pool is not None else model
        for key in keys:
            self._drawing[key] = (
                self._pool.submit(_png, key, slim) if self._pool is not None else partial(_png, key, slim)
            )

    def pngs(self) -> dict[str, bytes]:
        """Every figure asked for, key -> PNG, once drawn; a figure's exception is raised here."""
        return {key: job.result() if isinstance(job, Future) else job() for key, job in self._drawing.items()}
