"""`benchctl cache list|clean`: the data sets this machine's trials built once and read back since.

benchctl cache list      # each entry: size, when it was built, the data set's key
benchctl cache clean     # remove them all; the next trial of each data set builds it again, once

The cache (trainables/datacache.py) is per machine, under $BENCHCTL_CACHE, else
$XDG_CACHE_HOME/benchctl/arrays, else ~/.cache/benchctl/arrays: these commands see the machine they
run on. Neither imports torch, so both answer at once.
"""

from __future__ import annotations

import time

import typer

from orchestrator.errors import BenchctlError
from trainables.datacache import cache_root, clean, entries

app = typer.Typer(no_args_is_help=True, help="List or clean this machine's cache of built data sets.")


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _key_text(key: dict) -> str:
    """The key as k=v pairs; a fingerprint cut to 12 characters (it is unique long before that)."""
    parts = []
    for name, value in key.items():
        shown = f"{value[:12]}…" if name == "fingerprint" and isinstance(value, str) else value
        parts.append(f"{name}={shown}")
    return " ".join(parts)


@app.command("list")
def list_entries() -> None:
    """Show each cached data set: its file, size, when it was built, and its key (what it was built from)."""
    root = cache_root()
    try:
        found = entries(root)
    except OSError as exc:
        raise BenchctlError(f"cannot read the data cache {root}: {exc.strerror or exc}") from None
    if not found:
        typer.echo(f"no cached data sets in {root}")
        return
    total = sum(e.size for e in found)
    typer.echo(f"{len(found)} cached data sets, {_mib(total)}, in {root}")
    for e in found:
        built = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.built))
        key = _key_text(e.key) if e.key is not None else f"unreadable ({e.problem}): a trial rebuilds it"
        typer.echo(f"{e.path.name}  {_mib(e.size):>11}  {built}  {key}")


@app.command("clean")
def clean_entries() -> None:
    """Remove every cached data set (and its lock file); trials then build each data set again, once."""
    root = cache_root()
    try:
        removed, freed = clean(root)
    except OSError as exc:
        why = f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc)
        raise BenchctlError(f"cannot clean the data cache {root}: {why}") from None
    typer.echo(f"removed {removed} cached data sets ({_mib(freed)}) from {root}")
