"""Reaching Ray: a local instance on this machine, or a lab's cluster named by a cluster file.

    benchctl sweep ...                              # ray.init() here, node address 127.0.0.1, no dashboard
    benchctl sweep --cluster cluster/lab.yaml ...   # joins the head named by provider.head_ip

The cluster file is Ray's own on-prem cluster-launcher YAML (`ray up cluster/lab.yaml` brings the
lab up). benchctl reads `provider.head_ip` and the GCS port from the `--port` given to
`ray start --head` in `head_start_ray_commands` (default 6379; `--port` overrides), so the file
stays valid for `ray up`.

Before `ray.init` joins a cluster, `preflight` asks the head's GCS directly, with bounded waits:
a driver without the cluster's token is refused in one line (Ray would print a traceback), and so
is a driver on a machine that is not a node of the cluster (Ray drivers need a local raylet; Ray
2.60 aborts the process with a C++ stack trace otherwise). `auth_required` asks, from a process
that sends no token, whether the cluster would let anyone in; a sweep warns once when it would.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from orchestrator.errors import BenchctlError

GCS_PORT = 6379  # Ray's default GCS port on the head node
PROBE_TIMEOUT_S = 5.0  # seconds to wait for the head's port before giving up


def head_address(path: Path, port: int | None = None) -> str:
    """`host:port` of the Ray head named in a cluster file (`port` overrides the file's); BenchctlError
    (exit 2) if it names none."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise BenchctlError(
            f"--cluster: cannot read {path} ({exc.strerror}); pass a cluster YAML file"
        ) from None
    try:
        doc = yaml.safe_load(text)  # safe_load: a cluster file is data, never code
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise BenchctlError(f"--cluster: {where}: invalid YAML ({exc.problem}); fix the file") from None
    head = (doc.get("provider") or {}).get("head_ip") if isinstance(doc, dict) else None
    if not isinstance(head, str) or not head.strip():
        raise BenchctlError(
            f"--cluster: {path} has no provider.head_ip; use Ray's on-prem cluster file format "
            "(see cluster/lab.yaml)"
        )
    return f"{head.strip()}:{port or _head_port(doc.get('head_start_ray_commands') or [])}"


def _head_port(commands: list) -> int:
    for command in commands:
        match = re.search(
            r"ray start\b.*--head\b.*--port[= ](\d+)|ray start\b.*--port[= ](\d+).*--head\b", str(command)
        )
        if match:
            return int(match.group(1) or match.group(2))
    return GCS_PORT


