"""How should a small CPU cell split its cores between torch threads and DataLoader workers? Paired rounds.

    python bench/cpu_split.py --rounds 4 --out reports/cpu-split

Each round trains the same loader-pipeline CPU cell once per split (threads + workers), each in a fresh
Python process (`trainables.train.run_trial`, no Ray) at the priority a sweep's trial takes
(trainables/priority.py; `--plain-priority`: the inherited one), in the same order every round (A B C ...),
so a drift of the host's speed lands on every side alike. The split is forced in the child, whatever
rule trainables/config.py applies today, so the sides stay comparable after that rule changes.
A side's number is the median images/s of its non-warm-up epochs. Also recorded: /proc/loadavg before
and after and each epoch's host_busy_pct (the host may be shared). Writes OUT/rounds.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The child: force the split, train, print the rows as JSON (one line).
_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from trainables.config import TrialConfig
threads, workers = int(sys.argv[2]), int(sys.argv[3])
a = json.loads(sys.argv[4])
if a["favoured"]:  # as a sweep's trial process does (TRIAL_NICENESS as root), before torch starts threads
    from trainables.priority import favour_this_process
    favour_this_process()
TrialConfig.torch_threads = property(lambda self: threads)
TrialConfig.data_workers = property(lambda self: workers)
from trainables.train import run_trial
cfg = TrialConfig(model=a["model"], device="cpu", pipeline="loader", batch_size=a["batch_size"],
                  epochs=a["epochs"], max_steps=a["steps"], max_eval_steps=1, dataset="synthetic",
                  train_size=a["batch_size"] * a["steps"], test_size=512, cpus=threads + workers,
                  workers=workers)
r = run_trial(cfg)
print(json.dumps({"info": {k: r.info[k] for k in ("torch_threads", "data_workers", "cpu_model", "niceness")},
                  "epochs": r.epochs}))
"""


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def run_side(threads: int, workers: int, args: argparse.Namespace) -> dict:
    params = {"model": args.model, "batch_size": args.batch_size, "epochs": args.epochs, "steps": args.steps,
              "favoured": not args.plain_priority}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(ROOT), str(threads), str(workers), json.dumps(params)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    out = json.loads(done.stdout.strip().splitlines()[-1])
    steady = [e for e in out["epochs"] if not e["warmup"]]
    return {
        "split": f"{threads}+{workers}",
        "torch_threads": out["info"]["torch_threads"],
        "data_workers": out["info"]["data_workers"],
        "niceness": out["info"]["niceness"],
        "images_per_s": statistics.median(e["images_per_s"] for e in steady),
        "epochs_images_per_s": [round(e["images_per_s"], 1) for e in steady],
        "data_share": [round(e["data_s"] / e["epoch_s"], 3) for e in steady],
        "host_busy_pct": [round(e.get("host_busy_pct") or 0, 1) for e in steady],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--model", default="simple_cnn")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=25, help="steps per epoch (max_steps)")
    parser.add_argument("--epochs", type=int, default=3, help="epoch 1 is warm-up and left out")
    parser.add_argument("--splits", default="2+0,1+1,1+2", help="threads+workers, comma list")
    parser.add_argument(
        "--plain-priority",
        action="store_true",
        help="train at the inherited niceness (default: a sweep trial's)",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    splits = [tuple(int(x) for x in s.split("+")) for s in args.splits.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    rounds, before = [], loadavg()
    for k in range(args.rounds):
        sides = [run_side(t, w, args) for t, w in splits]
        rounds.append({"round": k, "sides": sides, "loadavg": loadavg()})
        line = ", ".join(f"{s['split']} {s['images_per_s']:.0f} img/s" for s in sides)
        print(f"round {k}: {line}  (load {loadavg()})", flush=True)
    first = splits[0]
    summary = {
        "cell": f"{args.model}/cpu/bs{args.batch_size}/loader/fp32",
        "steps_x_epochs": f"{args.steps} x {args.epochs}",
        "median_images_per_s": {
            f"{t}+{w}": statistics.median(r["sides"][i]["images_per_s"] for r in rounds)
            for i, (t, w) in enumerate(splits)
        },
        "median_ratio_vs_first": {
            f"{t}+{w}": statistics.median(
                r["sides"][0]["images_per_s"] / r["sides"][i]["images_per_s"] for r in rounds
            )
            for i, (t, w) in enumerate(splits)
            if i
        },
        "first": f"{first[0]}+{first[1]}",
        "loadavg_before": before,
        "loadavg_after": loadavg(),
    }
    (args.out / "rounds.json").write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
