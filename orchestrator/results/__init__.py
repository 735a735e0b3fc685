"""The results store: what a sweep writes to disk and how it is read back.

    rows         the row schemas (epochs, trials) and the column keys of a cell, a pair, a run
    schema       the schema version alone, so `benchctl --version` reads it without pyarrow
    files        Parquet per trial attempt, written atomically; one file read and checked
    compact      a sweep's files of each kind in one (compact/), and reading a sweep through it
    reader       reading sweep directories back: read_kind, read_many, read_results
    sweepstate   what a results directory holds: trials done and planned, attempts, pooling

    from orchestrator.results import to_table     # public: tools outside benchctl build result files
    table = to_table(rows, "epochs")

The names below are loaded on first use (as orchestrator.report's are), so that importing a light
module of this package (schema, for `--version`) does not import pandas and pyarrow. Code inside
benchctl imports from the defining module (orchestrator.results.files, .reader, ...), not from here.
"""

from __future__ import annotations

import importlib

_EXPORTS = {"to_table": "files", "read_results": "reader", "ResultsError": "files"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"orchestrator.results.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