def probe(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """Fail within `timeout_s` if nothing listens at the head's port (ray.init would wait far longer).
    Returns this machine's address on the route to the head (the one Ray would give this node)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as conn:
            return conn.getsockname()[0]
    except OSError as exc:
        raise BenchctlError(
            f"--cluster: cannot reach the Ray head at {address} within {timeout_s:.0f} s ({exc}); "
            "is `ray start --head` running there and the port open?"
        ) from None


TOKEN_HINT = (
    "set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) to the lab's token, as on its nodes "
    "(cluster/README.md)"
)


# Asked in a child process: Ray's C++ client logs to stderr on refusal, and its auth mode is
# process-wide. Ray's own GCS client is not public API; if it moves, the child says "unknown" and
# ray.init runs unguarded.
_GCS_QUERY = """
import json, sys
try:
    from ray._raylet import GcsClient
    from ray.core.generated.gcs_pb2 import GcsNodeInfo
    from ray.exceptions import AuthenticationError
except ImportError:
    print(json.dumps({"unknown": "ray internals moved"})); sys.exit()
try:
    infos = GcsClient(address=sys.argv[1]).get_all_node_info(
        timeout=float(sys.argv[2]), state_filter=GcsNodeInfo.GcsNodeState.ALIVE).values()
except AuthenticationError:
    print(json.dumps({"refused": True})); sys.exit()
except Exception as exc:
    print(json.dumps({"unknown": repr(exc)})); sys.exit()
print(json.dumps({"refused": False, "ips": sorted({i.node_manager_address for i in infos})}))
"""


GCS_ANSWER_TIMEOUT_S = 20.0  # seconds for the head's GCS to answer once its port accepts connections


def _ask_gcs(address: str, env: dict[str, str] | None = None) -> dict:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _GCS_QUERY, address, str(PROBE_TIMEOUT_S)],
            env=env if env is not None else dict(os.environ),
            capture_output=True,
            text=True,
            timeout=GCS_ANSWER_TIMEOUT_S,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"silent": f"no answer within {GCS_ANSWER_TIMEOUT_S:.0f} s"}
    except (ValueError, IndexError):
        return {"silent": "no readable answer"}


def preflight(address: str) -> None:
    """Checks ray.init cannot make politely: reachable head, valid token, driver on a node."""
    local_ip = probe(address)
    answer = _ask_gcs(address)
    if "silent" in answer or ("unknown" in answer and "internals" not in answer["unknown"]):
        why = answer.get("silent") or answer.get("unknown")
        raise BenchctlError(
            f"--cluster: {address} accepts connections but no Ray head answered there ({why}); check "
            "head_ip and the port (--port, or `ray start --head --port` in the cluster file)"
        )
    if answer.get("refused"):
        raise BenchctlError(
            f"--cluster: the Ray cluster at {address} requires token authentication and refused this "
            f"driver's token (or its lack of one); {TOKEN_HINT}"
        )
    ips = answer.get("ips") or []
    if ips and local_ip not in ips:
        raise BenchctlError(
            f"--cluster: this machine ({local_ip}) is not a node of the cluster at {address} (nodes: "
            f"{', '.join(ips)}); Ray drivers run on a node: run benchctl on the head, or first join this "
            f"machine with `ray start --address={address} --num-cpus=0 --num-gpus=0`"
        )


def auth_required(address: str) -> bool | None:
    """Would the cluster refuse a client that sends no token? None: could not tell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["RAY_AUTH_MODE"] = "disabled"
    answer = _ask_gcs(address, env)
    return None if "unknown" in answer or "silent" in answer else bool(answer.get("refused"))


NO_AUTH_WARNING = (
    "benchctl: warning: the Ray cluster at {address} does not require token authentication: anyone who "
    "can reach it can run code on its nodes; turn it on (RAY_AUTH_MODE=token, cluster/README.md)"
)


def connect(cluster_file: Path | None, port: int | None = None) -> str | None:
    """Join Ray (see `connect_local` for local runs); returns the head's address for a cluster."""
    if cluster_file is None:
        connect_local()
        return None
    import ray

    _quiet_tune()
    address = head_address(cluster_file, port)
    preflight(address)
    ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    return address


def _quiet_tune() -> None:
    # Tune's CSV/JSON/TensorBoard loggers would duplicate what benchctl writes as Parquet.
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # the legacy engine honours verbose=0: no tables


def connect_local() -> None:
    """ray.init on this machine: quiet, node address 127.0.0.1, no dashboard.

    Ray 2.60's gRPC servers still listen on every interface even so (seen with `ss -ltnp`)."""
    import ray

    _quiet_tune()
    # Ray starts workers at nice 15, so any busy process (the driver, Ray's own daemons)
    # preempts a timed trial; measured here, that cost CPU trials ~8% of their images/s.
    # A local raylet inherits this variable; lab nodes set it in `ray start`'s environment.
    os.environ.setdefault("RAY_worker_niceness", "0")
    # Ray 2.60's gRPC servers listen on every interface whatever the node address; what keeps
    # strangers out is token authentication, which Ray 2.60 turns on for instances that ray.init
    # starts (unless RAY_AUTH_MODE says otherwise; setting the variable here would bypass Ray's own
    # set-up of it). tests/test_cluster.py checks that a client without the token is refused.
    # address="local": always a fresh instance of our own. Without it ray.init() joins whatever
    # /tmp/ray/ray_current_cluster names (any earlier `ray start` on this machine, even a dead one).
    ray.init(
        address="local",
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level=logging.ERROR,
        log_to_driver=False,
    )


def calm_local_daemons() -> dict:
    """Raise the niceness of the Ray daemons this process's local ray.init started, by PID, all but
    the raylet (trainables/priority.py says why); returns what was done, for spec.json."""
    import ray

    from trainables.priority import DAEMON_NICENESS, calm

    try:  # no public API lists them; ray.init keeps its own processes here
        started = ray._private.worker._global_node.all_processes
    except AttributeError:
        return {"niceness": None, "reniced": [], "note": "Ray's process list not found"}
    names = {info.process.pid: name for name, infos in started.items() for info in infos if name != "raylet"}
    for info in started.get("raylet", []):  # its agents; its other children are workers, left alone
        raylet = info.process.pid
        with contextlib.suppress(OSError):
            for child in Path(f"/proc/{raylet}/task/{raylet}/children").read_text().split():
                title = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0].strip()
                if title in (b"ray::DashboardAgent", b"ray::RuntimeEnvAgent"):
                    names[int(child)] = title.decode().removeprefix("ray::")
    done = calm(sorted(names), DAEMON_NICENESS)
    return {"niceness": DAEMON_NICENESS, "reniced": sorted({names[p] for p in done})}


def all_nodes() -> list[dict]:
    """Every node Ray knows, alive or dead: host, address, alive, head, resources, GPU model."""
    import ray

    out = []
    for n in ray.nodes():
        resources = n.get("Resources") or {}
        models = [k.split(":", 1)[1] for k in resources if k.startswith("accelerator_type:")]
        out.append(
            {
                "host": n.get("NodeManagerHostname") or n.get("NodeManagerAddress"),
                "node_id": n.get("NodeID"),
                "address": n.get("NodeManagerAddress"),
                "alive": bool(n.get("Alive")),
                "head": "node:__internal_head__" in resources,
                "resources": resources,
                "gpu_model": ",".join(models) or None,
            }
        )
    return out


def alive_nodes() -> list[dict]:
    """Ray's view of the nodes that can run trials: [{"host": ..., "resources": {...}}, ...]."""
    return [n for n in all_nodes() if n["alive"]]
