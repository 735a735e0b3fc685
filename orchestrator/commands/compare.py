"""`benchctl compare A B`: per cell, B's epoch time against A's, with a 95% interval.

benchctl compare results/torch211 results/torch214       # table; writes A/compare-with-torch214/compare.md
benchctl compare results/a results/b --out cmp/          # compare.md goes to cmp/
benchctl compare results/a results/b --json | jq '.cells[] | {model, ratio, verdict}'

Exit 0 whatever the cells show; 2 for unreadable or empty results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

FORMATS = ("md", "none")  # compare.md, or no file at all


def compare(
    a: Annotated[Path, typer.Argument(help="Baseline results directory (A).")],
    b: Annotated[Path, typer.Argument(help="Results directory compared with A (B).")],
    out: Annotated[
        Path | None, typer.Option(help="Where compare.md goes (default: A/compare-with-B).")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="md (compare.md) or none.")] = "md",
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare two sweeps' epoch times cell by cell (B/A, 95% CI)."""
    from orchestrator.analysis.compare import compare as compare_results
    from orchestrator.errors import BenchctlError
    from orchestrator.report import compare_view  # pandas behind it: imported only when the command runs

    if fmt not in FORMATS:  # checked before any reading
        raise BenchctlError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    result = compare_results(a, b)
    written = None
    if fmt == "md":
        out_dir = out or a / f"compare-with-{b.resolve().name}"
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            written = out_dir / "compare.md"
            written.write_text(compare_view.markdown(result), encoding="utf-8")
        except OSError as exc:
            raise BenchctlError(
                f"--out: cannot write {out_dir} ({exc.strerror}); choose a writable --out"
            ) from None
    if as_json:
        typer.echo(compare_view.to_json(result))  # stdout holds only the JSON
        return
    typer.echo(compare_view.terminal_text(result))
    if written:
        typer.echo(f"\nwrote {written}")
