"""The speedup table rendered for people: a headline table (the answer) and a details table (everything
else); report.terminal prints the headline's columns as plain text.

    from orchestrator.report import tables
    print(tables.headline_section(model))     # model: report.model.build_model(...)
    print(tables.details_section(model))

The report used to open with one ~19-column table that scrolled sideways; the headline keeps what answers
"how much faster, and at what accuracy", the rest moves to Details. Rows of the two tables are in the
same order, so a headline row's details are in the same position.
"""

from __future__ import annotations

from orchestrator.analysis.pairing import class_label
from orchestrator.analysis.speedups import accuracy_comparable
from orchestrator.plan.axes import CONFIG_AXES, Axis
from orchestrator.report.formats import (
    DASH,
    axis_value,
    fed,
    fmt_params,
    fmt_pct,
    fmt_seconds,
    fmt_seconds_ci,
    fmt_speedup,
    fmt_speedup_ci,
    fmt_util,
)
from orchestrator.report.model import ReportModel
from orchestrator.report.sections import md_table


def _acc(acc, capped, other_capped, other_n) -> str:
    """A side's accuracy; "31.0% (capped)" when it came from capped work beside an uncapped, measured
    other side: the two numbers are not comparable, and a bare pair would read as a device gap."""
    text = fmt_pct(acc)
    apart = other_n and not accuracy_comparable(capped, other_capped)
    return f"{text} (capped)" if capped and apart and text != DASH else text


def _epoch(r, side: str, other: str) -> str:
    """A side's epoch time; with its 95% interval when the other side is missing, so there is no speedup
    and the time itself is the result (a CPU-only sweep)."""
    x = getattr(r, f"{side}_epoch_s")
    if getattr(r, f"{other}_n"):
        return fmt_seconds(x)
    low, high = (getattr(r, f"{side}_epoch_s_{end}", None) for end in ("low", "high"))
    return fmt_seconds_ci(x, low, high)


def _axis(axis: Axis):
    return lambda r: axis.word(axis_value(r, axis))


# the configuration's columns: one per axis (axes.CONFIG_AXES; "batch", "pipeline", "precision", "step")
CONFIG_COLUMNS = {a.column: _axis(a) for a in CONFIG_AXES}
# Every column a results table can show: header -> how one speedup-table row renders in it.
_COLUMNS = {
    "model": lambda r: r.model,
    "params": lambda r: fmt_params(r.params),
    **CONFIG_COLUMNS,
    "CPU class": lambda r: class_label(r.cpu_class) if r.cpu_n else DASH,
    "GPU class": lambda r: class_label(r.gpu_class) if r.gpu_n else DASH,
    "CPU fed by": lambda r: fed(r, "cpu"),
    "GPU fed by": lambda r: fed(r, "gpu"),
    "CPU epoch s": lambda r: _epoch(r, "cpu", "gpu"),
    "GPU epoch s": lambda r: _epoch(r, "gpu", "cpu"),
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
VARIANT = ["CPU fed by", "GPU fed by"]  # the workers and CPUs of each side's cell (variants.fed_label)
_KEY = ["model", *CONFIG_COLUMNS, "CPU class", "GPU class", *VARIANT]  # names a Details row
HEADLINE = ["model", "params", *CONFIG_COLUMNS, "CPU class", "GPU class", *VARIANT]
HEADLINE += ["CPU epoch s"]
HEADLINE += ["GPU epoch s", "speedup", "CPU acc", "GPU acc"]
DETAILS = _KEY + [c for c in _COLUMNS if c not in HEADLINE]


# the columns of a GPU side or a speedup: left out of a CPU-only report (model.cpu_only)
GPU_COLUMNS = {c for c in _COLUMNS if "GPU" in c or "speedup" in c}


def columns(model: ReportModel, names: list[str]) -> list[str]:
    """`names` without "CPU class" / "GPU class" unless the table names a class (has_classes), without an
    axis's column (e.g. "step") where every row has its unmarked value (eager alone is the paper's
    setting, said nowhere: model.unmarked_axes), and without GPU_COLUMNS when no row has a GPU side
    (cpu_only), and without VARIANT unless a configuration was fed several ways (several_variants)."""
    drop = set() if model.has_classes else {"CPU class", "GPU class"}
    drop |= set() if model.several_variants else set(VARIANT)
    drop |= {a.column for a in CONFIG_AXES if a.trial_field in model.unmarked_axes}
    drop |= GPU_COLUMNS if model.cpu_only else set()
    return [c for c in names if c not in drop]


def rows(model: ReportModel, names: list[str]) -> list[list[str]]:
    """Each speedup-table row rendered in the columns `names`."""
    return [[_COLUMNS[c](r) for c in names] for r in model.table.itertuples()]


def headline_section(model: ReportModel) -> str:
    shown = columns(model, HEADLINE)
    return "## Results\n\n" + md_table(shown, rows(model, shown)) + "\n"


def details_section(model: ReportModel) -> str:
    shown = columns(model, DETAILS)
    return (
        "## Details\n\n"
        "The rest of each Results row, in the same order: data-wait shares, energy, samples and flags "
        "(How to read this explains each).\n\n" + md_table(shown, rows(model, shown)) + "\n"
    )
