"""How `benchctl report` scales with the number of epoch rows: a benchmark, not a test.

    python bench/report_scale.py                        # 25k, 50k, 100k rows; writes reports/scale/
    python bench/report_scale.py --repeats 5 --code /tmp/benchctl-base --label before --no-readme
    python bench/report_scale.py --repeats 20 --layout compacted --runs 3   # best of 3: the issue's bar

It writes result directories of the grid 3 models x 2 devices x 10 batch sizes x 2 pipelines x
2 precisions x R repeats, 21 epochs per trial (R = 5, 10, 20: 25,200, 50,400 and 100,800 epoch rows;
4,800 trial files + 4,800 epoch files at R = 20), through the real write path (results.write_rows,
so every file carries the schema's columns and metadata), with seeded, plausible numbers and trial rows
filled the way ResultsWriter fills them. Then it runs `python -m orchestrator report DIR --format md,html`
in a fresh process per size and records its wall time and peak RSS (getrusage of a wrapper's only child).
Each directory is then left the way a finished `benchctl sweep` leaves it: compacted by results.compact
(what the sweep's end calls: compact/epochs.parquet and compact/trials.parquet beside the per-trial files),
and the report is timed twice, `compacted` and `files` (compact/ moved aside for the run: every per-trial
file read, as for a sweep written before compaction existed, or one with `--layout files` only).
`--code DIR` times another checkout of benchctl (e.g. `git archive` of an older commit) on the same
directories, for a before/after. `--runs N` times each report N times in a row (a shared machine is
noisy: the best of N is the one to compare). Results are appended to reports/scale/results.json and
summarised in reports/scale/README.md, each with the 1/5/15-minute load average read before it. Last, it
prints one line per code, layout and size timed: the best wall of the N runs (with its CPU s and load),
the peak RSS, every wall, and for the 100,800-row compacted sweep whether issue 33's bar is met.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # runnable from a bare checkout

import numpy as np  # noqa: E402

from orchestrator.results.compact import COMPACT_DIR, compact  # noqa: E402
from orchestrator.results.files import file_key, write_json_atomic, write_rows  # noqa: E402
from trainables.config import TrialConfig  # noqa: E402

MODELS = {"simple_cnn": (545_098, 1.0), "resnet18": (11_173_962, 4.0), "resnet50": (23_520_842, 11.0)}
DEVICES = ("cpu", "gpu")
BATCH_SIZES = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
PIPELINES = ("loader", "resident")
PRECISIONS = ("fp32", "amp")
EPOCHS = 21
TRAIN, TEST = 50_000, 10_000
SIZES = (5, 10, 20)  # repeats: 25,200 / 50,400 / 100,800 epoch rows
OUT = ROOT / "reports" / "scale"
# the child runs one command and reports its own child's peak RSS: RUSAGE_CHILDREN of a process that
# waited for exactly one child is that child's
_WRAPPER = (
    "import json,resource,subprocess,sys,time;t=time.perf_counter();rc=subprocess.call(sys.argv[1:],"
    "stdout=subprocess.DEVNULL);w=time.perf_counter()-t;r=resource.getrusage(resource.RUSAGE_CHILDREN);"
    "print(json.dumps({'rc':rc,'wall_s':w,'max_rss_mb':r.ru_maxrss/1024,'cpu_s':r.ru_utime+r.ru_stime}))"
)


def epoch_seconds(model: str, device: str, batch: int, pipeline: str, precision: str) -> float:
    """A plausible full-epoch time: GPU 10-40x faster than CPU, small batches and the loader slower."""
    base = MODELS[model][1] * (1.0 if pipeline == "resident" else 1.4) * (0.7 if precision == "amp" else 1)
    base *= 1 + 64 / batch
    return base * (1.0 if device == "gpu" else 12 + 2.5 * MODELS[model][1])


def trial_files(results: Path, sweep: str, cell: tuple, repeat: int, rng: np.random.Generator) -> int:
    model, device, batch, pipeline, precision = cell
    params = MODELS[model][0]
    cfg = TrialConfig(model=model, device=device, batch_size=batch, pipeline=pipeline, precision=precision,
                      seed=repeat, repeat=repeat, epochs=EPOCHS, dataset="synthetic", cpus=8)  # fmt: skip
    trial = cfg.trial_id
    hw_class = "gpu:H200" if device == "gpu" else "cpu:Xeon-Platinum-8480+-16c"
    ident = dict(
        sweep=sweep, cell=trial.rsplit("/", 1)[0], trial=trial, attempt=1, model=model, params=params,
        device=device, device_name="NVIDIA H200" if device == "gpu" else "Intel Xeon Platinum 8480+",
        hw_class=hw_class, host="node1", batch_size=batch, pipeline=pipeline, precision=precision,
        dataset="synthetic", repeat=repeat, seed=repeat, cpus_allotted=8, torch_threads=6, data_workers=2,
    )  # fmt: skip
    mean = epoch_seconds(*cell)
    steps = math.ceil(TRAIN / batch)
    rows = []
    for epoch in range(1, EPOCHS + 1):
        s = mean * float(rng.lognormal(0, 0.04)) * (1.6 if epoch == 1 else 1.0)
        data = s * (0.35 if pipeline == "loader" and device == "gpu" else 0.05) * float(rng.uniform(0.8, 1.2))
        acc = min(0.9, 0.1 + 0.8 * (1 - math.exp(-epoch / 6))) + float(rng.normal(0, 0.005))
        rows.append(
            dict(
                ident,
                epoch=epoch,
                warmup=epoch == 1,
                restored=False,
                epoch_s=s,
                measured_s=s,
                data_s=data,
                compute_s=s - data - 0.01 * s,
                eval_s=s * 0.08,
                steps=steps,
                full_steps=steps,
                extrapolated=False,
                images=TRAIN,
                images_per_s=TRAIN / s,
                train_loss=2.3 * math.exp(-epoch / 8),
                test_acc=acc,
                eval_images=TEST,
                eval_partial=False,
                gpu_mem_peak_mb=900.0 + batch * 3 if device == "gpu" else None,
                gpu_energy_j=420 * s if device == "gpu" else None,
                gpu_util_pct=float(rng.uniform(40, 95)) if device == "gpu" else None,
                cpu_energy_j=180 * s,
                host_busy_pct=float(rng.uniform(20, 60)),
                host_steal_pct=float(rng.uniform(0, 0.5)),
                checkpoint_s=0.2,
                checkpoint_mb=params * 8 / 2**20,
            )  # fmt: skip
        )
    start = datetime(2026, 12, 1, tzinfo=UTC) + timedelta(minutes=repeat)
    key = file_key(trial, 1)
    write_rows(results, "epochs", key, rows)
    write_rows(
        results, "trials", key,
        [dict(
            ident, status="ok", error=None, epochs_planned=EPOCHS, epochs_done=EPOCHS, started_at=start,
            ended_at=start + timedelta(seconds=sum(r["epoch_s"] for r in rows)),
            cpu_model="Intel(R) Xeon(R) Platinum 8480+", cpu_cores=16,
            gpu_name="NVIDIA H200" if device == "gpu" else None, gpu_driver="565.57.01",
            cuda_runtime="12.4", cudnn=90100, python="3.11.9", torch="2.5.1", torchvision="0.20.1",
            ray="2.40.0", git_commit="0123abc", tune_trial_id=f"t{repeat:05d}", niceness=15, node_id="n" * 56,
            gpus_visible=1 if device == "gpu" else 0, cuda_visible_devices="0" if device == "gpu" else "",
            gpu_uuid="GPU-0000" if device == "gpu" else None, nvml_index=0 if device == "gpu" else None,
            placement="exclusive", cpu_share=8.0, cpu_affinity=None, overlapped_with=None,
            trial_process="child", restored_from_epoch=0, checkpoint=f"checkpoints/{key}",
            checkpoint_epoch=EPOCHS, data_cache="hit", data_s_load=0.4, energy_notes=None,
            config_json=json.dumps(asdict(cfg), default=str),
        )],
    )  # fmt: skip
    return len(rows)


def generate(results: Path, repeats: int) -> int:
    """A sweep directory of the grid with `repeats` repeats (kept when it already holds them all), compacted
    as the end of a sweep compacts it (results.compact)."""
    cells = list(itertools.product(MODELS, DEVICES, BATCH_SIZES, PIPELINES, PRECISIONS))
    done = results / ".complete"
    if done.is_file():
        if not (results / COMPACT_DIR).is_dir():
            compact(results)
        return int(done.read_text())
    rng = np.random.default_rng(repeats)
    spec = dict(name=results.name, models=list(MODELS), devices=list(DEVICES), batch_sizes=list(BATCH_SIZES),
                pipelines=list(PIPELINES), precisions=list(PRECISIONS), repeats=repeats, epochs=EPOCHS,
                dataset="synthetic", per_class=False)  # fmt: skip
    write_json_atomic({"spec": spec}, results / "spec.json")
    n = sum(trial_files(results, results.name, c, r, rng) for c in cells for r in range(repeats))
    compact(results)
    done.write_text(str(n))
    return n


def time_report(code: Path, results: Path, out: Path, layout: str) -> dict:
    """One report of `results` in a fresh process; layout `files` moves compact/ aside meanwhile."""
    if layout == "compacted":
        return _time_report(code, results, out)
    aside = results / f".{COMPACT_DIR}-aside"
    (results / COMPACT_DIR).rename(aside)
    try:
        return _time_report(code, results, out)
    finally:
        aside.rename(results / COMPACT_DIR)


def _time_report(code: Path, results: Path, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    cmd = [
        sys.executable,
        "-m",
        "orchestrator",
        "report",
        str(results),
        "--format",
        "md,html",
        "--out",
        str(out),
    ]
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], env=env, capture_output=True, text=True,
                          check=True, cwd=code)  # fmt: skip
    measured = json.loads(proc.stdout.strip().splitlines()[-1])
    if measured["rc"] != 0:
        raise SystemExit(f"report failed (exit {measured['rc']}) for {results} with {code}")
    return measured


def write_readme(records: list[dict]) -> None:
    lines = [
        "# `benchctl report` at scale",
        "",
        "Generated by `python bench/report_scale.py` (see its docstring): one sweep directory per size, the",
        f"grid {len(MODELS)} models x {len(DEVICES)} devices x {len(BATCH_SIZES)} batch sizes x "
        f"{len(PIPELINES)} pipelines x {len(PRECISIONS)} precisions x R repeats, {EPOCHS} epochs per trial,",
        "written with `results.write_rows`; each row is one `benchctl report DIR --format md,html` in a",
        "fresh process (wall time, and peak RSS from getrusage). `code` says which benchctl ran it.",
        "",
        "`layout`: `compacted`, the directory as a finished sweep leaves it (compact/, results.compact), or",
        "`files`, every per-trial file read (sweeps written before compaction; rows without it are these).",
        "",
        "| code | layout | repeats | epoch rows | files | wall s | peak RSS MB | CPU s | load | when | host"
        " |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['label']} | {r.get('layout', 'files')} | {r['repeats']} | {r['rows']:,} | "
            f"{r['files']:,} | {r['wall_s']:.1f} | {r['max_rss_mb']:.0f} | {r['cpu_s']:.1f} | "
            f"{r.get('load', '')} | {r['when']} | {r['host']} |"
        )
    readme = OUT / "README.md"
    old = readme.read_text().splitlines() if readme.is_file() else []
    # what follows the table (from "Raw numbers:" on) is written by hand: kept
    notes = next((old[i:] for i, line in enumerate(old) if line.startswith("Raw numbers:")), None)
    lines += ["", *(notes or ["Raw numbers: [results.json](results.json).", ""])]
    readme.write_text("\n".join(lines).rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, nargs="+", default=list(SIZES), help="sizes to time (repeats)")
    p.add_argument("--work", type=Path, default=Path("/tmp/benchctl-report-scale"), help="results go here")
    p.add_argument("--code", type=Path, default=ROOT, help="the benchctl checkout to time (PYTHONPATH)")
    p.add_argument("--label", default="this commit", help="how the README names --code")
    p.add_argument("--no-readme", action="store_true", help="only append to results.json")
    p.add_argument("--runs", type=int, default=1, help="time each report this many times (take the best)")
    p.add_argument(
        "--layout",
        choices=("both", "compacted", "files"),
        default="both",
        help="time the compacted directory, the per-trial files (compact/ moved aside), or both",
    )
    args = p.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    store = OUT / "results.json"
    records = json.loads(store.read_text()) if store.is_file() else []
    first = len(records)
    for repeats in args.repeats:
        results = args.work / f"r{repeats}"
        t = time.perf_counter()
        rows = generate(results, repeats)
        print(f"r{repeats}: {rows} epoch rows ready ({time.perf_counter() - t:.0f} s)", flush=True)
        files = sum(1 for kind in ("epochs", "trials") for _ in (results / kind).glob("*.parquet"))
        layouts = ("compacted", "files") if args.layout == "both" else (args.layout,)
        for layout in [lay for lay in layouts for _ in range(args.runs)]:
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])  # 1, 5, 15 min, before the run
            measured = time_report(args.code.resolve(), results, args.work / f"report-r{repeats}", layout)
            record = dict(label=args.label, layout=layout, repeats=repeats, rows=rows, files=files,
                          host=platform.node(), cpus=os.cpu_count(), load=load,
                          when=time.strftime("%Y-%m-%d %H:%M"), **measured)  # fmt: skip
            print(json.dumps(record), flush=True)
            records.append(record)
            store.write_text(json.dumps(records, indent=2) + "\n")
    if not args.no_readme:
        write_readme(records)
    print(summary(records[first:]))


# issue 33's bar for the report of the 100,800-row compacted sweep, on the 2-core machine
BAR_WALL_S, BAR_RSS_MB = 5.0, 500.0


def summary(records: list[dict]) -> str:
    """One line per (code, layout, size) of this run: the best wall of its runs with that run's CPU s and
    load, the highest peak RSS and every wall in order; for the 100,800-row compacted sweep, whether the
    best meets BAR_WALL_S and BAR_RSS_MB."""
    lines = []
    for key in dict.fromkeys((r["label"], r["layout"], r["repeats"]) for r in records):
        runs = [r for r in records if (r["label"], r["layout"], r["repeats"]) == key]
        best = min(runs, key=lambda r: r["wall_s"])
        rss = max(r["max_rss_mb"] for r in runs)
        line = (
            f"{key[0]} | {key[1]} | {runs[0]['rows']:,} rows | best of {len(runs)}: {best['wall_s']:.2f} s "
            f"wall, {best['cpu_s']:.2f} CPU s (load {best['load']}) | peak RSS {rss:.0f} MB | walls "
            + ", ".join(f"{r['wall_s']:.2f}" for r in runs)
        )
        if key[1] == "compacted" and runs[0]["rows"] == 100_800:
            met = best["wall_s"] <= BAR_WALL_S and rss <= BAR_RSS_MB
            line += f" | bar <= {BAR_WALL_S:g} s, <= {BAR_RSS_MB:g} MB: {'met' if met else 'NOT met'}"
        lines.append(line)
    return "\n".join(lines)


if __name__ == "__main__":
    main()
