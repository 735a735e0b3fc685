"""Reaching Ray: a local instance on this machine, or a lab's cluster named by a cluster file.

    benchctl sweep ...                              # ray.init() here, node address 127.0.0.1, no dashboard
    benchctl sweep --cluster cluster/lab.yaml ...   # joins the head named by provider.head_ip

The cluster file is Ray's own on-prem cluster-launcher YAML (`ray up cluster/lab.yaml` brings the
lab up). benchctl reads `provider.head_ip` and the GCS port from the `--port` given to
`ray start --head` in `head_start_ray_commands` (default 6379), so the file stays valid for `ray up`.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from pathlib import Path

import yaml

from orchestrator.errors import BenchctlError

GCS_PORT = 6379  # Ray's default GCS port on the head node
PROBE_TIMEOUT_S = 5.0  # seconds to wait for the head's port before giving up


def head_address(path: Path) -> str:
    """`host:port` of the Ray head named in a cluster file; BenchctlError (exit 2) if it names none."""
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
    return f"{head.strip()}:{_head_port(doc.get('head_start_ray_commands') or [])}"


def _head_port(commands: list) -> int:
    for command in commands:
        match = re.search(
            r"ray start\b.*--head\b.*--port[= ](\d+)|ray start\b.*--port[= ](\d+).*--head\b", str(command)
        )
        if match:
            return int(match.group(1) or match.group(2))
    return GCS_PORT


def probe(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Fail within `timeout_s` if nothing listens at the head's port (ray.init would wait far longer)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except OSError as exc:
        raise BenchctlError(
            f"--cluster: cannot reach the Ray head at {address} within {timeout_s:.0f} s ({exc}); "
            "is `ray start --head` running there and the port open?"
        ) from None


def connect(cluster_file: Path | None) -> None:
    """ray.init for a sweep: quiet, and for local runs on the loopback node address with no dashboard.

    Ray 2.60's gRPC servers still listen on every interface even so (seen with `ss -ltnp`)."""
    import ray

    # Tune's CSV/JSON/TensorBoard loggers would duplicate what benchctl writes as Parquet.
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # the legacy engine honours verbose=0: no tables
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False}
    if cluster_file is None:
        # Ray starts workers at nice 15, so any busy process (the driver, Ray's own daemons)
        # preempts a timed trial; measured here, that cost CPU trials ~8% of their images/s.
        # A local raylet inherits this variable; lab nodes set it in `ray start`'s environment.
        os.environ.setdefault("RAY_worker_niceness", "0")
        ray.init(include_dashboard=False, _node_ip_address="127.0.0.1", **quiet)
        return
    address = head_address(cluster_file)
    probe(address)
    ray.init(address=address, **quiet)


def alive_nodes() -> list[dict]:
    """Ray's view of the nodes that can run trials: [{"host": ..., "resources": {...}}]."""
    import ray

    return [
        {"host": n.get("NodeManagerHostname") or n.get("NodeManagerAddress"), "resources": n["Resources"]}
        for n in ray.nodes()
        if n.get("Alive")
    ]
