"""benchctl's driver against bare Ray Tune, on a simulated lab of N nodes on this one machine.

    python bench/scale_lab.py --nodes 16 --trials 1000 --json reports/scale-lab/n16-t1000.json

A lab is started with Ray's own `ray.cluster_utils.Cluster`, inside a private network namespace
(loopback only, so its ports clash with no other Ray on the machine): a head with no CPUs (the
drivers' node, as a lab's head that only coordinates), and N raylets: the 2nd of every 4 a "GPU
node" (3 CPUs, 3 GPUs in Ray's books; the sleeping trials never touch CUDA), the others CPU nodes of
4 and 2 CPUs in turn. Then, one after the other, each in its own driver process:

1. benchctl: `run_sweep` (orchestrator/run/sweep.py) of the sleep workload (`--models sleep:S`,
   trainables/sleep.py) with `--trial-process inline --workers 0 --cluster lab.yaml`: T trials (cpu and
   gpu cells, T/2 repeats each) of E epochs that sleep S seconds each. The whole sweep path runs:
   planning, Tune, the results writer, Parquet, the progress display (plain lines, to the log), the
   relay store actor, the compaction at the end.
2. bare Ray Tune: a plain `Tuner` (reuse_actors=True, Tune's default loggers) of the same sleeping
   function (run_sleep_trial) over the same T trial configs with the same resource requests, given to
   Tune the same way (a grid of indexes, each trial's config picked by its index).

Measured per half: wall time of the driver process (start to exit), its CPU seconds (getrusage, its
own threads; its children, e.g. benchctl's GCS probe, apart), its RSS when the first trial's rows are
on disk (polled here: an epochs file with E rows; for Tune a result.json with E lines) and at the end,
its peak RSS, rows expected vs written (benchctl: rows in epochs/*.parquet, duplicates by (trial,
attempt, epoch); Tune: result.json lines), and the seconds from the last trial's end (its worker's
clock, $BENCHCTL_SLEEP_MARKS) to the newest results file, and to the driver's exit. Load averages are
recorded before and after each half (the machine is shared). Ray is stopped in every case.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainables.sleep import MARKS_ENV  # noqa: E402

NODE_ID_LABEL = "ray.io/node-id"  # as orchestrator/lab/hardware.py: a label Ray puts on every node
POLL_S = 0.25


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def rss_mb(pid: int | str = "self", key: str = "VmRSS") -> float | None:
    """A process's resident memory (or its peak, key VmHWM) in MiB, from /proc; None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def lab_shape(nodes: int) -> list[dict]:
    """The N raylets: the 2nd of every 4 a GPU node (3 CPUs, 3 GPUs), the others CPU nodes of 4 and 2 CPUs
    in turn."""
    out: list[dict] = []
    for i in range(nodes):
        cpu_nodes = sum(1 for o in out if not o["num_gpus"])
        out.append(
            {"num_cpus": 3, "num_gpus": 3}
            if i % 4 == 1
            else {"num_cpus": 4 - 2 * (cpu_nodes % 2), "num_gpus": 0}
        )
    return out


def account(rows: list[tuple[str, int, int]], trials: int, epochs: int) -> dict:
    """Row accounting over (trial, attempt, epoch) keys: expected, written, duplicated, lost. A trial's
    epoch counts once whichever attempt wrote it; the same key written twice is a duplicate."""
    keys = [(t, a, e) for t, a, e in rows]
    per_epoch = {(t, e) for t, _, e in rows}
    expected = trials * epochs
    return {
        "rows_expected": expected,
        "rows_written": len(keys),
        "rows_duplicated": len(keys) - len(set(keys)),
        "rows_lost": expected - len(per_epoch),
    }


def marks(path: Path) -> list[float]:
    try:
        return [float(line.split()[1]) for line in path.read_text().splitlines() if line.strip()]
    except OSError:
        return []


# -- the two drivers, each run as `scale_lab.py --role X` in a process of its own -------------------------


def _usage() -> dict:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "cpu_s": me.ru_utime + me.ru_stime,
        "children_cpu_s": kids.ru_utime + kids.ru_stime,
        "rss_mb_end": rss_mb(),
        "rss_mb_peak": rss_mb(key="VmHWM"),
    }


def drive_benchctl(args) -> dict:
    from orchestrator.plan.spec import SweepSpec
    from orchestrator.run.sweep import run_sweep

    spec = SweepSpec(
        models=(f"sleep:{args.sleep}",), devices=("cpu", "gpu"), epochs=args.epochs, repeats=args.trials // 2,
        workers=0, trial_process="inline", cluster=args.work / "lab.yaml", name="benchctl", out=args.work,
    )  # fmt: skip

    def keep(plans, nodes, sizes):  # the same trials, with the same requests, for the bare Tune half
        dumped = [{"trial": p.trial.to_dict(), "resources": p.resources, "node_ids": list(p.node_ids)}
                  for p in plans]  # fmt: skip
        (args.work / "plans.json").write_text(json.dumps(dumped))

    if args.profile:  # the driver's main thread: Tune's loop and every callback (writer, progress)
        import cProfile

        with cProfile.Profile() as prof:
            outcome = run_sweep(spec, on_plans=keep)
        prof.dump_stats(args.profile)
    else:
        outcome = run_sweep(spec, on_plans=keep)
    return {"returned_at": time.time(), "trials": outcome.trials, "failed": outcome.failed, **_usage()}


