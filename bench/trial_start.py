"""How long a tiny cell takes end to end, and its trial's start in phases, per --start-method.

    python bench/trial_start.py --cells 200 --methods fresh,forkserver --out reports/trial-start

Each method runs one real `benchctl sweep` of N tiny cells (simple_cnn, synthetic data, 1 epoch of
1 step, 1 eval step, resident pipeline, no checkpoints; the N cells are --repeats N of one cell), on
this machine's local Ray. Per cell seconds = the sweep's whole wall time (Ray start and shutdown
included) / N, and the same for Tune's fit alone (first trial start to last trial end, from the
rows' started_at/ended_at). The start phases are the medians of the trials rows' schema-7 columns
(start_s: Tune starting the trial to its first timed step; orchestrator/run/tune_glue.start_phases).
Writes OUT/<method>.json and OUT/summary.json and prints the summary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.results.reader import read_results  # noqa: E402

PHASES = ("start_s", "start_schedule_s", "start_process_s", "start_imports_s", "start_model_s")


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def run_method(method: str, cells: int, work: Path) -> dict:
    name = f"start-{method}"
    cmd = [
        sys.executable, "-m", "orchestrator", "sweep", "--devices", "cpu", "--models", "simple_cnn",
        "--pipeline", "resident", "--batch-size", "32", "--dataset", "synthetic", "--epochs", "1",
        "--max-steps", "1", "--max-eval-steps", "1", "--train-size", "32", "--test-size", "32",
        "--repeats", str(cells), "--no-checkpoint", "--start-method", method,
        "--out", str(work), "--name", name,
    ]  # fmt: skip
    load_before = loadavg()
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    _, trials = read_results(work / name)
    ok = trials[trials.status == "ok"]
    fit = (ok.ended_at.max() - ok.started_at.min()).total_seconds()  # whole seconds: the column's unit
    return {
        "method": method,
        "cells": cells,
        "ok": len(ok),
        "wall_s": round(wall, 2),
        "per_cell_s": round(wall / cells, 3),
        "fit_per_cell_s": round(fit / cells, 3),
        "medians": {p: round(float(ok[p].median()), 3) for p in PHASES},
        "p90": {p: round(float(ok[p].quantile(0.9)), 3) for p in PHASES},
        "first_trial": {p: round(float(ok.sort_values("started_at")[p].iloc[0]), 3) for p in PHASES},
        "start_method_column": sorted(set(ok.start_method.dropna())),
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        "per_trial_start_s": [round(float(v), 3) for v in ok.sort_values("started_at").start_s],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--methods", default="fresh,forkserver")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="trial-start-") as tmp:
        for method in args.methods.split(","):
            r = run_method(method, args.cells, Path(tmp))
            (args.out / f"{method}.json").write_text(json.dumps(r, indent=2) + "\n")
            results[method] = {k: v for k, v in r.items() if k != "per_trial_start_s"}
            print(json.dumps(results[method]), flush=True)
    summary = {"host_cpus": os.cpu_count(), "methods": results}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
