"""Fidelity: does orchestration distort the numbers? benchctl vs a plain PyTorch loop, per cell.

    python bench/fidelity.py results/ref                 # every cell of a finished sweep
    python bench/fidelity.py results/ref --device gpu --out fidelity.json --plain-repeats 2 --direct

For each cell of the sweep it runs bench/plain_loop.py with the cell's exact settings (model,
device, batch, pipeline, precision, compile, the torch threads and DataLoader workers the trial recorded,
epochs, step cap, data size, seed) in a fresh process on the same machine, then compares:

    ratio = median(benchctl images_per_s over non-warm-up epochs) / median(plain images_per_s, epochs >= 2)

benchctl's side pools the steady epochs of every repeat of the cell (each repeat is its own Ray
trial); `benchctl_spread` is the same spread measure over the per-repeat medians.

The bar: 0.97 <= ratio <= 1.03 for every cell. `--plain-repeats N` runs the plain loop N times per
cell, round-robin over the cells (so slow drift of the machine hits every cell alike), and pools
their steady epochs; `plain_spread` = (max - min) / median of the per-run medians shows how much the
yardstick itself moves between runs. `--direct` also runs benchctl's own trial loop
(trainables.train.run_trial) in a fresh process without Ray: `direct_ratio` = direct / plain
separates what the training loop costs from what Ray costs. Prints a markdown table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.analysis.fidelity import FIDELITY_BAR  # noqa: E402
from orchestrator.results.reader import read_results  # noqa: E402

LOW, HIGH = FIDELITY_BAR  # the fidelity bar (ratio of steady-state images/s), the report's own


def ratio(benchctl_ips: list[float], plain_ips: list[float]) -> float:
    """`median(benchctl) / median(plain)` of steady-state images/s samples."""
    return statistics.median(benchctl_ips) / statistics.median(plain_ips)


def _compile_of(row: dict) -> str:
    """The cell's training step: off (eager) in results written before the compile axis (schema < 6)."""
    value = row.get("compile")
    return value if isinstance(value, str) else "off"


def plain_run(row: dict, spec: dict, epochs: int | None = None) -> list[dict]:
    cmd = [
        sys.executable,
        str(Path(__file__).with_name("plain_loop.py")),
        "--model",
        row["model"],
        "--device",
        row["device"],
        "--batch-size",
        str(row["batch_size"]),
        "--pipeline",
        row["pipeline"],
        "--precision",
        row["precision"],
        "--compile",
        _compile_of(row),
        "--workers",
        str(row["data_workers"]),
        "--threads",
        str(row["torch_threads"]),
        "--epochs",
        str(epochs or spec["epochs"]),
        "--train-size",
        str(spec["train_size"]),
        "--seed",
        str(row["seed"]),
    ]
    if spec.get("max_steps"):
        cmd += ["--max-steps", str(spec["max_steps"])]
    if (
        isinstance(row.get("cpu_affinity"), str) and row["cpu_affinity"]
    ):  # the trial was pinned (--placement partitioned): pin the plain loop alike
        cmd += ["--cores", str(row["cpu_affinity"])]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [e for e in lines if "epoch" in e]  # a compiled loop first prints its compile_s line


_DIRECT = """
import json, sys
from trainables.config import TrialConfig
from trainables.train import run_trial
cfg = TrialConfig.from_dict(json.loads(sys.argv[1]))
def show(info, row):
    print(json.dumps({"epoch": row["epoch"], "images_per_s": row["images_per_s"]}), flush=True)
run_trial(cfg, show)
"""


def direct_run(row: dict, spec: dict, epochs: int | None = None) -> list[dict]:
    """benchctl's trial loop in a fresh process, no Ray: the same TrialConfig the sweep resolved."""
    cfg = {
        "model": row["model"],
        "device": row["device"],
        "batch_size": int(row["batch_size"]),
        "pipeline": row["pipeline"],
        "precision": row["precision"],
        "compile": _compile_of(row),
        "epochs": epochs or spec["epochs"],
        "workers": int(spec["workers"]),
        "train_size": int(spec["train_size"]),
        "test_size": int(spec["test_size"]),
        "max_steps": spec.get("max_steps"),
        "max_eval_steps": spec.get("max_eval_steps"),
        "seed": int(row["seed"]),
        "cpus": int(row["cpus_allotted"]),
    }
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", _DIRECT, json.dumps(cfg)], capture_output=True, text=True, check=True, cwd=root
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _steady(runs: list[list[dict]]) -> list[float]:
    return [e["images_per_s"] for run in runs for e in run if e["epoch"] >= 2]


