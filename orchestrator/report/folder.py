"""A report folder, written whole: every file goes into a staging folder beside it, which then takes
its place, so a reader sees the old report or the new one and no file of an earlier report stays behind.

    publish(Path("results/s1/report"), fill)    # fill(staging) writes report.md, figures/, ...

A folder that holds only report files (the default RESULTS/report, a new --out) is swapped whole: one
renameat2(RENAME_EXCHANGE) on Linux, else two renames (the folder is then missing for a moment). A
folder that also holds other files (a README and results/ beside the report, as reports/h200 has) keeps
them: there each of the report's own files (OWN) is replaced or, when this report has none, removed, and
figures/ is swapped whole; report.md goes last, so it never links to a figure that is not there.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from orchestrator.errors import BenchctlError

# everything a report writes into its folder, in the order a shared folder gets it (report.md last)
OWN = ("figures", "summary.json", "summary.csv", "epochs.csv", "report.html", "report.md")
_STAGING = (".new-", ".old-")  # the staging names' marks: `.NAME.new-XXXX` beside the folder


def _sibling(out_dir: Path, mark: str) -> Path:
    return out_dir.parent / f".{out_dir.name}{mark}{secrets.token_hex(4)}"


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where that is not available."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def is_report_folder(path: Path) -> bool:
    """Whether `path` holds nothing but a report's own files (and a staging folder a crash left)."""
    return all(p.name in OWN or p.name.startswith(".report-") for p in path.iterdir())


def publish(out_dir: Path, fill: Callable[[Path], None]) -> None:
    """Run fill(staging) on an empty staging folder beside `out_dir`, then make it out_dir's report (the
    module doc says how). Nothing changes in out_dir when fill raises; an out_dir that cannot be created
    is a BenchctlError naming --out."""
    out_dir = Path(out_dir)
    staging = _sibling(out_dir, ".new-")
    try:  # try the write itself: a pre-check with os.access would be wrong for root and on NFS
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()  # mkdir, not mkdtemp: the folder gets the umask's mode, as out_dir would
    except OSError as exc:
        raise BenchctlError(
            f"--out: cannot create {out_dir} ({exc.strerror}); choose a writable --out"
        ) from None
    try:
        fill(staging)
        if out_dir.exists() and not out_dir.is_dir():
            raise BenchctlError(f"--out: {out_dir} is a file; choose a folder")
        if not out_dir.exists():
            os.rename(staging, out_dir)
        elif is_report_folder(out_dir):
            _swap(staging, out_dir)
        else:
            _replace_own(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _swap(staging: Path, out_dir: Path) -> None:
    if _exchange(staging, out_dir):
        return  # staging now holds the old report, which the caller removes
    old = _sibling(out_dir, ".old-")
    os.rename(out_dir, old)
    try:
        os.rename(staging, out_dir)
    except BaseException:
        os.rename(old, out_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _replace_own(staging: Path, out_dir: Path) -> None:
    for name in OWN:
        new, here = staging / name, out_dir / name
        if new.is_dir():
            if here.is_dir() and _exchange(new, here):
                continue
            old = _sibling(here, ".old-")
            with contextlib.suppress(FileNotFoundError):
                os.rename(here, old)
            os.rename(new, here)
            shutil.rmtree(old, ignore_errors=True)
        elif new.exists():
            os.replace(new, here)
        elif here.is_dir():
            shutil.rmtree(here)
        else:
            here.unlink(missing_ok=True)  # this report has no such file: an earlier one's goes
