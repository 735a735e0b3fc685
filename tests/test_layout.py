"""The package layout: orchestrator.analysis never imports display code (orchestrator.report, matplotlib),
and the report reads only columns the row schemas (results.EPOCH_SCHEMA, TRIAL_SCHEMA) define.

.venv/bin/pytest -q tests/test_layout.py

The import check reads each module's source with ast, so an import inside a function counts too, and
nothing is imported (an import cycle or a heavy module cannot hide a violation).
"""

import ast
from pathlib import Path

import pytest

ANALYSIS = Path(__file__).resolve().parents[1] / "orchestrator" / "analysis"
DISPLAY = ("orchestrator.report", "matplotlib")


def imported(source: str) -> set[str]:
    """Every module name an `import` or `from ... import` statement of `source` names (absolute only)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            # `from orchestrator import report` imports the package too
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def display(names: set[str]) -> set[str]:
    return {n for n in names if any(n == d or n.startswith(d + ".") for d in DISPLAY)}


@pytest.mark.parametrize("path", sorted(ANALYSIS.glob("*.py")), ids=lambda p: p.name)
def test_analysis_never_imports_display_code(path):
    assert not display(imported(path.read_text(encoding="utf-8"))), path.name


def test_the_check_catches_each_form():
    sources = [
        "from orchestrator.report.formats import DASH",
        "from orchestrator import report",
        "import matplotlib.pyplot as plt",
        "def f():\n    from orchestrator.report import figures\n",
    ]
    for source in sources:
        assert display(imported(source)), source
    assert not display(imported("from orchestrator import results\nimport pandas as pd"))
    assert not display(imported("from orchestrator.results.files import PAIR"))


def test_the_report_reads_only_columns_of_the_row_schemas():
    # read_many reads a name no file has as an all-null column: a misspelt one would hide, not fail
    from orchestrator.report.model import ENVIRONMENT, TRIAL_COLUMNS, UNREAD_EPOCH_COLUMNS
    from orchestrator.results.rows import EPOCH_SCHEMA, TRIAL_SCHEMA

    assert set(TRIAL_COLUMNS) <= set(TRIAL_SCHEMA.names)
    assert set(ENVIRONMENT) <= set(TRIAL_COLUMNS)
    assert set(UNREAD_EPOCH_COLUMNS) <= set(EPOCH_SCHEMA.names)