def _sleeping(config: dict) -> None:
    from ray import tune

    from trainables.config import TrialConfig
    from trainables.sleep import run_sleep_trial

    run_sleep_trial(TrialConfig.from_dict(config["trial"]), lambda info, row: tune.report(row))


def drive_tune(args) -> dict:
    import ray
    from ray import tune

    plans = json.loads((args.work / "plans.json").read_text())
    ray.init(address=args.address, log_to_driver=False)

    def request(config: dict):
        plan = config["plan"]
        if not plan["node_ids"]:
            return plan["resources"]
        selector = {NODE_ID_LABEL: f"in({','.join(plan['node_ids'])})"}
        return tune.PlacementGroupFactory([plan["resources"]], bundle_label_selector=[selector])

    def pick(config: dict) -> dict:
        return copy.deepcopy(plans[config["index"]])

    # as benchctl's (orchestrator/plan/matrix.param_space): a grid of indexes, each trial's plan picked
    # by its index, so that both pay Tune the same cost per generated trial
    space = {"index": tune.grid_search(list(range(len(plans)))), "plan": tune.sample_from(pick)}
    trainable = tune.with_resources(lambda config: _sleeping(config["plan"]), resources=request)
    tuner = tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(reuse_actors=True),
        run_config=tune.RunConfig(name="tune", storage_path=str(args.work / "tune"), verbose=0),
    )
    grid = tuner.fit()
    returned = time.time()
    failed = sum(1 for r in grid if r.error is not None)
    ray.shutdown()
    return {"returned_at": returned, "trials": len(plans), "failed": failed, **_usage()}


# -- the parent: the lab, both halves, the accounting ------------------------------------------------------


def _first_benchctl_rows(work: Path, epochs: int) -> bool:
    import pyarrow.parquet as pq

    folder = work / "benchctl" / "epochs"
    try:
        names = [e.path for e in os.scandir(folder) if e.name.endswith(".parquet")]
    except OSError:
        return False
    for path in names:
        try:
            if pq.read_metadata(path).num_rows >= epochs:
                return True
        except OSError:  # replaced under us: read it on the next poll
            continue
    return False


def _first_tune_rows(work: Path, epochs: int) -> bool:
    for path in (work / "tune").glob("tune/*/result.json"):
        try:
            if len(path.read_text().splitlines()) >= epochs:
                return True
        except OSError:
            continue
    return False


def run_half(role: str, args, env: dict, log: Path) -> dict:
    """Run one driver process; sample its RSS when its first trial's rows are on disk."""
    first_rows = _first_benchctl_rows if role == "benchctl" else _first_tune_rows
    out = args.work / f"{role}.json"
    cmd = [sys.executable, __file__, "--role", role, "--work", str(args.work), "--address", args.address,
           "--trials", str(args.trials), "--epochs", str(args.epochs), "--sleep", str(args.sleep),
           "--json", str(out)]  # fmt: skip
    if args.profile and role == "benchctl":
        cmd += ["--profile", str(args.profile)]
    load_before = loadavg()
    started = time.time()
    with log.open("w") as f:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT)
    seen = {}

    def watch() -> None:
        while proc.poll() is None:
            if "rss_first" not in seen and first_rows(args.work, args.epochs):
                seen["rss_first"], seen["first_at"] = rss_mb(proc.pid), time.time()
                return
            time.sleep(POLL_S)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    rc = proc.wait()
    wall = time.time() - started
    watcher.join()
    if rc != 0:
        raise SystemExit(f"scale_lab: the {role} driver exited {rc}; see {log}")
    report = json.loads(out.read_text())
    return {
        "wall_s": wall,
        "started_at": started,
        "first_rows_s": seen.get("first_at", started) - started if seen else None,
        "rss_mb_first": seen.get("rss_first"),
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        **report,
    }


def benchctl_rows(work: Path) -> tuple[list[tuple[str, int, int]], float]:
    import pyarrow.dataset as ds

    table = ds.dataset(work / "benchctl" / "epochs", format="parquet").to_table(
        columns=["trial", "attempt", "epoch"]
    )
    rows = list(zip(*(table.column(c).to_pylist() for c in ("trial", "attempt", "epoch")), strict=True))
    files = [*(work / "benchctl").glob("epochs/*.parquet"), *(work / "benchctl").glob("trials/*.parquet")]
    return rows, max(p.stat().st_mtime for p in files)


def tune_rows(work: Path) -> tuple[list[tuple[str, int, int]], float]:
    rows, newest = [], 0.0
    for path in (work / "tune").glob("tune/*/result.json"):
        newest = max(newest, path.stat().st_mtime)
        for line in path.read_text().splitlines():
            if line.strip():
                result = json.loads(line)
                rows.append((path.parent.name, 1, int(result["epoch"])))
    return rows, newest


