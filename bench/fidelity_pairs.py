"""Fidelity from paired rounds: benchctl and the plain loop alternated in time (B P B P B P).

    bash reports/h200/h200.sh fidelity-pairs "$OUT"      # on the GPU machine: writes the rounds, then this
    python bench/fidelity_pairs.py R1 R2 R3 --out fidelity-pairs.json

Each round Rk is a results directory of one benchctl sweep followed at once by bench/fidelity.py's
plain-loop runs of the same cells (Rk/fidelity.json). On a machine whose speed drifts between runs
(the H200 VM moved 4-11% between two identical plain runs a minute apart), a ratio of two numbers
taken minutes apart measures the drift as much as benchctl. Pairing each benchctl run with the plain
run right after it and looking at the pairs' ratios separates the two:

    pair ratio        r_k = benchctl_ips_k / plain_ips_k                   (round k, one cell)
    cell ratio        median_k r_k                                          (the bar: 0.97 <= it <= 1.03)
    overhead          exp(mean(log r)) over every pair of every cell, with a 95% Student-t interval
                      exp(mean ± t(0.975, n-1) * sd(log r) / sqrt(n))

    cell interval     geometric mean of the cell's r_k with the same 95% Student-t interval
    noise floor       sd(log(plain_ips_{k+1} / plain_ips_k)) over consecutive rounds: how far a pair ratio
                      strays when both sides are the plain loop, i.e. the host alone
    verdict           "yes" when the cell ratio is inside the bar; "NO" when the cell interval lies wholly
                      outside it (a gap the pairs resolve); else "unresolved" (the pairs cannot tell a gap
                      from the host's noise: more or longer pairs are needed, not a fix to benchctl)

The overall interval answers "does orchestration cost anything?" with all pairs' evidence; the
per-cell medians answer the bar. Writes rows that `benchctl report` shows as a fidelity table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.analysis.fidelity import FIDELITY_BAR  # noqa: E402
from orchestrator.analysis.parity import t_quantile  # noqa: E402

LOW, HIGH = FIDELITY_BAR  # the fidelity bar, the report's own


def geometric_ci(ratios: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(geometric mean, low, high) of ratios: exp(mean(log r) ± t(1-(1-c)/2, n-1) * sd(log r) / sqrt(n)).
    With one ratio the interval is unknown: (r, nan, nan)."""
    logs = [math.log(r) for r in ratios]
    centre = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(centre), math.nan, math.nan
    half = t_quantile(1 - (1 - confidence) / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def noise_floor(plain_ips: list[float]) -> float:
    """sd(log(p_{k+1} / p_k)) over consecutive plain-loop rounds of one cell: the spread of a pair ratio whose
    two sides are both the plain loop. nan with fewer than three rounds (two log ratios)."""
    steps = [math.log(b / a) for a, b in itertools.pairwise(plain_ips)]
    return statistics.stdev(steps) if len(steps) >= 2 else math.nan


def verdict(ratio: float, low: float, high: float) -> str:
    """'yes' if the cell ratio (median of pairs) is inside the bar; 'NO' if the cell's interval [low, high]
    lies wholly outside the bar; otherwise 'unresolved' (includes an unknown interval from one pair)."""
    if LOW <= ratio <= HIGH:
        return "yes"
    return "NO" if high < LOW or low > HIGH else "unresolved"


def pair_rows(rounds: list[list[dict]]) -> list[dict]:
    """One row per cell from the rounds' fidelity.json rows; a cell missing from a round has fewer pairs."""
    cells: dict[str, list[dict]] = {}
    for rows in rounds:
        for row in rows:
            cells.setdefault(row["cell"], []).append(row)
    out = []
    for cell, rows in cells.items():
        ratios = [r["ratio"] for r in rows]
        ratio = statistics.median(ratios)
        _, low, high = geometric_ci(ratios)
        out.append(
            {
                "cell": cell,
                "torch_threads": rows[0]["torch_threads"],
                "data_workers": rows[0]["data_workers"],
                "benchctl_ips": statistics.median(r["benchctl_ips"] for r in rows),
                "plain_ips": statistics.median(r["plain_ips"] for r in rows),
                "ratio": ratio,
                "within_bar": LOW <= ratio <= HIGH,
                "verdict": verdict(ratio, low, high),
                "ratio_ci": [low, high],
                "noise_floor": noise_floor([r["plain_ips"] for r in rows]),
                "pairs": len(rows),
                "pair_ratios": ratios,
                "benchctl_round_ips": [r["benchctl_ips"] for r in rows],
                "plain_round_ips": [r["plain_ips"] for r in rows],
                # the host's steal per round and side (None before it was recorded): a pair ratio far
                # from 1 beside a high steal is the hypervisor's, not benchctl's
                "benchctl_round_steal_pct": [r.get("benchctl_steal_pct") for r in rows],
                "plain_round_steal_pct": [r.get("plain_steal_pct") for r in rows],
            }
        )
    return out


def _nulls(value):
    """value with every NaN float replaced by None, recursively (json.dumps would write invalid NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_nulls(v) for v in value]
    if isinstance(value, dict):
        return {k: _nulls(v) for k, v in value.items()}
    return value


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="paired-round fidelity: benchctl vs plain loop, run alternately")
    p.add_argument("rounds", type=Path, nargs="+", help="results directories, each with its fidelity.json")
    p.add_argument("--out", type=Path, required=True, help="JSON output (a fidelity*.json name)")
    args = p.parse_args(argv)
    found = [d / "fidelity.json" for d in args.rounds if (d / "fidelity.json").is_file()]
    if not found:
        raise SystemExit(f"fidelity_pairs: no fidelity.json in {', '.join(map(str, args.rounds))}")
    rows = pair_rows([json.loads(f.read_text()) for f in found])
    # NaN is not JSON: an unknown interval or noise floor is written as null
    args.out.write_text(json.dumps(_nulls(rows), indent=2) + "\n")
    print(
        "\n| cell | pairs | pair ratios | benchctl img/s | plain img/s | median ratio | 95% CI "
        f"| noise floor | within {LOW:g}-{HIGH:g} |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        low, high = r["ratio_ci"]
        print(
            f"| {r['cell']} | {r['pairs']} | {', '.join(f'{x:.3f}' for x in r['pair_ratios'])} | "
            f"{r['benchctl_ips']:.0f} | {r['plain_ips']:.0f} | {r['ratio']:.3f} | [{low:.3f}, {high:.3f}] | "
            f"{r['noise_floor']:.3f} | {r['verdict']} |"
        )
    every = [x for r in rows for x in r["pair_ratios"]]
    mean, low, high = geometric_ci(every)
    print(f"\nall {len(every)} pairs: geometric mean ratio {mean:.3f}, 95% CI [{low:.3f}, {high:.3f}]")


if __name__ == "__main__":
    main()
