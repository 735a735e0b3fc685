"""GPU trials side by side on a node of several GPUs: does each get its own GPU and cores, and keep its speed?

    bash reports/h200/h200.sh x2 "$OUT"      # on nvidia-h200-x2: the sweeps below, then this script
    python reports/h200/multi_gpu.py ALONE1 TOGETHER ALONE2 --out multi-gpu.json

ALONE1 and ALONE2 are the same GPU sweep run with Ray shown one GPU (`CUDA_VISIBLE_DEVICES=0`), so its
cells run one at a time; TOGETHER is that sweep with every GPU, so cells run concurrently, one GPU each.
Running the lone sweep before and after brackets the host's drift (the H200 VM moved 4-11% between two
identical runs minutes apart). All use `--placement partitioned`, so every trial pins its own cores and
records them (`cpu_affinity`). Per pair of trials of TOGETHER that shared a host at some moment (as the
sweep recorded in `overlapped_with`):

    own GPU      different gpu_uuid, and each saw exactly one GPU (gpus_visible == 1)
    own cores    their cpu_affinity core sets are disjoint (unknown when either ran unpinned)

Per cell, from steady (non-warm-up) epochs:

    ratio        median(together images/s) / median(alone images/s, ALONE1 and ALONE2 pooled)
    bar          ratio >= 0.95, judged only for cells whose trial really ran beside another one
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the project root

import pandas as pd  # noqa: E402

from orchestrator.results import read_results  # noqa: E402
from trainables.affinity import parse_cores  # noqa: E402

BAR = 0.95  # a concurrent GPU trial keeps at least this share of its lone images/s


def _cores(text) -> set[int] | None:
    """A trial's recorded cpu_affinity as a core set; None when it ran unpinned."""
    return parse_cores(text) if isinstance(text, str) and text.strip() else None


def concurrent_pairs(trials: pd.DataFrame) -> list[dict]:
    """One row per pair of successful trials that shared a host at some moment (the sweep records each
    attempt's `overlapped_with`, tune_glue.ResultsWriter.overlapped), with the checks."""
    ok = trials[trials.status == "ok"].set_index("trial", drop=False)
    named = zip(ok.trial, ok.overlapped_with, strict=True)
    together = {
        tuple(sorted((t, o))) for t, others in named if isinstance(others, str) for o in others.split(",")
    }
    rows = []
    for a_id, b_id in sorted(together):
        if a_id not in ok.index or b_id not in ok.index:
            continue  # the other attempt failed: it was not a trial running to completion beside this one
        a, b = ok.loc[a_id], ok.loc[b_id]
        cores_a, cores_b = _cores(a.cpu_affinity), _cores(b.cpu_affinity)
        one_gpu_each = a.gpus_visible == 1 and b.gpus_visible == 1
        rows.append(
            {
                "trials": [a.trial, b.trial],
                "gpu_uuid": [a.gpu_uuid, b.gpu_uuid],
                "nvml_index": [_int(a.nvml_index), _int(b.nvml_index)],
                "cuda_visible_devices": [a.cuda_visible_devices, b.cuda_visible_devices],
                "cpu_affinity": [a.cpu_affinity, b.cpu_affinity],
                "own_gpu": bool(one_gpu_each and isinstance(a.gpu_uuid, str) and a.gpu_uuid != b.gpu_uuid),
                "own_cores": None if cores_a is None or cores_b is None else not (cores_a & cores_b),
            }
        )
    return rows


def _int(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _steady_ips(epochs: pd.DataFrame) -> dict[str, list[float]]:
    steady = epochs[~epochs.warmup.astype(bool)]
    return {cell: [float(x) for x in g.images_per_s] for cell, g in steady.groupby("cell")}


def speed_rows(alone: list[pd.DataFrame], together: pd.DataFrame, paired_cells: set[str]) -> list[dict]:
    """Per cell: `ratio = median(together ips) / median(alone ips)`; `ok` is None for a cell that never
    ran beside another trial (its ratio says nothing about sharing the node)."""
    lone: dict[str, list[float]] = {}
    for epochs in alone:
        for cell, ips in _steady_ips(epochs).items():
            lone.setdefault(cell, []).extend(ips)
    rows = []
    for cell, ips in sorted(_steady_ips(together).items()):
        if not lone.get(cell) or not ips:
            continue
        ratio = statistics.median(ips) / statistics.median(lone[cell])
        concurrent = cell in paired_cells
        rows.append(
            {
                "cell": cell,
                "alone_ips": statistics.median(lone[cell]),
                "together_ips": statistics.median(ips),
                "ratio": ratio,
                "ran_beside_another": concurrent,
                "ok": (ratio >= BAR) if concurrent else None,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="concurrent GPU trials: own GPU, own cores, speed kept")
    p.add_argument("alone1", type=Path)
    p.add_argument("together", type=Path)
    p.add_argument("alone2", type=Path, nargs="?")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    alone = [read_results(d)[0] for d in (args.alone1, args.alone2) if d is not None]
    together_epochs, together_trials = read_results(args.together)
    pairs = concurrent_pairs(together_trials)
    ok = together_trials[together_trials.status == "ok"]
    cell_of = dict(zip(ok.trial, ok.cell, strict=True))
    cells = {cell_of[t] for r in pairs for t in r["trials"]}
    speed = speed_rows(alone, together_epochs, cells)
    for r in pairs:
        print(
            f"together: {r['trials'][0]} + {r['trials'][1]}: GPUs {r['gpu_uuid']} (nvml {r['nvml_index']}), "
            f"cores {r['cpu_affinity']} -> own GPU {r['own_gpu']}, own cores {r['own_cores']}"
        )
    for r in speed:
        print(
            f"{r['cell']}: alone {r['alone_ips']:,.0f} img/s, together {r['together_ips']:,.0f} img/s, "
            f"ratio {r['ratio']:.3f}" + ("" if r["ran_beside_another"] else " (never ran beside another)")
        )
    if not pairs:
        print("no two trials of the together sweep overlapped in time: nothing ran concurrently")
    args.out.write_text(
        json.dumps({"bar": BAR, "pairs": pairs, "cells": speed}, indent=2, default=str) + "\n"
    )


if __name__ == "__main__":
    main()
