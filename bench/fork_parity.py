"""Does a forked (or prestarted) trial process time its epochs like a fresh one? Paired rounds, no Ray.

    python bench/fork_parity.py --rounds 6 --out reports/trial-start
    python bench/fork_parity.py --against prestarted --rounds 6 --out reports/trial-start/prestart

Each round runs the same cell (--device cpu or gpu) twice through trainables.launch.isolated.run_isolated,
with start_method=fresh (A) and --against (B: forkserver, one fork server for the whole run, or
prestarted, whose next spare imports under SCHED_IDLE beside B's epochs, as in a sweep, or fresh:
an A/A run, the noise floor of such pairs), A first in
even rounds and B first in odd ones (ABBA...), so a drift of the host's speed, or the second run of a
round finding the GPU's clocks up or the page cache warm, lands on both sides alike. A side's number
is the median epoch_s of its non-warm-up epochs; per round, ratio = B / A (> 1: B slower). For
prestarted, the rounds also say which of B's epochs ran beside the next spare's imports and the ratio
over B's other epochs (`mark_spare_overlap`): does a slower B come from that spare?
Writes OUT/parity.json and prints its summary. Measurements: reports/trial-start/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainables.config import TrialConfig  # noqa: E402
from trainables.launch.isolated import run_isolated  # noqa: E402


def side(cfg: TrialConfig, method: str) -> dict:
    ends, infos, asked_at = [], [], time.time()
    rows = run_isolated(cfg, lambda i, r: (ends.append(time.time()), infos.append(i)), start_method=method)
    steady = [(r["epoch_s"], end) for r, end in zip(rows, ends, strict=True) if not r["warmup"]]
    return {
        "asked_at": asked_at,  # a prestarted side's take: when the next spare starts
        "epoch_s": statistics.median(v for v, _ in steady),
        "epochs_s": [round(v, 4) for v, _ in steady],
        "epoch_ends": [round(end, 3) for _, end in steady],  # time.time() when each epoch's row came
        "child_imports_at": infos[0]["child_times"]["imports"],  # unclamped: a spare's own stamp
    }


def mark_spare_overlap(rounds: list[dict], other: str) -> None:
    """For prestarted B sides: the spare each one started at its take imported until the next B side's
    child_imports_at (that spare ran it). Marks the round's epochs, B's and A's, that ran while it
    imported (`overlapped`; A's too where A ran second and the imports lasted), and the ratio over the
    epoch indices where neither did (`ratio_clean`; None if there is none). The last B side's spare ran
    no trial, so the last round is not marked."""
    median = statistics.median
    for this, after in zip(rounds, rounds[1:], strict=False):
        spare = this[other]["asked_at"], after[other]["child_imports_at"]  # when it imported
        runs = this[other], this["fresh"]
        for run in runs:
            spans = zip(run["epochs_s"], run["epoch_ends"], strict=True)
            run["overlapped"] = [end > spare[0] and end - v < spare[1] for v, end in spans]
        pairs = zip(*(r["epochs_s"] for r in runs), *(r["overlapped"] for r in runs), strict=True)
        clean = [(bv, av) for bv, av, b_beside, a_beside in pairs if not (b_beside or a_beside)]
        this["ratio_clean"] = median(v for v, _ in clean) / median(v for _, v in clean) if clean else None


def write(args: argparse.Namespace, other: str, rounds: list[dict]) -> dict:
    """Writes parity.json (the rounds so far and their summary) to args.out; returns the summary."""
    ratios = [r["ratio"] for r in rounds]
    summary = {
        "cell": f"{args.model}/{args.device}/bs{args.batch_size}/resident/fp32",
        "steps_x_epochs": f"{args.steps} x {args.epochs}",
        "cpus": os.cpu_count(),
        "median_fresh_epoch_s": statistics.median(r["fresh"]["epoch_s"] for r in rounds),
        f"median_{other}_epoch_s": statistics.median(r[other]["epoch_s"] for r in rounds),
        "median_ratio": statistics.median(ratios),
        "min_ratio": min(ratios),
        "max_ratio": max(ratios),
    }
    clean = [r["ratio_clean"] for r in rounds if r.get("ratio_clean") is not None]
    if other == "prestarted":
        summary["epochs_overlapped"] = {
            k: sum(sum(r[k].get("overlapped", [])) for r in rounds) for k in (other, "fresh")
        }
        summary["median_ratio_clean"] = statistics.median(clean) if clean else None
        summary["rounds_clean"] = len(clean)
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = args.out / "parity.json.tmp"  # then a rename: a cut never leaves half a file
    tmp.write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=2) + "\n")
    tmp.replace(args.out / "parity.json")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--model", default="simple_cnn")
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=4, help="epoch 1 is warm-up and left out")
    parser.add_argument(
        "--against", default="forkserver", choices=("forkserver", "prestarted", "fresh"),
        help="B's start method; fresh gives an A/A run: the pairs' noise floor",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    cfg = TrialConfig(
        model=args.model, device=args.device, pipeline="resident", batch_size=args.batch_size,
        epochs=args.epochs,
        max_steps=args.steps, max_eval_steps=1, train_size=args.batch_size * args.steps, test_size=256,
        workers=0, cpus=os.cpu_count(),
    )  # fmt: skip
    rounds = []
    method = args.against
    other = method if method != "fresh" else "fresh_b"  # B's key in the JSON
    for k in range(args.rounds):
        if k % 2 == 0:
            a, b = side(cfg, "fresh"), side(cfg, method)
        else:
            b, a = side(cfg, method), side(cfg, "fresh")
        first = "fresh" if k % 2 == 0 else other
        ratio = b["epoch_s"] / a["epoch_s"]
        rounds.append({"round": k, "first": first, "fresh": a, other: b, "ratio": ratio})
        if method == "prestarted":
            mark_spare_overlap(rounds, other)
        print(f"round {k}: fresh {a['epoch_s']:.4f} s, {other} {b['epoch_s']:.4f} s, "
              f"ratio {rounds[-1]['ratio']:.3f}", flush=True)  # fmt: skip
        summary = write(args, other, rounds)  # after every round: a run cut by its guard keeps what finished
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
