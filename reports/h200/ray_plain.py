"""bench/plain_loop.py inside a bare Ray task: Ray's worker environment without any of benchctl.

    python reports/h200/ray_plain.py --cpus 3 --gpus 1 -- --model simple_cnn --device gpu --pipeline loader \
        --workers 2 --threads 1 --epochs 4 --train-size 25000

Diagnoses fidelity gaps: if this matches benchctl and not the plain loop, the difference comes from
running in a Ray worker (its environment variables, threads, scheduling), not from benchctl's code.
Prints the plain loop's JSON lines, then one line with the task's environment that Ray set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the project root (this runbook helper lives in reports/h200)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cpus", type=float, required=True)
    p.add_argument("--gpus", type=float, default=0)
    p.add_argument("plain_args", nargs=argparse.REMAINDER)
    args = p.parse_args()
    plain_args = [a for a in args.plain_args if a != "--"]

    import ray

    os.environ.setdefault("RAY_worker_niceness", "0")  # as benchctl's local runs
    ray.init(address="local", include_dashboard=False, log_to_driver=False)

    @ray.remote
    def run(argv: list[str]) -> tuple[str, dict]:
        import contextlib
        import io
        import runpy

        sys.path.insert(0, str(ROOT))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            sys.argv = ["plain_loop.py", *argv]
            runpy.run_path(str(ROOT / "bench" / "plain_loop.py"), run_name="__main__")
        keys = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "OPENBLAS_NUM_THREADS")
        env = {k: os.environ.get(k) for k in keys}
        env["niceness"] = os.nice(0)
        env["affinity"] = len(os.sched_getaffinity(0))
        return buf.getvalue(), env

    out, env = ray.get(run.options(num_cpus=args.cpus, num_gpus=args.gpus).remote(plain_args))
    print(out, end="")
    print(json.dumps({"ray_task_env": env}))
    ray.shutdown()


if __name__ == "__main__":
    main()
