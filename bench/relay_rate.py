"""How many MB/s the checkpoint relay (orchestrator/run/relayfs.py) carries in the netns lab: a benchmark.

    sudo python bench/relay_rate.py --json reports/relay-rate/netns-2x2.json
    sudo python bench/relay_rate.py --hosts 3 --senders 2 --file-mb 200 --rounds 3 --json OUT
    git archive 9f441c8~1 | tar -x -C /tmp/before  # the relay before chunks, then:
    sudo python bench/relay_rate.py --code /tmp/before --json OUT

It builds the lab of tests/labnet.py (network namespaces on a bridge, each host its own address, /tmp
and Ray node; a head with no CPUs; this process the driver, on a 0-CPU node in the root namespace),
starts the relay's store actor on the driver's node as a cluster sweep does, and has every worker host
send `--senders` checkpoints of `--file-mb` MB at once (random bytes, written to the host's own /tmp
before the clock starts) through Tune's own transfer functions (ray.train's _upload_to_fs_path, then
_download_from_fs_path back: a retry's fetch). A round's rate is all bytes moved / the wall time from the
first send to the last file landing; `--rounds` rounds, the median is the headline. The driver's and the
relay's peak private memory (RssAnon) during the round are recorded too.

What it measures here is the relay's own ceiling on this machine: the bridge has no bandwidth cap, so
the rate is bound by CPU (Ray's object transfer, pickling, the actor's file I/O, all on 2 shared cores
here), not by a wire. cluster/README.md compares it with what a lab's nodes send and with 1 GbE.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# --code DIR: the relay of another checkout (an older commit's `git archive`), for a before/after
CODE = Path(sys.argv[sys.argv.index("--code") + 1]).resolve() if "--code" in sys.argv else ROOT
sys.path.insert(0, str(CODE))  # runnable from a bare checkout
sys.path.insert(0, str(ROOT / "tests"))  # the lab of network namespaces

from labnet import PORT, LabNet  # noqa: E402

MB = 1 << 20


def private_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields["RssAnon"].split()[0]) / 1024


class Peak:
    """Peak private memory of each pid while the block runs (10 ms samples), as growth over its start."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids, self.base = pids, {n: private_mb(p) for n, p in pids.items()}
        self.peak, self.stop = dict(self.base), threading.Event()

    def _run(self) -> None:
        while not self.stop.wait(0.01):
            for name, pid in self.pids.items():
                self.peak[name] = max(self.peak[name], private_mb(pid))

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()

    def growth(self) -> dict[str, float]:
        return {n: round(self.peak[n] - self.base[n], 1) for n in self.pids}


