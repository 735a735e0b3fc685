"""`benchctl sweep --dry-run`: the trials a sweep would run and where, without running any.

    from orchestrator.plan.dryrun import dry_run, idle_nodes, local_nodes
    dry_run(spec, echo=print)       # no --cluster: no Ray at all, this machine as one Ray-style node
    dry_run(spec, echo, estimator)  # with each trial's estimated time (commands/sweep.py passes one)
    idle_nodes(plans, nodes)        # "host (why)" for each node that can run no cell of the sweep

A dry run makes the checks a sweep makes before its first trial, through the same functions
(plan/preflight.py: the data set, --devices and GPUs, sizes, placement), so a dry run that passes is a
sweep that starts. Without --cluster the plan is made from this machine's CPU count and its NVIDIA
device files, so a dry run starts no Ray (no /tmp/ray session) and imports no torch. With --cluster it
joins the cluster and asks Ray for the alive nodes, as a real sweep does. Either way nothing is written.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.plan.matrix import _fits, describe
from orchestrator.plan.preflight import Planned, check_dataset, plan_trials
from orchestrator.plan.spec import SpecError, SweepSpec
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


@dataclass(frozen=True)
class DryRun:
    """What a dry run planned: for an estimate (analysis/estimate.py) beside the table."""

    planned: Planned
    nodes: list[dict]
    sizes: tuple[int, int]  # the data set's (train, test) images


# An estimator: (the dry run) -> ({trial_id: cell text}, [lines after the table]); commands/sweep.py's
# reads earlier runs and the FLOPs table, which this layer does not import.
Estimator = Callable[[DryRun], tuple[dict[str, str], list[str]]]


def _plan(
    spec: SweepSpec, nodes: list[dict], echo: Callable[[str], None], estimator: Estimator | None
) -> DryRun:
    skip = frozenset()
    if spec.resume:
        from orchestrator.run.sweep import _reopen  # reads the stored spec and the trials files only

        skip = _reopen(spec).done
    elif spec.results_dir.exists():
        raise SpecError(
            f"--name: {spec.results_dir} already exists; choose another --name, or add --resume to "
            "complete that sweep"
        )
    sizes = check_dataset(spec, fetch=False, echo=echo)  # what the sweep checks before Ray starts
    planned = plan_trials(spec, nodes, echo, skip)
    spec, plans = planned.spec, planned.plans
    run = DryRun(planned, nodes, sizes)
    cells, after = estimator(run) if estimator else ({}, [])
    largest = max((n["resources"].get("CPU", 0) for n in nodes), default=0)
    rows = []
    for plan in plans:
        hosts = [n["host"] for n in nodes if _why_not(plan, n, largest) is None]
        threads = f"{plan.trial.torch_threads}+{plan.trial.data_workers}"
        estimate = (cells.get(plan.trial.trial_id, ""),) if cells else ()
        rows.append((plan.trial.trial_id, describe(plan.resources), plan.placement.value, threads, *estimate,
                     ", ".join(hosts)))  # fmt: skip
    header = ("trial", "resources", "placement", "threads+workers", *(("estimate",) if cells else ()),
              "can run on")  # fmt: skip
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    where = ", ".join(f"{n['host']} ({describe(n['resources'])})" for n in nodes)
    done = f", {len(skip)} already complete" if spec.resume else ""
    n = len(plans)
    epochs = f" of {spec.epochs} epoch{'s' * (spec.epochs != 1)}" if plans else ""
    echo(
        f"benchctl: dry run: {n} trial{'s' * (n != 1)}{epochs} on {where}{done}; nothing started, "
        "nothing written"
    )
    for line in after:
        echo(line)
    if note := idle_note(plans, nodes):
        echo(note)
    return run


def dry_run(
    spec: SweepSpec, echo: Callable[[str], None] = print, estimator: Estimator | None = None
) -> DryRun:
    """Print the trials `spec` plans (id, Ray resources, threads + workers, placement, the nodes that can
    take it, with `estimator` each one's estimated time) and the total, after every check a sweep makes
    before its first trial (plan/preflight.py). Without --cluster no Ray is started; with it, the cluster
    is joined and left again."""
    if spec.cluster is None:
        return _plan(spec, local_nodes(), echo, estimator)
    import ray

    from orchestrator.lab import cluster

    try:
        cluster.connect(spec.cluster, spec.cluster_port)
        return _plan(spec, cluster.alive_nodes(), echo, estimator)
    finally:
        ray.shutdown()
