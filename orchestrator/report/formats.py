"""Display formats for numbers in the report, the terminal table and the figures: "—" for a number that
was not measured, never a made-up value.

    from orchestrator.report.formats import fmt_seconds, fmt_speedup_ci
    fmt_seconds(5432.1)                  # "5430" (3 significant digits)
    fmt_speedup_ci(7.123, 6.8, 7.4)      # "7.12x [6.80–7.40]"

Import them from here (statistics stay in orchestrator.analysis.stats).
"""

from __future__ import annotations

import math

from orchestrator.analysis.stats import is_missing  # noqa: F401  (the renderers import it from here)
from orchestrator.analysis.variants import fed_label
from orchestrator.plan.axes import CONFIG_AXES, Axis

DASH = "—"  # shown for a missing number (e.g. a device not measured), never a made-up value


def fmt_seconds(x) -> str:
    """3 significant digits without scientific notation: 0.0123, 1.23, 12.3, 134, 5430."""
    if is_missing(x):
        return DASH
    x = float(x)
    if x == 0:
        return "0"
    digits = 2 - math.floor(math.log10(abs(x)))
    return f"{round(x, digits):.{max(digits, 0)}f}"


def fmt_speedup(x) -> str:
    return DASH if is_missing(x) else f"{float(x):.2f}x"


def fmt_speedup_ci(x, low, high) -> str:
    """Speedup with its interval, "7.12x [6.80–7.40]"; plain "7.12x" without one ("—" without a speedup)."""
    if is_missing(x) or is_missing(low) or is_missing(high):
        return fmt_speedup(x)
    return f"{float(x):.2f}x [{float(low):.2f}–{float(high):.2f}]"


def fmt_seconds_ci(x, low, high) -> str:
    """Seconds with an interval, "17.2 [16.9–17.8]"; plain fmt_seconds without one."""
    if is_missing(x) or is_missing(low) or is_missing(high):
        return fmt_seconds(x)
    return f"{fmt_seconds(x)} [{fmt_seconds(low)}–{fmt_seconds(high)}]"


def fmt_pct(x, decimals: int = 1) -> str:
    return DASH if is_missing(x) else f"{100 * float(x):.{decimals}f}%"


def fmt_util(x) -> str:
    """A utilization already in percent (NVML reports 0-100): 13.4 -> "13%"."""
    return DASH if is_missing(x) else f"{float(x):.0f}%"


def fmt_params(x) -> str:
    if is_missing(x):
        return DASH
    x = float(x)
    return f"{x / 1e6:.3g}M" if x >= 1e5 else f"{x / 1e3:.3g}k"


def axis_value(row, axis: Axis):
    """`row`'s value of `axis` (a dict, Series or itertuples row); the axis's `before` value where the row
    has none (a table built before the axis existed)."""
    field = axis.trial_field
    value = row.get(field, None) if hasattr(row, "get") else getattr(row, field, None)
    return axis.before if value is None or (value != value and axis.before is not None) else value


def config_tags(row, short: bool = False) -> list[str]:
    """The configuration's axes (axes.CONFIG_AXES) as labels say them: ["batch 128", "loader", "fp32"],
    plus "compiled" for --compile on (short: "bs128", ...); the unmarked values left out, and the axes
    the row does not hold (a throughput line's label leaves the batch size, its x axis, out)."""
    values = [(a, axis_value(row, a)) for a in CONFIG_AXES]
    return [t for a, v in values if v is not None and (t := a.tag(v, short))]


def config_label(row) -> str:
    """A configuration in words: "batch 128, loader, fp32", plus ", compiled" for --compile on, and any
    later axis's value."""
    return ", ".join(config_tags(row))


def fed(row, side: str) -> str:
    """What fed one side of a speedup-table row (itertuples): "8 workers, 9 CPUs" (variants.fed_label);
    DASH for a side not measured or with nothing recorded."""
    if not getattr(row, f"{side}_n", 0):
        return DASH
    workers, cpus = getattr(row, f"{side}_workers"), getattr(row, f"{side}_cpus")
    return fed_label(getattr(row, "pipeline", None), workers, cpus) or DASH


def variant_label(row) -> str:
    """Both sides' feeds of a speedup-table row: "CPU 2 workers, 16 CPUs; GPU 8 workers, 9 CPUs" (a side
    not measured left out): what tells the row apart where a configuration was fed several ways."""
    sides = [(s.upper(), fed(row, s)) for s in ("cpu", "gpu")]
    return "; ".join(f"{name} {text}" for name, text in sides if text != DASH)


def config_name(row) -> str:
    """A cell in the trial-name style: "resnet18/bs128/loader/fp32" (+ "/compiled")."""
    model = row["model"] if isinstance(row, dict) else row.model
    return "/".join([str(model), *config_tags(row, short=True)])
