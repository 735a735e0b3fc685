"""Build the speedup report of one or more sweeps: report.md, report.html, PNG figures, a terminal table.

    from orchestrator.report import build_report
    report = build_report([Path("results/s1")], Path("reports/s1"))
    print(report.terminal_text)        # reports/s1/report.md, report.html, figures/*.png
    build_report(dirs, out, formats=[ReportFormat.md])   # report.md only (figures are always written)

The numbers are computed once, into a report.model.ReportModel; each renderer reads it (report.markdown,
report.terminal, report.json, the figures: drawn by worker processes meanwhile, report.drawing). Nothing
is written until every number and figure is computed; then the folder is written whole
(report.folder.publish): into a staging folder beside it, which takes its place, so no file of an earlier
report (another --format, a figure that no longer applies) stays behind.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import pandas as pd

from orchestrator.report import markdown, terminal
from orchestrator.report.drawing import FigureWorkers
from orchestrator.report.folder import publish
from orchestrator.report.formats import DASH  # noqa: F401  (tests read report.DASH)
from orchestrator.report.html import convert, write_html
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
    and out_dir/figures/*.png (always; a figure that does not apply is not drawn), and nothing else of an
    earlier report (report.folder: other files in out_dir stay). Sweeps run under different conditions
    (spec.condition_differences) are refused unless `pool`; then the report says what was pooled.
    out_dir/summary.json (report.summary) is always written; `target_acc`: time to accuracy's target
    (None: each pair's default)."""
    wanted = {ReportFormat(f) for f in formats}
    docs = [name for f in ReportFormat if f in wanted for name in _DOCS[f]]
    with FigureWorkers() as workers:  # they load matplotlib while the model is built

        def draw_per_cell(part: ReportModel) -> None:  # these figures read the per-cell parts only
            workers.draw(part, [key for key in _figure_keys(part) if key != "speedup"])

        model = build_model(
            results_dirs,
            pool=pool,
            every_epoch_column=ReportFormat.csv in wanted,
            target_acc=target_acc,
            on_cells=draw_per_cell,
        )
        keys = _figure_keys(model)
        workers.draw(model, ["speedup"])
        text = markdown.render(model, keys)
        terminal_text = terminal.render(model)
        answers = summary_json(model)
        body = convert(text) if ReportFormat.html in wanted else None
        pngs = workers.pngs()

    def fill(staging: Path) -> None:  # the whole folder, as it will be (report.folder swaps it in)
        (staging / "figures").mkdir()
        for key in keys:
            (staging / FIGURES[key]).write_bytes(pngs[key])
        (staging / "report.md").write_text(text, encoding="utf-8")
        write_summary(model, staging)
        if ReportFormat.csv in wanted:
            write_csv(model, staging)
        if ReportFormat.html in wanted:
            write_html(text, staging / "figures", staging / "report.html", body)  # figures embedded
        if ReportFormat.md not in wanted:
            (staging / "report.md").unlink()  # html only: report.md was its source

    publish(out_dir, fill)
    figure_paths = [out_dir / FIGURES[key] for key in keys]
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
