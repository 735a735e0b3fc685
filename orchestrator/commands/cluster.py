"""`benchctl cluster status --cluster FILE`: the lab's nodes as Ray sees them, and whether it needs a token.

benchctl cluster status --cluster cluster/lab.yaml
benchctl cluster status --cluster cluster/lab.yaml --port 6380
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.lab import cluster as lab

app = typer.Typer(no_args_is_help=True, help="Inspect a lab's Ray cluster.")


def _gib(resources: dict, key: str) -> str:
    return f"{resources.get(key, 0) / 2**30:.1f}"


def status_table(nodes: list[dict]) -> str:
    """One aligned row per node: host, address, role, CPUs, GPUs, GPU model, memory, alive."""
    header = ["host", "address", "role", "CPUs", "GPUs", "GPU model", "memory GiB", "alive"]
    rows = [
        [
            str(n["host"]),
            str(n["address"]),
            "head" if n["head"] else "worker",
            f"{n['resources'].get('CPU', 0):g}",
            f"{n['resources'].get('GPU', 0):g}",
            n["gpu_model"] or "—",
            _gib(n["resources"], "memory"),
            "yes" if n["alive"] else "no (dead)",
        ]
        for n in sorted(nodes, key=lambda n: (not n["head"], not n["alive"], str(n["host"])))
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]
    )


@app.command("status")
def status(
    cluster: Annotated[Path, typer.Option(help="Ray cluster file (cluster/lab.yaml).")],
    port: Annotated[
        int | None, typer.Option(help="The head's GCS port (default: from the cluster file, else 6379).")
    ] = None,
) -> None:
    """Print each node (host, CPUs, GPUs and model, memory, alive) and the cluster's auth mode."""
    import ray

    address = lab.connect(cluster, port)
    try:
        nodes = lab.all_nodes()
    finally:
        ray.shutdown()
    required = lab.auth_required(address)
    auth = {True: "required", False: "NOT required", None: "unknown"}[required]
    alive = sum(n["alive"] for n in nodes)
    typer.echo(
        f"cluster at {address} ({cluster}): {alive} of {len(nodes)} nodes alive; token authentication {auth}"
    )
    typer.echo(status_table(nodes))
    if required is False:
        typer.echo(lab.NO_AUTH_WARNING.format(address=address), err=True)
