"""Fidelity: does orchestration distort the numbers? benchctl vs a plain PyTorch loop, per cell.

    python bench/fidelity.py results/ref                 # every cell of a finished sweep
    python bench/fidelity.py results/ref --device gpu --out fidelity.json

For each cell of the sweep it runs bench/plain_loop.py with the cell's exact settings (model,
device, batch, pipeline, precision, the torch threads and DataLoader workers the trial recorded,
epochs, step cap, data size, seed) in a fresh process on the same machine, then compares:

    ratio = median(benchctl images_per_s over non-warm-up epochs) / median(plain images_per_s, epochs >= 2)

The bar: 0.97 <= ratio <= 1.03 for every cell. Prints a markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.results import read_results  # noqa: E402

LOW, HIGH = 0.97, 1.03  # the fidelity bar (ratio of steady-state images/s)


def ratio(benchctl_ips: list[float], plain_ips: list[float]) -> float:
    """`median(benchctl) / median(plain)` of steady-state images/s samples."""
    return statistics.median(benchctl_ips) / statistics.median(plain_ips)


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
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="benchctl vs plain PyTorch loop, steady-state images/s per cell")
    p.add_argument("results", type=Path)
    p.add_argument("--device", choices=("cpu", "gpu"), default=None, help="only cells of this device")
    p.add_argument("--batch-size", type=int, default=None, help="only cells of this batch size")
    p.add_argument("--epochs", type=int, default=None, help="plain-loop epochs (>= 2; default: the sweep's)")
    p.add_argument("--out", type=Path, default=None, help="JSON output (default RESULTS/fidelity.json)")
    args = p.parse_args(argv)

    spec = json.loads((args.results / "spec.json").read_text())["spec"]
    epochs, _ = read_results(args.results)
    epochs = epochs[epochs.repeat == 0]
    if args.device:
        epochs = epochs[epochs.device == args.device]
    if args.batch_size:
        epochs = epochs[epochs.batch_size == args.batch_size]
    out = args.out or args.results / "fidelity.json"
    rows = []
    for cell, group in epochs.groupby("cell", sort=False):
        steady = group[~group.warmup.astype(bool)]
        first = group.iloc[0].to_dict()
        plain = plain_run(first, spec, args.epochs)
        plain_steady = [e["images_per_s"] for e in plain if e["epoch"] >= 2]
        r = ratio(list(steady.images_per_s), plain_steady)
        rows.append(
            {
                "cell": cell,
                "torch_threads": int(first["torch_threads"]),
                "data_workers": int(first["data_workers"]),
                "benchctl_ips": statistics.median(steady.images_per_s),
                "plain_ips": statistics.median(plain_steady),
                "ratio": r,
                "within_bar": LOW <= r <= HIGH,
                "plain_epochs": plain,
            }
        )
        b_ips, p_ips = rows[-1]["benchctl_ips"], rows[-1]["plain_ips"]
        print(
            f"{cell}: benchctl {b_ips:.0f} img/s, plain {p_ips:.0f} img/s, ratio {r:.3f}",
            flush=True,
        )
        out.write_text(json.dumps(rows, indent=2) + "\n")  # after every cell: a cut-off run keeps its cells
    print("\n| cell | threads | workers | benchctl img/s | plain img/s | ratio | within 0.97-1.03 |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['cell']} | {r['torch_threads']} | {r['data_workers']} | {r['benchctl_ips']:.0f} | "
            f"{r['plain_ips']:.0f} | {r['ratio']:.3f} | {'yes' if r['within_bar'] else 'NO'} |"
        )


if __name__ == "__main__":
    main()