def measure(args, lab: LabNet) -> dict:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from orchestrator.run import relayfs
    from orchestrator.run.relayfs import start_store, storage_filesystem

    ray.init(address=f"{lab.head_ip}:{PORT}", logging_level="ERROR", log_to_driver=False)
    try:
        store = start_store("benchctl-store-bench")
        fs = storage_filesystem("benchctl-store-bench")
        relay_pid = ray.get(store.__ray_call__.remote(lambda self: os.getpid()))
        workers = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
        storage = Path(tempfile.mkdtemp(prefix="bcrelay", dir="/tmp"))  # the driver's disk

        def on(node) -> dict:
            strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
            return {"num_cpus": 0, "scheduling_strategy": strategy}

        @ray.remote
        def make(name: str, mb: int) -> str:
            local = Path(tempfile.gettempdir()) / "bench" / name  # this host's own /tmp
            local.mkdir(parents=True, exist_ok=True)
            block = os.urandom(MB)
            with open(local / "state.pt", "wb") as f:
                for i in range(mb):
                    f.write(block[i:] + block[:i])
            return str(local)

        @ray.remote
        def upload(local: str, dest: str) -> None:
            from ray.train._internal.storage import _upload_to_fs_path

            _upload_to_fs_path(local, fs, dest)

        @ray.remote
        def download(src: str, name: str) -> None:
            import shutil

            from ray.train._internal.storage import _download_from_fs_path

            local = Path(tempfile.gettempdir()) / "bench-back" / name
            _download_from_fs_path(fs, src, str(local))
            shutil.rmtree(local)

        senders = [(node, f"n{i}s{j}") for i, node in enumerate(workers) for j in range(args.senders)]
        local = {name: ray.get(make.options(**on(node)).remote(name, args.file_mb)) for node, name in senders}
        small = {name: ray.get(make.options(**on(node)).remote(name + "w", 8)) for node, name in senders}
        ray.get([upload.options(**on(n)).remote(small[s], str(storage / "warm" / s)) for n, s in senders])
        pids = {"driver": os.getpid(), "relay": relay_pid}
        total_mb = len(senders) * args.file_mb
        rounds = []
        for r in range(args.rounds):
            dest = {name: str(storage / f"r{r}" / name / "checkpoint_000001") for _, name in senders}
            t0 = time.perf_counter()
            with Peak(pids) as up:
                ray.get([upload.options(**on(n)).remote(local[s], dest[s]) for n, s in senders])
            up_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            with Peak(pids) as down:
                ray.get([download.options(**on(n)).remote(dest[s], f"r{r}{s}") for n, s in senders])
            down_s = time.perf_counter() - t0
            landed = sum(Path(d, "state.pt").stat().st_size for d in dest.values())
            assert landed == total_mb * MB, f"round {r}: {landed} bytes landed, {total_mb * MB} sent"
            subprocess.run(["rm", "-rf", str(storage / f"r{r}")], check=True)
            rounds.append({
                "upload_s": round(up_s, 2), "upload_mb_s": round(total_mb / up_s, 1),
                "download_s": round(down_s, 2), "download_mb_s": round(total_mb / down_s, 1),
                "private_mb_growth_up": up.growth(), "private_mb_growth_down": down.growth(),
            })  # fmt: skip
            print(json.dumps(rounds[-1]), flush=True)
        subprocess.run(["rm", "-rf", str(storage)], check=True)
        return {
            "hosts": len(workers),
            "senders_per_host": args.senders,
            "file_mb": args.file_mb,
            "mb_per_round": total_mb,
            # None: a relay that moves whole files (benchctl before chunks; --code of an older checkout)
            "chunk_mb": relayfs.CHUNK / MB if hasattr(relayfs, "CHUNK") else None,
            "in_flight_per_file": getattr(relayfs, "IN_FLIGHT", None),
            "rounds": rounds,
            "upload_mb_s_median": statistics.median(r["upload_mb_s"] for r in rounds),
            "download_mb_s_median": statistics.median(r["download_mb_s"] for r in rounds),
        }
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=2, help="worker hosts (network namespaces)")
    parser.add_argument("--senders", type=int, default=2, help="checkpoints each host sends at once")
    parser.add_argument("--file-mb", type=int, default=200, help="MB per checkpoint (resnet50: ~190)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, required=True, help="where the result JSON goes")
    parser.add_argument("--code", type=Path, help="measure the relay of this checkout instead (before/after)")
    args = parser.parse_args()
    if why := LabNet.unavailable():
        sys.exit(f"relay_rate: no netns lab here: {why}")
    os.environ.update({k: "disabled" for k in ("RAY_AUTH_MODE",)})
    load_before = os.getloadavg()
    with LabNet() as lab:
        lab.host("head", cpus=0, head=True)
        for i in range(args.hosts):
            lab.host(f"w{i + 1}", cpus=1)
        lab.driver_node()
        lab.wait_nodes(args.hosts + 2, timeout_s=300)  # a busy 2-core machine starts nodes slowly
        result = measure(args, lab)
    import ray

    result.update({
        "what": "relay MB/s in the netns lab: every host's checkpoints at once, up to the driver's disk "
                "and back, through Tune's own transfer functions (bench/relay_rate.py)",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "ray": ray.__version__,
                    # the machine's run queue (1-min load average) as the run began and ended: other
                    # work on the same cores slows every transfer, so rates are comparable only
                    # between runs under a similar load
                    "load_avg_1m": [round(load_before[0], 1), round(os.getloadavg()[0], 1)]},
        "git_commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                     text=True).stdout.strip(),
        "code": str(args.code) if args.code else None,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    })  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"upload {result['upload_mb_s_median']} MB/s, download {result['download_mb_s_median']} MB/s "
          f"(median of {args.rounds}); {args.json}")  # fmt: skip


if __name__ == "__main__":
    main()
