"""`benchctl compact DIR...`: gather a finished sweep's files into one Parquet file per kind.

benchctl compact results/s1          # writes results/s1/compact/epochs.parquet and trials.parquet

`benchctl sweep` does this itself when a sweep (or a --resume) ends; this command is for sweeps written
before it did, or to rebuild a compacted file. The per-trial files stay where they are: the compacted
files are a cache that every reader (report, compare, ls, --resume) uses for the files that still match
its manifest (name, size, mtime_ns; the bytes' hash where a copy moved the mtime), reading any other file
on its own, so results are unchanged (orchestrator/results/compact.py, `compact`). Deleting
results/NAME/compact/ is safe while the per-trial files are there. A sweep stored compact (compact/ and no
per-trial files, as reports/ keeps its studies) has no other copy: it is read from compact/ whole and left
as it is here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import BenchctlError


def compact(
    results: Annotated[list[Path], typer.Argument(help="Results directories written by `benchctl sweep`.")],
) -> None:
    """Gather each sweep's per-trial files into compact/<kind>.parquet, so reports read them fast."""
    from orchestrator.results.compact import COMPACT_DIR
    from orchestrator.results.compact import compact as compact_dir
    from orchestrator.results.reader import check_results_dir

    for path in results:
        check_results_dir(path)  # one-line error, exit 2, for a missing, empty or parent folder
    for path in results:
        try:
            held = compact_dir(path)
        except OSError as exc:
            raise BenchctlError(f"{path}: cannot write {COMPACT_DIR}/ ({exc.strerror or exc})") from None
        typer.echo(
            f"{path / COMPACT_DIR}/: {held['epochs']} epochs and {held['trials']} trials files compacted"
        )
