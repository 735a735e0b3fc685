"""`benchctl sweep --dry-run`: the trials a sweep would run and where, without running any.

    from orchestrator.plan.dryrun import dry_run, local_nodes
    dry_run(spec, echo=print)       # no --cluster: no Ray at all, this machine as one Ray-style node
    dry_run(spec, done=reopen(spec).done)   # --resume: the trials already complete are left out
    dry_run(spec, echo, estimator=est)      # with each trial's estimated time (commands/sweep.py passes one)
                                            # --preset paper-explained: with each trial's kind of cell
    local_nodes()                   # this machine in the shape of Ray's node list

A dry run makes the checks a sweep makes before its first trial, through the same functions (the data
set: preflight.check_dataset; --devices and GPUs, sizes, placement: planning.plan_sweep), so a dry run
that passes is a sweep that starts. Without --cluster the plan is made from this machine's CPU count and
its NVIDIA device files, so a dry run starts no Ray (no /tmp/ray session) and imports no torch. With
--cluster it joins the cluster and asks Ray for the alive nodes, as a real sweep does. Either way nothing
is written.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.lab import hardware
from orchestrator.plan import storage
from orchestrator.plan.matrix import describe
from orchestrator.plan.planning import SweepPlan, idle_note, largest_cpus, plan_sweep, why_not
from orchestrator.plan.preflight import check_dataset, check_storage
from orchestrator.plan.presets import PRESETS
from orchestrator.plan.spec import SpecError, SweepSpec
from orchestrator.plan.study import kinds_of


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


def _local_cpu_models(nodes: list[dict]) -> dict[str, str]:
    """This machine's CPU model for its one node: --per-class without a cluster, read without Ray."""
    from trainables.hostinfo import cpu_model  # no torch

    return {n["node_id"]: cpu_model() for n in nodes}


@dataclass(frozen=True)
class DryRun:
    """What a dry run planned: for an estimate (analysis/estimate.py) beside the table."""

    planned: SweepPlan
    nodes: list[dict]
    sizes: tuple[int, int]  # the data set's (train, test) images


# An estimator: (the dry run) -> ({trial_id: cell text}, [lines after the table]); commands/sweep.py's
# reads earlier runs and the FLOPs table (analysis/), which this layer does not import.
Estimator = Callable[[DryRun], tuple[dict[str, str], list[str]]]


def _plan(
    spec: SweepSpec,
    nodes: list[dict],
    echo: Callable[[str], None],
    done: frozenset[str],
    estimator: Estimator | None,
) -> DryRun:
    if not spec.resume and spec.results_dir.exists():
        raise SpecError(
            f"--name: {spec.results_dir} already exists; choose another --name, or add --resume to "
            "complete that sweep"
        )
    sizes = check_dataset(spec, fetch=False, echo=echo)  # what the sweep checks before Ray starts
    check_storage(spec, write=False)
    cpu_models = _local_cpu_models if spec.cluster is None else hardware.probe_cpu_models
    planned = plan_sweep(spec, nodes, echo, skip=done, cpu_models=cpu_models)
    spec, plans = planned.spec, planned.plans
    run = DryRun(planned, nodes, sizes)
    cells, after = estimator(run) if estimator else ({}, [])
    largest = largest_cpus(nodes)
    study = PRESETS[spec.preset].cells if spec.preset else None  # a preset with cells: each trial's kind
    rows = []
    for plan in plans:
        hosts = [n["host"] for n in nodes if why_not(plan, n, largest) is None]
        threads = f"{plan.trial.torch_threads}+{plan.trial.data_workers}"
        estimate = (cells.get(plan.trial.trial_id, ""),) if cells else ()
        kind = (kinds_of(plan.trial, study),) if study else ()
        rows.append((plan.trial.trial_id, *kind, describe(plan.resources), plan.placement.value, threads,
                     *estimate, ", ".join(hosts)))  # fmt: skip
    header = ("trial", *(("kind",) if study else ()), "resources", "placement", "threads+workers",
              *(("estimate",) if cells else ()), "can run on")  # fmt: skip
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    where = ", ".join(f"{n['host']} ({describe(n['resources'])})" for n in nodes)
    complete = f", {len(done)} already complete" if spec.resume else ""
    n = len(plans)
    epochs = f" of {spec.epochs} epoch{'s' * (spec.epochs != 1)}" if plans else ""
    total = f"{n} trial{'s' * (n != 1)}{epochs} on {where}{complete}"
    echo(f"benchctl: dry run: {total}; nothing started, nothing written")
    echo(storage.describe(spec.checkpoint_policy, spec.storage))
    for line in after:
        echo(line)
    if note := idle_note(plans, nodes):
        echo(note)
    return run


def dry_run(
    spec: SweepSpec,
    echo: Callable[[str], None] = print,
    done: frozenset[str] | None = None,
    estimator: Estimator | None = None,
) -> DryRun:
    """Print the trials `spec` plans (id, Ray resources, placement, threads + workers, with `estimator`
    each one's estimated time, the nodes that can take it) and the total, after the checks a sweep makes
    before its first trial, through planning.plan_sweep as the sweep plans them. `done`: a --resume's
    trials already complete (results.sweepstate.reopen, which the caller reads: stored results are a
    layer above planning). Without --cluster no Ray is started; with it, the cluster is joined and left
    again."""
    if spec.resume and done is None:
        raise TypeError("dry_run: a --resume spec needs `done` (orchestrator.results.sweepstate.reopen)")
    done = done or frozenset()
    if spec.cluster is None:
        return _plan(spec, local_nodes(), echo, done, estimator)
    import ray

    from orchestrator.lab import cluster

    try:
        cluster.connect(spec.cluster, spec.cluster_port)
        return _plan(spec, cluster.alive_nodes(), echo, done, estimator)
    finally:
        ray.shutdown()
