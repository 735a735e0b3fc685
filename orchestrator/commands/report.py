"""`benchctl report RESULTS_DIR...`: speedup table in the terminal; report.md, report.html + figures on disk.

benchctl report results/s1                 # writes results/s1/report/ (report.md, report.html, figures/)
benchctl report results/a results/b --out cmp/
benchctl report results/a results/b        # writes results/report-a-b/: never into a or b's own report
benchctl report results/a results/b --pool   # sweeps run under different conditions: results/pooled-a-b/
benchctl report results/s1 --format html   # only the self-contained report.html (and figures/)
benchctl report results/s1 --json | jq '.speedups[] | {model, kind, speedup}'   # summary.json's object
benchctl report results/s1 --target-acc 0.79    # time to 79% test accuracy (default: per pair)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import BenchctlError
from orchestrator.plan.parse import parse_choices

MAX_NAMED = 3  # sweeps named in a default folder's name; more are counted


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block, and enabled again after it if it was. A
    report makes millions of short-lived objects (records, matplotlib artists) that reference counting
    frees; the collector's passes over the survivors cost a large share of the report's time and free
    next to nothing (reports/scale/README.md has the numbers)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _resolved(path: Path) -> Path:
    return path.resolve()


def default_out(results: list[Path], pool: bool) -> Path:
    """Where a report goes without --out: one sweep's into RESULTS/report; several sweeps' into a folder
    of their own beside them (report-A-B, pooled-A-B with --pool), so no sweep's own report is replaced.
    Sweeps in different folders have no such place: --out is then required."""
    dirs = list(dict.fromkeys(map(_resolved, results)))
    if len(dirs) == 1:
        return results[0] / "report"
    parents = {d.parent for d in dirs}
    if len(parents) > 1:
        raise BenchctlError(
            "--out: the sweeps lie in different folders, so their report has no default place; give --out DIR"
        )
    names = [d.name for d in dirs[:MAX_NAMED]]
    if len(dirs) > MAX_NAMED:
        names.append(f"and-{len(dirs) - MAX_NAMED}-more")
    return results[0].parent / f"{'pooled' if pool else 'report'}-{'-'.join(names)}"


def report(
    results: Annotated[list[Path], typer.Argument(help="Results directories written by `benchctl sweep`.")],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where report.md and figures/ go (default: RESULTS/report; for several sweeps, a folder "
            "of their own beside them: report-A-B, or pooled-A-B with --pool)."
        ),
    ] = None,
    formats: Annotated[
        str,
        typer.Option(
            "--format",
            help="Comma list: md, html (self-contained), csv (summary.csv, epochs.csv). Figures always.",
        ),
    ] = "md,html",
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print summary.json's object (speedups, bottlenecks, scaling, time_to_accuracy, cells: "
            "the speedup table) as JSON; the files are still written.",
        ),
    ] = False,
    target_acc: Annotated[
        float | None,
        typer.Option(
            "--target-acc",
            min=0.0,
            max=1.0,
            help="Time to accuracy's target, a fraction like test_acc (0.79 = 79%). Default: per CPU/GPU "
            "pair, the lower of its two final accuracies minus 0.01.",
        ),
    ] = None,
    pool: Annotated[
        bool,
        typer.Option(
            help="Pool sweeps run under different conditions (epochs, step caps, data set, sizes, ...) into "
            "one table; without it they are refused. The report says what was pooled."
        ),
    ] = False,
) -> None:
    """Turn sweep results into a speedup table, report.md / report.html and figures."""
    for path in results:  # refused before pandas and matplotlib load (results.read_results says the same)
        if path.exists() and not path.is_dir():
            raise BenchctlError(f"{path} is a file, not a results directory; pass the folder a sweep wrote")
        if not path.is_dir():
            raise BenchctlError(f"results directory {path} does not exist; pass the folder a sweep wrote")
    with _no_cyclic_gc():
        # pandas and matplotlib behind it: imported when the command runs, not for --help or a refusal
        from orchestrator.report import ReportFormat, build_report

        chosen = parse_choices(formats, ReportFormat, "--format")  # one-line error, exit 2, first
        out_dir = out or default_out(results, pool)
        built = build_report(results, out_dir, formats=chosen, pool=pool, target_acc=target_acc)
    if as_json:
        typer.echo(built.summary_json)  # stdout holds only the JSON
        if built.pooled:
            typer.echo(f"benchctl: {built.pooled}", err=True)
        return
    typer.echo(built.terminal_text)
    if built.pooled:
        typer.echo(f"\n{built.pooled}")
    docs = " and ".join(str(p) for p in built.paths if p.parent == out_dir)
    typer.echo(f"\nwrote {docs} and {out_dir / 'figures'}/")
    if out is None and len(set(map(_resolved, results))) > 1:
        typer.echo(
            f"(a report of several sweeps goes to a folder of its own, {out_dir}; --out chooses another)"
        )
