"""The speedup table for scripts: `benchctl report --json` and --format csv's summary.csv.

    from orchestrator.report import json
    print(json.table_json(model.table))
    json.write_csv(model, folder)          # summary.csv and epochs.csv

Named after what it writes; `import json` elsewhere still means the standard library (absolute imports).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from orchestrator.report.model import ReportModel


def table_json(table: pd.DataFrame) -> str:
    """The speedup table as a JSON list of rows for scripts (one per configuration and hardware pair, with
    cpu_class / gpu_class: "" when unknown); missing numbers are null, never NaN."""
    return table.to_json(orient="records", indent=2)


def write_csv(model: ReportModel, folder: Path) -> None:
    """For a spreadsheet: summary.csv (the same rows and columns as the JSON) and epochs.csv (every epoch
    row the numbers come from)."""
    model.table.to_csv(folder / "summary.csv", index=False)
    model.epochs.to_csv(folder / "epochs.csv", index=False)
