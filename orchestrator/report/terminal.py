"""The terminal's plain-text report: the headline table (report.tables' columns), then each row's flags.

    from orchestrator.report import terminal
    print(terminal.render(model))     # model: report.model.build_model(...)
"""

from __future__ import annotations

from orchestrator.analysis.pairing import pair_label
from orchestrator.report.answer import terminal_lines
from orchestrator.report.formats import config_tags, variant_label
from orchestrator.report.model import ReportModel
from orchestrator.report.narrative import CPU_ONLY
from orchestrator.report.tables import HEADLINE, columns, rows

SHORT = {"CPU epoch s": "CPU s", "GPU epoch s": "GPU s"}  # headers shortened for a terminal's width


def _aligned(header: list[str], body: list[list[str]], left: int) -> str:
    """Plain-text table; the first `left` columns are left-aligned (text), the rest right-aligned."""
    widths = [max(len(str(r[i])) for r in [header] + body) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i < left else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in body]).rstrip()


def render(model: ReportModel) -> str:
    """The headline table as aligned plain text for a terminal, then each row's flags."""
    shown = columns(model, HEADLINE)
    text = _aligned([SHORT.get(c, c) for c in shown], rows(model, shown), left=1)
    several = model.several_pairs
    flagged = [
        f"  {' '.join([str(r.model), *config_tags(r, short=True)])}"
        + (f" ({pair_label(r.cpu_class, r.gpu_class)})" if several else "")
        + (f" ({variant_label(r)})" if model.several_variants else "")
        + f": {r.flags}"
        for r in model.table.itertuples()
        if r.flags
    ]
    if model.cpu_only:  # no speedup column: say how to get one
        text += f"\n\n{CPU_ONLY}"
    if flagged:
        text += "\nflags:\n" + "\n".join(flagged)
    answered = terminal_lines(model)
    return text + ("\n" + answered if answered else "")
