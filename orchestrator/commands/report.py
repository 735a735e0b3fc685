"""`benchctl report RESULTS_DIR...`: speedup table in the terminal, report.md + figures on disk.

benchctl report results/s1                 # writes results/s1/report/
benchctl report results/a results/b --out cmp/
benchctl report results/s1 --json | jq '.[] | {model, speedup}'
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.report import build_report, table_json


def report(
    results: Annotated[list[Path], typer.Argument(help="Results directories written by `benchctl sweep`.")],
    out: Annotated[
        Path | None, typer.Option(help="Where report.md and figures/ go (default: RESULTS/report).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the speedup table as JSON (files are still written).")
    ] = False,
) -> None:
    """Turn sweep results into a speedup table, report.md and figures."""
    out_dir = out or results[0] / "report"
    built = build_report(results, out_dir)
    if as_json:
        typer.echo(table_json(built.table))  # stdout holds only the JSON
        return
    typer.echo(built.terminal_text)
    typer.echo(f"\nwrote {out_dir / 'report.md'} and {out_dir / 'figures'}/")
