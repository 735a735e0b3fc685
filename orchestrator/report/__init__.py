"""The speedup report: build (read, compute, write) and one module per renderer.

    from orchestrator.report import build_report, ReportFormat
    report = build_report([Path("results/s1")], Path("reports/s1"))

The names below are loaded on first use, so that importing a light module of this package (formats, for
`benchctl compare`) does not load matplotlib and the figures with it.
"""

from __future__ import annotations

import importlib

_EXPORTS = {"build_report": "build", "Report": "build", "ReportFormat": "build", "table_json": "json"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"orchestrator.report.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
