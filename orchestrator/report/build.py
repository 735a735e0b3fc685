"""Build the speedup report of one or more sweeps: report.md, report.html, PNG figures, a terminal table.

    from orchestrator.report import build_report
    report = build_report([Path("results/s1")], Path("reports/s1"))
    print(report.terminal_text)        # reports/s1/report.md, report.html, figures/*.png
    build_report(dirs, out, formats=[ReportFormat.md])   # report.md only (figures are always written)

The numbers are computed once, into a report.model.ReportModel; each renderer reads it (report.markdown,
report.terminal, report.json, the figures). Nothing is written until every number and figure is
computed; figures are rendered into a hidden staging folder and report.md goes through a temp file, each
moved into place with os.replace.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import pandas as pd

from orchestrator.errors import BenchctlError
from orchestrator.report import epoch_figures, figures, markdown, terminal
from orchestrator.report.formats import DASH  # noqa: F401  (tests read report.DASH)
from orchestrator.report.html import write_html
from orchestrator.report.json import table_json, write_csv
from orchestrator.report.markdown import CAPTIONS, FIGURES  # noqa: F401  (re-exported: tests read them)
from orchestrator.report.model import ReportModel, build_model
from orchestrator.report.summary import summary_json, write_summary

__all__ = ["CAPTIONS", "FIGURES", "Report", "ReportFormat", "build_report", "table_json"]


class ReportFormat(str, Enum):
    """Documents build_report writes besides the figures (`benchctl report --format md,html`)."""

    md = "md"  # report.md, figures linked from figures/
    html = "html"  # report.html: the same content, one self-contained file (figures embedded)
    csv = "csv"  # summary.csv (the speedup table, as --json) and epochs.csv (every epoch row it used)


# the files each format writes into the report folder
_DOCS = {
    ReportFormat.md: ("report.md",),
    ReportFormat.html: ("report.html",),
    ReportFormat.csv: ("summary.csv", "epochs.csv"),
}


_DRAW = {  # key -> draw(model, path); the functions are looked up on their module at call time
    "speedup": lambda m, path: figures.speedup_vs_params(m.table, path, m.explained.scaling),
    "epoch_time": lambda m, path: figures.epoch_time(m.summary, path),
    "breakdown": lambda m, path: epoch_figures.epoch_breakdown(m.epochs, path),
    "accuracy": lambda m, path: epoch_figures.accuracy_per_epoch(m.epochs, path),
    "throughput": lambda m, path: epoch_figures.throughput_vs_batch(m.epochs, path),
}


@dataclass
class Report:
    table: pd.DataFrame  # orchestrator.analysis.speedups.speedup_table
    summary: pd.DataFrame  # orchestrator.analysis.stats.cell_summary
    paths: list[Path] = field(default_factory=list)  # report.md, report.html (those written), figures
    terminal_text: str = ""
    pooled: str = ""  # what was pooled across differing or unknown conditions (results.Pooling.note)
    model: ReportModel | None = None  # everything the report shows (report.model)
    summary_json: str = ""  # summary.json's text (report.summary), what --json prints


def _figure_keys(model: ReportModel) -> list[str]:
    """The FIGURES that apply, in order (throughput only with several batch sizes)."""
    return [key for key in FIGURES if key != "throughput" or len(model.batch_sizes) > 1]


def build_report(
    results_dirs: list[Path],
    out_dir: Path,
    formats: Iterable[ReportFormat | str] = (ReportFormat.md, ReportFormat.html),
    pool: bool = False,
    target_acc: float | None = None,
) -> Report:
    """Read the sweeps, compute the tables, write out_dir/report.md and/or out_dir/report.html (formats)
    and out_dir/figures/*.png (always; a figure that does not apply is not drawn and a stale copy of it is
    removed). Sweeps run under different conditions (spec.condition_differences) are refused unless
    `pool`; then the report says what was pooled. out_dir/summary.json (report.summary) is always
    written; `target_acc`: time to accuracy's target (None: each pair's default)."""
    wanted = {ReportFormat(f) for f in formats}
    docs = [name for f in ReportFormat if f in wanted for name in _DOCS[f]]
    model = build_model(
        results_dirs, pool=pool, every_epoch_column=ReportFormat.csv in wanted, target_acc=target_acc
    )
    keys = _figure_keys(model)
    text = markdown.render(model, keys)
    terminal_text = terminal.render(model)
    answers = summary_json(model)

    try:  # try the write itself: a pre-check with os.access would be wrong for root and on NFS
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BenchctlError(
            f"--out: cannot create {out_dir} ({exc.strerror}); choose a writable --out"
        ) from None
    staging = Path(tempfile.mkdtemp(prefix=".report-", dir=out_dir))
    try:
        for key in keys:
            _DRAW[key](model, staging / Path(FIGURES[key]).name)
        (staging / "report.md").write_text(text, encoding="utf-8")
        write_summary(model, staging)
        if ReportFormat.csv in wanted:
            write_csv(model, staging)
        if ReportFormat.html in wanted:
            write_html(text, staging, staging / "report.html")  # figures embedded from staging
        figure_paths = [out_dir / FIGURES[key] for key in keys]
        (out_dir / "figures").mkdir(parents=True, exist_ok=True)
        # figures first, so report.md never links to a figure that is not there yet
        for path in figure_paths:
            os.replace(staging / path.name, path)
        for key in FIGURES.keys() - set(keys):
            (out_dir / FIGURES[key]).unlink(missing_ok=True)  # from an earlier report of other results
        for name in [*docs, "summary.json"]:
            os.replace(staging / name, out_dir / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    final = [out_dir / name for name in docs] + [out_dir / "summary.json"] + figure_paths
    return Report(
        table=model.table,
        summary=model.summary,
        paths=final,
        terminal_text=terminal_text,
        pooled=model.pooled_note(),
        model=model,
        summary_json=answers,
    )
