"""The speedup table rendered for people: a headline table (the answer), a details table (everything
else), and the terminal's plain-text version of the headline.

    from orchestrator.report import tables
    print(tables.headline_section(table))     # table: orchestrator.analysis.stats.speedup_table
    print(tables.details_section(table))
    print(tables.terminal_table(table))

The report used to open with one ~19-column table that scrolled sideways; the headline keeps what answers
"how much faster, and at what accuracy", the rest moves to Details. Rows of the two tables are in the
same order, so a headline row's details are in the same position.
"""

from __future__ import annotations

import pandas as pd

from orchestrator.analysis.pairing import class_label, pair_label, several_pairs
from orchestrator.analysis.stats import accuracy_comparable
from orchestrator.report.formats import (
    DASH,
    fmt_params,
    fmt_pct,
    fmt_seconds,
    fmt_speedup,
    fmt_speedup_ci,
    fmt_util,
)
from orchestrator.report.sections import md_table


def _acc(acc, capped, other_capped, other_n) -> str:
    """A side's accuracy; "31.0% (capped)" when it came from capped work beside an uncapped, measured
    other side: the two numbers are not comparable, and a bare pair would read as a device gap."""
    text = fmt_pct(acc)
    apart = other_n and not accuracy_comparable(capped, other_capped)
    return f"{text} (capped)" if capped and apart and text != DASH else text


# Every column a results table can show: header -> how one speedup-table row renders in it.
_COLUMNS = {
    "model": lambda r: r.model,
    "params": lambda r: fmt_params(r.params),
    "batch": lambda r: str(r.batch_size),
    "pipeline": lambda r: r.pipeline,
    "precision": lambda r: r.precision,
    "step": lambda r: "compiled" if getattr(r, "compile", "off") == "on" else "eager",
    "CPU class": lambda r: class_label(r.cpu_class) if r.cpu_n else DASH,
    "GPU class": lambda r: class_label(r.gpu_class) if r.gpu_n else DASH,
    "CPU epoch s": lambda r: fmt_seconds(r.cpu_epoch_s),
    "GPU epoch s": lambda r: fmt_seconds(r.gpu_epoch_s),
    "speedup": lambda r: fmt_speedup_ci(r.speedup, r.speedup_low, r.speedup_high),
    "CPU acc": lambda r: _acc(r.cpu_acc, r.cpu_capped, r.gpu_capped, r.gpu_n),
    "GPU acc": lambda r: _acc(r.gpu_acc, r.gpu_capped, r.cpu_capped, r.cpu_n),
    "CPU data-wait": lambda r: fmt_pct(r.cpu_data_share, 0),
    "GPU data-wait": lambda r: fmt_pct(r.gpu_data_share, 0),
    "GPU J/epoch": lambda r: fmt_seconds(r.gpu_energy_j),
    "GPU util": lambda r: fmt_util(r.gpu_util_pct),
    "energy speedup": lambda r: fmt_speedup(r.energy_speedup),
    "n CPU/GPU": lambda r: f"{r.cpu_n}/{r.gpu_n}",
    "flags": lambda r: r.flags or "",
}
_KEY = ["model", "batch", "pipeline", "precision", "step", "CPU class", "GPU class"]  # names a Details row
HEADLINE = ["model", "params", "batch", "pipeline", "precision", "step", "CPU class", "GPU class"]
HEADLINE += ["CPU epoch s"]
HEADLINE += ["GPU epoch s", "speedup", "CPU acc", "GPU acc"]
DETAILS = _KEY + [c for c in _COLUMNS if c not in HEADLINE]
_TERMINAL = {"CPU epoch s": "CPU s", "GPU epoch s": "GPU s"}  # short headers


def has_classes(table: pd.DataFrame) -> bool:
    """Whether any row of a speedup_table names a hardware class (schema-1 results never do)."""
    cols = [c for c in ("cpu_class", "gpu_class") if c in table]
    return any(table[c].fillna("").astype(str).ne("").any() for c in cols)


def has_compiled(table: pd.DataFrame) -> bool:
    """Whether any row of a speedup_table is a compiled cell (--compile on)."""
    return "compile" in table and table["compile"].eq("on").any()


def _columns(table: pd.DataFrame, columns: list[str]) -> list[str]:
    """`columns` without "CPU class" / "GPU class" unless the table names a class (has_classes), and
    without "step" unless it holds a compiled cell (eager alone is the paper's setting, said nowhere)."""
    drop = set() if has_classes(table) else {"CPU class", "GPU class"}
    drop |= set() if has_compiled(table) else {"step"}
    return [c for c in columns if c not in drop]


def _rows(table: pd.DataFrame, columns: list[str]) -> list[list[str]]:
    return [[_COLUMNS[c](r) for c in columns] for r in table.itertuples()]


def headline_section(table: pd.DataFrame) -> str:
    columns = _columns(table, HEADLINE)
    return "## Results\n\n" + md_table(columns, _rows(table, columns)) + "\n"


def details_section(table: pd.DataFrame) -> str:
    columns = _columns(table, DETAILS)
    return (
        "## Details\n\n"
        "The rest of each Results row, in the same order: data-wait shares, energy, samples and flags "
        "(How to read this explains each).\n\n" + md_table(columns, _rows(table, columns)) + "\n"
    )


def _aligned(header: list[str], rows: list[list[str]], left: int) -> str:
    """Plain-text table; the first `left` columns are left-aligned (text), the rest right-aligned."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i < left else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]).rstrip()


def terminal_table(table: pd.DataFrame) -> str:
    """The headline table as aligned plain text for a terminal, then each row's flags."""
    columns = _columns(table, HEADLINE)
    text = _aligned([_TERMINAL.get(c, c) for c in columns], _rows(table, columns), left=1)
    several = several_pairs(table)
    flagged = [
        f"  {r.model} bs{r.batch_size} {r.pipeline} {r.precision}"
        + (f" ({pair_label(r.cpu_class, r.gpu_class)})" if several else "")
        + f": {r.flags}"
        for r in table.itertuples()
        if r.flags
    ]
    if flagged:
        text += "\nflags:\n" + "\n".join(flagged)
    return text
