"""Render an orchestrator.analysis.compare.Comparison: a terminal table, compare.md, JSON.

    from orchestrator.analysis import compare
    from orchestrator.report import compare_view
    result = compare.compare(Path("results/a"), Path("results/b"))
    print(compare_view.terminal_text(result))
    Path("compare.md").write_text(compare_view.markdown(result))

Nothing here computes: every number comes from the Comparison.
"""

from __future__ import annotations

import json

from orchestrator.analysis.compare import Comparison
from orchestrator.analysis.speedups import CI_CONFIDENCE
from orchestrator.plan.axes import CONFIG_AXES, Axis
from orchestrator.report.formats import DASH, fmt_seconds, is_missing
from orchestrator.report.sections import md_table


def _axes(result: Comparison) -> list[Axis]:
    """The configuration axes (axes.CONFIG_AXES) the table shows: all but those every cell holds at its
    unmarked value (compile: an all-eager comparison has no step column)."""
    return [
        a
        for a in CONFIG_AXES
        if a.unmarked is None or any(str(getattr(r.cell, a.trial_field)) != a.unmarked for r in result.cells)
    ]


def _header(result: Comparison) -> list[str]:
    return ["model", "device", *(a.column for a in _axes(result)), "class", "A s", "B s", "B/A", "verdict"]


def _ratio(r) -> str:
    """ "2.01x [1.95–2.08]"; without an interval just the ratio."""
    if is_missing(r.ratio):
        return DASH
    if is_missing(r.low) or is_missing(r.high):
        return f"{r.ratio:.2f}x"
    return f"{r.ratio:.2f}x [{r.low:.2f}–{r.high:.2f}]"


def _rows(result: Comparison) -> list[list[str]]:
    axes = _axes(result)
    return [
        [r.cell.model, r.cell.device, *(a.word(getattr(r.cell, a.trial_field)) for a in axes)]
        + [r.cell.hw_class or DASH, fmt_seconds(r.a_epoch_s), fmt_seconds(r.b_epoch_s), _ratio(r), r.verdict]
        for r in result.cells
    ]


def _lines(result: Comparison, quote: str = "") -> list[str]:
    """The sentences under the table: unmatched cells and differing or unknown conditions."""
    q = quote
    lines = []
    for side, cells in (("A", result.only_a), ("B", result.only_b)):
        if cells:
            lines.append(f"Only in {side}: " + "; ".join(f"{q}{c.label}{q}" for c in cells) + ".")
    if result.differing:
        lines.append(
            "Conditions that differ (A vs B): "
            + "; ".join(f"{q}{k}{q} ({a!r} vs {b!r})" for k, (a, b) in result.differing.items())
            + "."
        )
    if result.unknown_conditions:
        names = ", ".join(f"{q}{d}{q}" for d in result.unknown_conditions)
        lines.append(f"Conditions unknown for {names} (no spec.json): not compared.")
    elif not result.differing:
        lines.append("Both sweeps ran under the same conditions.")
    return lines


def terminal_text(result: Comparison) -> str:
    header = _header(result)
    widths = [max(len(row[i]) for row in [header] + _rows(result)) for i in range(len(header))]
    numeric = range(len(header) - 4, len(header) - 1)  # A s, B s, B/A read best right-aligned

    def line(row: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )

    table = [f"A = {result.a}", f"B = {result.b}", ""]
    if result.cells:
        table += [line(header).rstrip(), "  ".join("-" * w for w in widths)]
        table += [line(row).rstrip() for row in _rows(result)]
    else:
        table.append("No cell was measured in both A and B.")
    return "\n".join(table + [""] + _lines(result))


def markdown(result: Comparison) -> str:
    none = "No cell was measured in both A and B."
    table = md_table(_header(result), _rows(result)) if result.cells else none
    return "\n".join(
        [
            f"# Compare {result.b.name} (B) with {result.a.name} (A)\n",
            f"A = `{result.a}`, B = `{result.b}`.\n",
            f"**B/A** = B's median steady-state epoch time / A's, per cell (model, device, batch size, "
            f"pipeline, precision, hardware class); above 1, B is slower. The bracket is its "
            f"{CI_CONFIDENCE:.0%} bootstrap interval (both sides' non-warm-up epochs resampled, seeded). "
            '**verdict**: "slower" or "faster" only when the interval excludes 1, else "same within '
            'noise"; "no interval" when a side has fewer than 2 epochs.\n',
            table + "\n",
            *(f"- {line}" for line in _lines(result, "`")),
            "",
        ]
    )


def to_json(result: Comparison) -> str:
    return json.dumps(result.to_dict(), indent=2)
