"""The fidelity rows of a report: bench/fidelity.py's JSON files in a results directory, validated.

    from orchestrator.analysis.fidelity import read_fidelity
    found = read_fidelity([Path("results/s1")])   # [(file, rows)]; ResultsError if a file is malformed

The one module of orchestrator.analysis that reads files: the rows are measurements the report shows
beside its own, and reading them first lets a malformed file fail before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.results.files import ResultsError

FIDELITY_GLOB = "fidelity*.json"  # written by bench/fidelity.py into a results directory
# the fidelity bar: benchctl's steady-state images/s over a plain loop's must lie in it (the one definition:
# bench/fidelity.py and bench/fidelity_pairs.py import it)
FIDELITY_BAR = (0.97, 1.03)
VERDICTS = ("yes", "NO", "unresolved")  # bench/fidelity_pairs.py's verdict; files without one give yes/NO


def _fidelity_rows(path: Path) -> list[dict]:
    """The rows of one bench/fidelity.py JSON file, validated; ResultsError naming the file if malformed.
    Plain json.loads: nothing is unpickled or executed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: not a readable fidelity JSON file ({exc}); fix or move it") from None
    if not isinstance(data, list):
        raise ResultsError(f"{path}: a fidelity file holds a JSON list of cells, found {type(data).__name__}")
    kinds = {
        "cell": (str,),
        "torch_threads": (int,),
        "data_workers": (int,),
        "benchctl_ips": (int, float),
        "plain_ips": (int, float),
        "ratio": (int, float),
        "within_bar": (bool,),
    }
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise ResultsError(f"{path}: entry {i} is {type(row).__name__}, not an object")
        for key, types in kinds.items():
            value = row.get(key)
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise ResultsError(
                    f"{path}: entry {i} ({row.get('cell', '?')}): `{key}` missing or not "
                    f"{'/'.join(t.__name__ for t in types)} (got {value!r})"
                )
        if "verdict" in row and row["verdict"] not in VERDICTS:
            raise ResultsError(
                f"{path}: entry {i} ({row['cell']}): `verdict` must be one of {', '.join(VERDICTS)} "
                f"(got {row['verdict']!r})"
            )
    return data


def read_fidelity(results_dirs: list[Path]) -> list[tuple[Path, list[dict]]]:
    """(file, rows) for every fidelity*.json in the results dirs, each file once, in a stable order."""
    files = dict.fromkeys(f.resolve() for d in results_dirs for f in sorted(Path(d).glob(FIDELITY_GLOB)))
    return [(f, _fidelity_rows(f)) for f in files if f.is_file()]