def spread(runs: list[list[dict]]) -> float | None:
    """`(max - min) / median` of the per-run steady medians; None with fewer than two runs."""
    medians = [statistics.median(_steady([r])) for r in runs if _steady([r])]
    if len(medians) < 2:
        return None
    return (max(medians) - min(medians)) / statistics.median(medians)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="benchctl vs plain PyTorch loop, steady-state images/s per cell")
    p.add_argument("results", type=Path)
    p.add_argument("--device", choices=("cpu", "gpu"), default=None, help="only cells of this device")
    p.add_argument("--batch-size", type=int, default=None, help="only cells of this batch size")
    p.add_argument("--pipeline", choices=("loader", "resident"), default=None, help="only its cells")
    p.add_argument("--compile", choices=("off", "on"), default=None, help="only cells of this training step")
    p.add_argument("--epochs", type=int, default=None, help="plain-loop epochs (>= 2; default: the sweep's)")
    p.add_argument("--out", type=Path, default=None, help="JSON output (default RESULTS/fidelity.json)")
    p.add_argument("--plain-repeats", type=int, default=1, help="plain-loop runs per cell (round-robin)")
    p.add_argument("--direct", action="store_true", help="also time benchctl's trial loop without Ray")
    args = p.parse_args(argv)

    spec = json.loads((args.results / "spec.json").read_text())["spec"]
    epochs, trials = read_results(args.results)
    if "cpu_affinity" in trials:  # schema 2: where a pinned trial ran, for the plain loop to match
        epochs = epochs.merge(
            trials[["trial", "attempt", "cpu_affinity"]], on=["trial", "attempt"], how="left"
        )
    if args.device:
        epochs = epochs[epochs.device == args.device]
    if args.batch_size:
        epochs = epochs[epochs.batch_size == args.batch_size]
    if args.pipeline:
        epochs = epochs[epochs.pipeline == args.pipeline]
    if args.compile:
        epochs = epochs[epochs.apply(lambda r: _compile_of(r.to_dict()) == args.compile, axis=1)]
    out = args.out or args.results / "fidelity.json"
    cells = [(cell, g) for cell, g in epochs.groupby("cell", sort=False)]
    plain: dict[str, list[list[dict]]] = {cell: [] for cell, _ in cells}
    direct: dict[str, list[dict]] = {}
    rows: list[dict] = []
    for round_ in range(args.plain_repeats):
        for cell, group in cells:
            first = group.sort_values(["repeat", "epoch"]).iloc[0].to_dict()
            plain[cell].append(plain_run(first, spec, args.epochs))
            if args.direct and round_ == 0:
                direct[cell] = direct_run(first, spec, args.epochs)
            rows = [_row(c, g, plain[c], direct.get(c)) for c, g in cells if plain[c]]
            r = rows[[x["cell"] for x in rows].index(cell)]
            print(
                f"round {round_ + 1}: {cell}: benchctl {r['benchctl_ips']:.0f} img/s, "
                f"plain {r['plain_ips']:.0f} img/s, ratio {r['ratio']:.3f}",
                flush=True,
            )
            out.write_text(
                json.dumps(rows, indent=2) + "\n"
            )  # after every run: a cut-off call keeps its cells
    print(
        "\n| cell | threads | workers | benchctl img/s | plain img/s | plain runs | plain spread "
        f"| direct/plain | ratio | within {LOW:g}-{HIGH:g} |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        sp = "—" if r["plain_spread"] is None else f"{100 * r['plain_spread']:.1f}%"
        dr = "—" if r["direct_ratio"] is None else f"{r['direct_ratio']:.3f}"
        print(
            f"| {r['cell']} | {r['torch_threads']} | {r['data_workers']} | {r['benchctl_ips']:.0f} | "
            f"{r['plain_ips']:.0f} | {len(r['plain_runs'])} | {sp} | {dr} | {r['ratio']:.3f} | "
            f"{'yes' if r['within_bar'] else 'NO'} |"
        )


def _median_known(values) -> float | None:
    """Median of the values that are numbers (not None/NaN); None when there are none."""
    known = [float(v) for v in values if v is not None and v == v]
    return statistics.median(known) if known else None


def _row(cell: str, group, plain_runs: list[list[dict]], direct_epochs: list[dict] | None) -> dict:
    steady = group[~group.warmup.astype(bool)]
    first = group.sort_values(["repeat", "epoch"]).iloc[0].to_dict()  # repeat 0 sets the plain loop's seed
    per_repeat = [
        [{"epoch": 2, "images_per_s": float(x)} for x in g.images_per_s] for _, g in steady.groupby("repeat")
    ]
    plain_steady = _steady(plain_runs)
    r = ratio(list(steady.images_per_s), plain_steady)
    direct_steady = _steady([direct_epochs]) if direct_epochs else []
    return {
        "cell": cell,
        "torch_threads": int(first["torch_threads"]),
        "data_workers": int(first["data_workers"]),
        "pinned_cores": first.get("cpu_affinity") if isinstance(first.get("cpu_affinity"), str) else None,
        "benchctl_ips": statistics.median(steady.images_per_s),
        "plain_ips": statistics.median(plain_steady),
        "ratio": r,
        "within_bar": LOW <= r <= HIGH,
        "plain_spread": spread(plain_runs),
        "benchctl_repeats": len(per_repeat),
        "benchctl_spread": spread(per_repeat),
        "direct_ips": statistics.median(direct_steady) if direct_steady else None,
        "direct_ratio": statistics.median(direct_steady) / statistics.median(plain_steady)
        if direct_steady
        else None,
        # the host's steal (%) over the measured epochs: median per side, None where not recorded
        "benchctl_steal_pct": _median_known(steady["host_steal_pct"]) if "host_steal_pct" in steady else None,
        "plain_steal_pct": _median_known(
            e.get("host_steal_pct") for run in plain_runs for e in run if e["epoch"] >= 2
        ),
        "benchctl_epochs": [float(x) for x in steady.images_per_s],
        "plain_runs": plain_runs,
        "plain_epochs": plain_runs[0],  # kept for readers of the first format
        "direct_epochs": direct_epochs,
    }


if __name__ == "__main__":
    main()
