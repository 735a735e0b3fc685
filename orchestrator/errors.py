"""The one error type the CLI turns into a one-line message and an exit code (no traceback)."""

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
