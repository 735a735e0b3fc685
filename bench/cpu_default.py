"""Is a CPU cell on all N cores (the default) slower than on N-1 (the old default)? Paired rounds.

    python bench/cpu_default.py --rounds 6 --out reports/cpu-default

Each round runs the same CPU cell twice through real `benchctl sweep` runs, first with
--cpus-per-trial N (A, this machine's cores), then with N-1 (B), so A and B alternate in time
(A B A B ...) and a drift of the host's speed lands on both sides of a round alike. A side's number
is the median images/s of its non-warm-up epochs; per round, ratio = A / B (> 1: all cores faster).
Also recorded: /proc/loadavg before and after, and each epoch's host_busy_pct (how busy all CPUs
were while it was timed), since the host may be shared. Writes OUT/rounds.json and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.results.reader import read_results  # noqa: E402


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def run_side(cpus: int, args: argparse.Namespace, work: Path, name: str) -> dict:
    cmd = [
        sys.executable, "-m", "orchestrator", "sweep", "--devices", "cpu", "--models", args.model,
        "--pipeline", "resident", "--batch-size", str(args.batch_size), "--dataset", "synthetic",
        "--epochs", str(args.epochs), "--max-steps", str(args.steps), "--max-eval-steps", "1",
        "--train-size", str(args.batch_size * args.steps), "--test-size", "256",
        "--cpus-per-trial", str(cpus), "--no-checkpoint", "--out", str(work), "--name", name,
    ]  # fmt: skip
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    epochs, trials = read_results(work / name)
    steady = epochs[epochs.epoch > 1]
    return {
        "cpus": cpus,
        "torch_threads": int(trials.torch_threads.iloc[0]),
        "niceness": int(trials.niceness.iloc[0]),
        "images_per_s": float(steady.images_per_s.median()),
        "epochs_images_per_s": [round(float(v), 1) for v in steady.images_per_s],
        "host_busy_pct": [round(float(v), 1) for v in steady.host_busy_pct],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--model", default="simple_cnn")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=30, help="steps per epoch (--max-steps)")
    parser.add_argument("--epochs", type=int, default=3, help="epoch 1 is warm-up and left out")
    parser.add_argument("--cores", type=int, default=os.cpu_count(), help="N (default: this machine's)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.cores < 2 or args.rounds < 1:
        parser.exit(2, "cpu_default.py: error: needs --cores >= 2 and --rounds >= 1\n")
    args.out.mkdir(parents=True, exist_ok=True)
    rounds, before = [], loadavg()
    with tempfile.TemporaryDirectory(prefix="cpu-default-") as tmp:
        for k in range(args.rounds):
            a = run_side(args.cores, args, Path(tmp), f"r{k}-all")
            b = run_side(args.cores - 1, args, Path(tmp), f"r{k}-but-one")
            ratio = a["images_per_s"] / b["images_per_s"]
            rounds.append({"round": k, "all": a, "but_one": b, "ratio": ratio})
            print(f"round {k}: all {a['images_per_s']:.0f} img/s, but one {b['images_per_s']:.0f} img/s, "
                  f"ratio {rounds[-1]['ratio']:.3f}  (load {loadavg()})", flush=True)  # fmt: skip
    ratios = [r["ratio"] for r in rounds]
    summary = {
        "cell": f"{args.model}/cpu/bs{args.batch_size}/resident/fp32",
        "steps_x_epochs": f"{args.steps} x {args.epochs}",
        "cores": args.cores,
        "median_all": statistics.median(r["all"]["images_per_s"] for r in rounds),
        "median_but_one": statistics.median(r["but_one"]["images_per_s"] for r in rounds),
        "median_ratio": statistics.median(ratios),
        "min_ratio": min(ratios),
        "max_ratio": max(ratios),
        "rounds_all_faster": sum(r > 1 for r in ratios),
        "loadavg_before": before,
        "loadavg_after": loadavg(),
    }
    (args.out / "rounds.json").write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
