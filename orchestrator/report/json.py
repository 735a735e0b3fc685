"""The speedup table for scripts: `benchctl report --json` and --format csv's summary.csv.

    from orchestrator.report import json
    print(json.table_json(model.table))
    json.write_csv(model, folder)          # summary.csv and epochs.csv

Named after what it writes; `import json` elsewhere still means the standard library (absolute imports).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from orchestrator.analysis.pairing import VARIANT_COLUMNS, several_variants
from orchestrator.report.model import ReportModel


def for_scripts(table: pd.DataFrame) -> pd.DataFrame:
    """The speedup table's rows as scripts get them: the variant columns (pairing.VARIANT_COLUMNS: each
    side's workers and CPUs) only where they tell rows apart (several_variants), so that results
    without a workers counterfactual keep the keys their scripts read."""
    return table if several_variants(table) else table.drop(columns=VARIANT_COLUMNS, errors="ignore")


def table_json(table: pd.DataFrame) -> str:
    """The speedup table as a JSON list of rows for scripts (one per configuration and pair of cells,
    with cpu_class / gpu_class: "" when unknown; for_scripts); missing numbers are null, never NaN."""
    return for_scripts(table).to_json(orient="records", indent=2)


def write_csv(model: ReportModel, folder: Path) -> None:
    """For a spreadsheet: summary.csv (the same rows and columns as the JSON) and epochs.csv (every epoch
    row the numbers come from)."""
    for_scripts(model.table).to_csv(folder / "summary.csv", index=False)
    model.epochs.to_csv(folder / "epochs.csv", index=False)
