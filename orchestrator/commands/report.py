"""`benchctl report RESULTS_DIR...`: speedup table in the terminal, report.md + figures on disk.

benchctl report results/s1                 # writes results/s1/report/
benchctl report results/a results/b --out cmp/
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.report import build_report


def report(
    results: Annotated[list[Path], typer.Argument(help="Results directories written by `benchctl sweep`.")],
    out: Annotated[
        Path | None, typer.Option(help="Where report.md and figures/ go (default: RESULTS/report).")
    ] = None,
) -> None:
    """Turn sweep results into a speedup table, report.md and figures."""
    out_dir = out or results[0] / "report"
    built = build_report(results, out_dir)
    typer.echo(built.terminal_text)
    typer.echo(f"\nwrote {out_dir / 'report.md'} and {out_dir / 'figures'}/")
