"""CPU cells sized to the nodes that run them, so that every node of a heterogeneous lab works.

    plans, sizes = size_to_nodes(spec, plans, nodes)   # planning.plan_sweep calls it
    sizes           # [NodeSize(cpus=16, node_ids=(...), trials=5), NodeSize(cpus=2, ..., trials=3)]

Ray books a trial's cores before it knows the node, so a CPU cell cannot take "whatever node comes
with all its cores". Sized to the largest node (`--uniform-cells`, what benchctl did before), a lab's
smaller nodes run no CPU cell at all. By default, when the nodes that can run CPU cells differ in
cores, each CPU trial is instead given one node size before the sweep starts: it is pinned to the
nodes of that size (Ray's node-id label, as --per-class pins a class) and runs with their cores
(exclusive: all of them; partitioned: half). Trials go to sizes as a scheduler would hand them out
as nodes free up: each trial, in grid order, to the node slot that is free first, a trial on c cores
counted as taking 1/c of the time (rough: epochs speed up less than linearly with cores). So every
node starts with a cell while cells wait, and larger nodes take more; at the tail, a size may finish
before another's queue is empty, as far as the estimate was off (the assignment is fixed before
Tune starts).

What a row measured stays told apart: its cell id is unchanged, and the row records its cores
(`cpus_allotted`) and its node's class (`hw_class`, cpu:<model>-<N>c, orchestrator/lab/hardware.py),
which the analysis never pools (orchestrator/analysis/pairing.py): a GPU cell is compared with each
CPU class apart, like with like.
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass

from orchestrator.plan.matrix import resolve_allotment
from orchestrator.plan.spec import Placement, SweepSpec
from orchestrator.plan.trial_plan import TrialPlan
from trainables.config import Device


@dataclass(frozen=True)
class NodeSize:
    """The nodes of one CPU count, and how many CPU trials were given to them."""

    cpus: int
    node_ids: tuple[str, ...]
    trials: int = 0


def _sizes(nodes: list[dict], gpu_cells: bool) -> list[NodeSize]:
    """The nodes that can run a CPU cell (1+ CPUs, a node id), grouped by CPU count, largest first. With
    gpu cells in the sweep, a GPU node's cores are left to them while there are CPU-only nodes."""
    hosts = [n for n in nodes if int(n["resources"].get("CPU", 0)) >= 1 and n.get("node_id")]
    cpu_only = [n for n in hosts if not n["resources"].get("GPU")]
    groups: dict[int, list[str]] = {}
    for n in cpu_only if gpu_cells and cpu_only else hosts:
        groups.setdefault(int(n["resources"]["CPU"]), []).append(n["node_id"])
    return [NodeSize(c, tuple(sorted(ids))) for c, ids in sorted(groups.items(), reverse=True)]


def sized(spec: SweepSpec) -> bool:
    """Whether CPU cells are sized per node: not with --uniform-cells, --per-class (its classes are sized
    already), an explicit --cpus-per-trial, or packed placement (1 CPU in Ray's books fits any node)."""
    packed = spec.placement is Placement.packed
    return not (spec.uniform_cells or spec.per_class or spec.cpus_per_trial or packed)


def size_to_nodes(
    spec: SweepSpec, plans: list[TrialPlan], nodes: list[dict]
) -> tuple[list[TrialPlan], list[NodeSize] | None]:
    """`plans` with each CPU trial sized to and pinned on one node size (the module doc says how), and
    the sizes with their trial counts; (plans, None) unchanged when cells stay uniform (`sized`) or
    the CPU nodes are all one size."""
    cpu = [i for i, p in enumerate(plans) if p.trial.device is Device.cpu and not p.node_ids]
    sizes = _sizes(nodes, gpu_cells=len(cpu) < len(plans))
    if not sized(spec) or not cpu or len(sizes) < 2 and _largest_anyway(sizes, nodes):
        return plans, None
    allot = [resolve_allotment(spec, [s.cpus]) for s in sizes]
    # one heap of slot finish times per size: a node holds cpus // cell cores cells at once
    slots = [
        [0.0] * (len(s.node_ids) * max(1, s.cpus // a.cpu_cell_cpus))
        for s, a in zip(sizes, allot, strict=True)
    ]
    counts = [0] * len(sizes)
    out = list(plans)
    for i in cpu:
        k = min(range(len(sizes)), key=lambda k: (slots[k][0], k))  # the first free; ties: the larger
        heapq.heapreplace(slots[k], slots[k][0] + 1 / allot[k].cpu_cell_cpus)
        counts[k] += 1
        cores = allot[k].cpu_cell_cpus
        out[i] = dataclasses.replace(
            plans[i],
            trial=dataclasses.replace(plans[i].trial, cpus=cores),
            reserve=allot[k].cpu_cell_reserve,
            node_ids=sizes[k].node_ids,
        )
    return out, [dataclasses.replace(s, trials=n) for s, n in zip(sizes, counts, strict=True)]


def _largest_anyway(sizes: list[NodeSize], nodes: list[dict]) -> bool:
    """Whether one size (or none) is the largest node's, so that cells sized to the largest node, as
    matrix.resolve_allotment sizes them, already fit those nodes: nothing to pin. Not so when a larger
    GPU node, left to gpu cells, would take the CPU cells from the CPU-only nodes."""
    largest = max((int(n["resources"].get("CPU", 0)) for n in nodes), default=0)
    return not sizes or sizes[0].cpus == largest


def sizes_line(sizes: list[NodeSize]) -> str:
    """The line a sweep and a dry run print when CPU cells are sized per node."""
    parts = [
        f"{s.trials} on {s.cpus}-CPU node{'s' * (len(s.node_ids) > 1)} ({len(s.node_ids)})" for s in sizes
    ]
    return f"benchctl: cpu cells sized to their nodes: {', '.join(parts)} (--uniform-cells: to the largest)"
