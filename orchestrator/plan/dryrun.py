"""`benchctl sweep --dry-run`: the trials a sweep would run and where, without running any.

    from orchestrator.plan.dryrun import dry_run, idle_nodes, local_nodes
    dry_run(spec, echo=print)       # no --cluster: no Ray at all, this machine as one Ray-style node
    idle_nodes(plans, nodes)        # "host (why)" for each node that can run no cell of the sweep

Without --cluster the plan is made from this machine's CPU count and its NVIDIA device files, so a
dry run starts no Ray (no /tmp/ray session) and imports no CUDA. With --cluster it joins the cluster
and asks Ray for the alive nodes, as a real sweep does. Either way nothing is written.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable
from pathlib import Path

from orchestrator.lab import hardware
from orchestrator.plan.matrix import _fits, describe, expand, resolve_allotment
from orchestrator.plan.matrix import unplaceable as find_unplaceable
from orchestrator.plan.spec import SpecError, SweepSpec, resolve_devices
from orchestrator.plan.trial_plan import TrialPlan
from trainables.config import Device


def _local_gpus() -> int:
    """NVIDIA GPUs Ray would see here, from the driver's files (importing torch to ask CUDA takes seconds):
    one folder per GPU under /proc/driver/nvidia/gpus, else one /dev/nvidiaN each; CUDA_VISIBLE_DEVICES
    narrows them as it narrows Ray's count."""
    gpus_dir = Path("/proc/driver/nvidia/gpus")
    try:
        count = len(list(gpus_dir.iterdir()))
    except OSError:
        count = sum(1 for p in Path("/dev").glob("nvidia*") if re.fullmatch(r"nvidia\d+", p.name))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = min(count, len([d for d in visible.split(",") if d.strip()]))
    return count


def local_nodes() -> list[dict]:
    """This machine as the one node a local sweep's Ray would report (cluster.alive_nodes' shape)."""
    gpus = _local_gpus()
    resources = {"CPU": float(os.cpu_count() or 1), **({"GPU": float(gpus)} if gpus else {})}
    return [{"host": socket.gethostname(), "node_id": "local", "alive": True, "head": True,
             "resources": resources, "gpu_model": None}]  # fmt: skip


def _why_not(plan: TrialPlan, node: dict, largest: float) -> str | None:
    """Why `node` cannot take the trial `plan` describes (None: it can)."""
    need, have = plan.resources, node["resources"]
    what = plan.where
    if plan.node_ids and node.get("node_id") not in plan.node_ids:
        return f"{what} cells are pinned to their class's nodes"
    if _fits(need, have):
        return None
    if need.get("GPU") and have.get("GPU", 0) < need["GPU"]:
        return f"{what} cells need a GPU, it has none"
    why = f"{what} cells need {describe(need)}, it has {have.get('CPU', 0):g}"
    if plan.trial.device is Device.cpu and not plan.node_ids and need.get("CPU", 0) >= largest - 1:
        why += " (sized to the largest node; --per-class sizes each class to its own nodes)"
    return why


def idle_nodes(plans: list[TrialPlan], nodes: list[dict]) -> list[str]:
    """`host (reason; reason)` for every node that can run none of `plans`; empty when all can."""
    largest = max((n["resources"].get("CPU", 0) for n in nodes), default=0)
    out = []
    for node in nodes:
        reasons = {}
        for plan in plans:
            why = _why_not(plan, node, largest)
            if why is None:
                break
            reasons.setdefault(why, None)
        else:
            if plans:
                out.append(f"{node['host']} ({describe(node['resources'])}: {'; '.join(reasons)})")
    return out


def idle_note(plans: list[TrialPlan], nodes: list[dict]) -> str | None:
    """The line a dry run and a real sweep print when some nodes will sit idle, else None."""
    idle = idle_nodes(plans, nodes)
    if not idle:
        return None
    nodes_ = f"{len(idle)} node{'s' * (len(idle) != 1)}"
    return f"benchctl: note: {nodes_} can run no cell of this sweep: {', '.join(idle)}"


def _classes(spec: SweepSpec, nodes: list[dict]):
    if not spec.per_class:
        return None
    if spec.cluster is None:
        from trainables.device import cpu_model

        models = {n["node_id"]: cpu_model() for n in nodes}
    else:
        models = hardware.probe_cpu_models(nodes)
    classes = hardware.hardware_classes(nodes, models)
    wanted = {d.value for d in spec.devices}
    if not any(c.device in wanted for c in classes):
        raise SpecError(
            f"--per-class: no node of this cluster has a {' or '.join(sorted(wanted))} class; "
            "check `benchctl cluster status`"
        )
    return classes


def _plan(spec: SweepSpec, nodes: list[dict], echo: Callable[[str], None]) -> None:
    skip = frozenset()
    if spec.resume:
        from orchestrator.run.sweep import _reopen  # reads the stored spec and the trials files only

        skip = _reopen(spec).done
    elif spec.results_dir.exists():
        raise SpecError(
            f"--name: {spec.results_dir} already exists; choose another --name, or add --resume to "
            "complete that sweep"
        )
    spec = resolve_devices(spec, nodes, echo)
    alloc = resolve_allotment(spec, [int(n["resources"].get("CPU", 0)) for n in nodes])
    classes = _classes(spec, nodes)
    plans = expand(spec, alloc, skip, classes)
    problem = find_unplaceable(plans, nodes)
    if problem:
        raise SpecError(problem)
    largest = max((n["resources"].get("CPU", 0) for n in nodes), default=0)
    rows = []
    for plan in plans:
        hosts = [n["host"] for n in nodes if _why_not(plan, n, largest) is None]
        rows.append((plan.trial.trial_id, describe(plan.resources), plan.placement.value, ", ".join(hosts)))
    header = ("trial", "resources", "placement", "can run on")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    where = ", ".join(f"{n['host']} ({describe(n['resources'])})" for n in nodes)
    done = f", {len(skip)} already complete" if spec.resume else ""
    n = len(plans)
    echo(f"benchctl: dry run: {n} trial{'s' * (n != 1)} on {where}{done}; nothing started, nothing written")
    if note := idle_note(plans, nodes):
        echo(note)


def dry_run(spec: SweepSpec, echo: Callable[[str], None] = print) -> None:
    """Print the trials `spec` plans (id, Ray resources, placement, the nodes that can take it) and the
    total. Without --cluster no Ray is started; with it, the cluster is joined and left again."""
    if spec.cluster is None:
        _plan(spec, local_nodes(), echo)
        return
    import ray

    from orchestrator.lab import cluster

    try:
        cluster.connect(spec.cluster, spec.cluster_port)
        _plan(spec, cluster.alive_nodes(), echo)
    finally:
        ray.shutdown()
