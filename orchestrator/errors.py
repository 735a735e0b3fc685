"""The one error type the CLI turns into a one-line message and an exit code (no traceback), and
short_path, which keeps a long path in such a line (or a live display) short."""

from __future__ import annotations

USAGE = 2  # bad input or configuration, found before anything ran
RUNTIME = 1  # something failed while running


class BenchctlError(Exception):
    """An error whose message is written for the user: what is wrong and what to do."""

    exit_code = USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


def short_path(path, width: int = 60) -> str:
    """`path` as a terminal line shows it: whole when it fits `width`, else its tail after "…/", in whole
    components (`…/name/trial/checkpoint_000003`); a component too long for that (Tune's trial folders)
    is cut short with "…". The last component is always kept whole."""
    text = str(path)
    if len(text) <= width:
        return text
    parts = text.rstrip("/").split("/")
    tail = parts[-1]
    for part in reversed(parts[:-1]):
        if len(f"…/{part}/{tail}") <= width:
            tail = f"{part}/{tail}"
            continue
        room = width - len(f"…/…/{tail}")
        if "/" not in tail and room >= 8:  # only the last one so far: show the start of its parent
            tail = f"{part[:room]}…/{tail}"
        break
    return f"…/{tail}"


def short_paths(text: str, width: int = 60) -> str:
    """`text` with every absolute or home-relative path in it longer than `width` shortened (short_path)."""
    import re

    return re.sub(r"(?<![\w.])~?/[^\s()'\";]+", lambda m: short_path(m.group(0), width), text)