def start_lab(args, tmp: str):
    from ray.cluster_utils import Cluster

    os.environ["RAY_TMPDIR"] = tmp  # Ray's address file too, never the machine's /tmp/ray
    Path(tmp, "ray").mkdir()
    head = {"num_cpus": 0, "num_gpus": 0, "include_dashboard": False, "temp_dir": f"{tmp}/ray",
            "node_ip_address": "127.0.0.1"}  # fmt: skip
    lab = Cluster(initialize_head=True, head_node_args=head)
    for shape in lab_shape(args.nodes):
        lab.add_node(wait=False, node_ip_address="127.0.0.1", **shape)
    lab.wait_for_nodes()
    return lab


def measure(args) -> dict:
    import ray

    from orchestrator.lab.netns import private_network

    tmp = tempfile.mkdtemp(prefix="scl-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    result: dict = {"nodes": args.nodes, "trials": args.trials, "epochs": args.epochs, "sleep_s": args.sleep}
    with private_network() as why_not:
        if why_not:
            print(f"scale_lab: note: the lab shares this machine's network ({why_not})", flush=True)
        os.environ[MARKS_ENV] = str(args.work / "marks")  # the lab's workers inherit it from its raylets
        lab = None
        try:
            lab = start_lab(args, tmp)
            args.address = lab.address
            port = lab.address.rsplit(":", 1)[1]
            (args.work / "lab.yaml").write_text(
                "cluster_name: scale-lab\nprovider:\n  type: local\n  head_ip: 127.0.0.1\n"
                f"head_start_ray_commands:\n  - ray start --head --port={port}\n"
            )
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            halves = {}
            for role in ("benchctl", "tune"):
                (args.work / "marks").write_text("")
                halves[role] = run_half(role, args, env, args.work / f"{role}.log")
                halves[role]["last_trial_end"] = max(marks(args.work / "marks"), default=None)
        finally:
            if lab is not None:
                lab.shutdown()
            ray.shutdown()
            shutil.rmtree(tmp, ignore_errors=True)
    for role, half in halves.items():
        rows, newest = (benchctl_rows if role == "benchctl" else tune_rows)(args.work)
        half.update(account(rows, args.trials, args.epochs))
        end = half.pop("last_trial_end")
        half["last_trial_end_to_rows_s"] = newest - end if end else None
        half["last_trial_end_to_exit_s"] = half["returned_at"] - end if end else None
    b, t = halves["benchctl"], halves["tune"]
    result.update({
        "wall_s": round(b["wall_s"], 2),
        "tune_wall_s": round(t["wall_s"], 2),
        "overhead_vs_tune_pct": round(100 * (b["wall_s"] / t["wall_s"] - 1), 1),
        "driver_cpu_s": round(b["cpu_s"], 2),
        "tune_driver_cpu_s": round(t["cpu_s"], 2),
        "driver_rss_mb_start": b["rss_mb_first"] and round(b["rss_mb_first"], 1),
        "driver_rss_mb_end": b["rss_mb_end"] and round(b["rss_mb_end"], 1),
        "driver_rss_growth": b["rss_mb_first"] and round(b["rss_mb_end"] / b["rss_mb_first"], 3),
        "tune_driver_rss_mb_start": t["rss_mb_first"] and round(t["rss_mb_first"], 1),
        "tune_driver_rss_mb_end": t["rss_mb_end"] and round(t["rss_mb_end"], 1),
        "rows_expected": b["rows_expected"],
        "rows_written": b["rows_written"],
        "rows_duplicated": b["rows_duplicated"],
        "rows_lost": b["rows_lost"],
        "tune_rows_written": t["rows_written"],
        "last_trial_end_to_rows_s": b["last_trial_end_to_rows_s"],
        "last_trial_end_to_exit_s": b["last_trial_end_to_exit_s"],
        "lab": lab_shape(args.nodes),
        "halves": halves,
        "host": {"name": socket.gethostname(), "cpus": os.cpu_count(), "python": platform.python_version(),
                 "ray": ray.__version__, "platform": platform.platform()},
    })  # fmt: skip
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--trials", type=int, default=100, help="even: half cpu cells, half gpu cells")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=0.9, help="seconds each epoch sleeps")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--work", type=Path, help="where both halves write (default: a temporary folder)")
    parser.add_argument("--profile", type=Path, help="cProfile benchctl's driver into this file")
    parser.add_argument("--role", choices=("benchctl", "tune"), help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:  # one driver, in its own process
        report = (drive_benchctl if args.role == "benchctl" else drive_tune)(args)
        args.json.write_text(json.dumps(report))
        return
    if args.nodes < 2 or args.trials < 2 or args.trials % 2:
        parser.error("--nodes at least 2 (one GPU node), --trials an even number of at least 2")
    with tempfile.TemporaryDirectory(prefix="scale-lab-") as tmp:
        args.work = (args.work or Path(tmp)).resolve()
        args.work.mkdir(parents=True, exist_ok=True)
        result = measure(args)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("halves", "lab")}, indent=2))


if __name__ == "__main__":
    main()
