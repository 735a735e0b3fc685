"""`benchctl ls [DIR]`: the sweeps under a results folder, one line each.

benchctl ls                 # the sweeps in results/
benchctl ls /data/runs      # name, date, trials done/planned, devices, models

A sweep folder is one holding spec.json. Only spec.json and the trials files' `trial` and `status`
columns are read (from compact/trials.parquet where the sweep was compacted), so listing a folder of
large sweeps stays quick.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import BenchctlError


def _date(folder: Path, doc: dict) -> str:
    """When the sweep started, from spec.json's provenance; else spec.json's mtime."""
    started = (doc.get("provenance") or {}).get("started_at") if isinstance(doc, dict) else None
    if isinstance(started, str) and started:
        return started.replace("T", " ").removesuffix("Z")[:16]
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime((folder / "spec.json").stat().st_mtime))


def _done(folder: Path) -> int | None:
    """Trial ids with a successful attempt in the trials files (None: a file cannot be read). Read as every
    reader reads them (results.read_kind: a compacted sweep's compact/trials.parquet for the files it
    holds unchanged), so a finished sweep of thousands of trials lists in a fraction of a second."""
    from orchestrator.results.files import ResultsError
    from orchestrator.results.reader import read_kind

    try:
        trials = read_kind(folder, "trials", ["trial", "status"])
    except ResultsError:  # `report` names the bad file
        return None
    return len(set(trials.trial[trials.status == "ok"]))


def _row(folder: Path) -> list[str]:
    from orchestrator.results.sweepstate import planned_trials

    try:
        doc = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
        spec = doc["spec"] if isinstance(doc["spec"], dict) else {}
    except (OSError, ValueError, KeyError, TypeError):
        doc, spec = {}, {}
    planned = planned_trials(spec) if spec else None
    done = _done(folder)
    return [
        folder.name,
        _date(folder, doc),
        f"{'?' if done is None else done}/{'?' if planned is None else len(planned)}",
        ",".join(map(str, spec.get("devices") or [])) or "?",
        ",".join(map(str, spec.get("models") or [])) or "?",
    ]


def ls(
    folder: Annotated[Path, typer.Argument(help="A folder of sweeps (`sweep --out`).")] = Path("results"),
) -> None:
    """List the sweeps in a results folder: name, date, trials done/planned, devices, models."""
    if not folder.exists():
        raise BenchctlError(f"{folder} does not exist; pass the folder sweeps were written to (--out)")
    if not folder.is_dir():
        raise BenchctlError(f"{folder} is a file, not a folder of sweeps")
    sweeps = sorted(p for p in folder.iterdir() if (p / "spec.json").is_file())
    if not sweeps:
        typer.echo(f"no sweeps in {folder} (no folder in it holds a spec.json)")
        return
    header = ["name", "date (UTC)", "done/planned", "devices", "models"]
    rows = [_row(p) for p in sweeps]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
