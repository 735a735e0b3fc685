"""Option text to values, and the one error a sweep's options raise.

    from orchestrator.plan.parse import SpecError, parse_axis
    parse_axis(AXES_BY_NAME["batch_size"], "128,512")   # (128, 512)

Every violation is a SpecError with one line naming the option, a bad value worded as not_allowed says
(`--epochs: 0 is not allowed; must be at least 1`).
"""

from __future__ import annotations

from enum import Enum

from orchestrator.errors import BenchctlError
from orchestrator.plan.axes import Axis, Kind


class SpecError(BenchctlError):
    """The sweep as asked for cannot run; exit code 2."""


def not_allowed(option: str, value, rule: str) -> str:
    """The one wording of a value an option does not take (TrialConfig's messages read the same):
    `--epochs: 0 is not allowed; must be at least 1`."""
    shown = value if isinstance(value, int) and not isinstance(value, bool) else repr(value)
    return f"{option}: {shown} is not allowed; must be {rule}"


def parse_csv(text: str, option: str) -> tuple[str, ...]:
    items = tuple(part.strip() for part in text.split(","))
    if not text.strip() or any(not item for item in items):
        raise SpecError(f"{option}: expected a comma-separated list such as 'a,b', got {text!r}")
    if len(set(items)) != len(items):
        raise SpecError(f"{option}: {text!r} names a value twice")
    return items


def parse_choices(text: str, enum: type[Enum], option: str) -> tuple:
    out = []
    for item in parse_csv(text, option):
        try:
            out.append(enum(item))
        except ValueError:
            choices = ", ".join(e.value for e in enum)
            raise SpecError(f"{option}: unknown value {item!r}; choose from {choices}") from None
    return tuple(out)


def parse_axis(axis: Axis, text: str) -> tuple:
    """The values an axis's option text gives (`--batch-size 128,512` -> (128, 512))."""
    if axis.kind is Kind.choices:
        return parse_choices(text, axis.choices, axis.option)
    if axis.kind is Kind.ints:
        return parse_ints(text, axis.option)
    return parse_csv(text, axis.option)


def parse_ints(text: str, option: str) -> tuple[int, ...]:
    out = []
    for item in parse_csv(text, option):
        try:
            value = int(item)
        except ValueError:
            raise SpecError(not_allowed(option, item, "an integer")) from None
        if value < 1:
            raise SpecError(not_allowed(option, value, "at least 1"))
        out.append(value)
    return tuple(out)
