"""The one planning path: the trials a sweep runs, decided the same way for a dry run, a sweep and a resume.

    planned = plan_sweep(spec, nodes, echo, skip=done)   # SweepPlan: spec, plans, classes
    planned.plans                                        # one TrialPlan per trial to run
    idle_note(planned.plans, nodes)                      # the "can run no cell" line, or None

The steps, in order: the devices the nodes have (no --devices), a line naming the cells --devices
leaves out of a preset with cells (presets.py), gpu cells refused where no node has a
GPU (preflight.check_devices, the "no GPU found on any node" line), each cell's cores against the nodes,
the hardware classes (--per-class), the grid expanded minus the trials already complete (`skip`, a
--resume's), CPU cells sized to the nodes that will run them (sizing.py; not with --uniform-cells),
and a refusal when some trial fits no node. `benchctl sweep --dry-run` (dryrun.py) and the sweep
driver (orchestrator/run/sweep.py) both call `plan_sweep`, so what a dry run prints is what the sweep
runs. Only how a run drives the plans (checkpoints, the storage relay, a resumed
trial's checkpoint) is added by the driver afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from orchestrator.lab import hardware
from orchestrator.lab.hardware import HwClass
from orchestrator.plan.matrix import _fits, cell_axes, describe, expand, resolve_allotment, unplaceable
from orchestrator.plan.preflight import check_devices
from orchestrator.plan.presets import PRESETS
from orchestrator.plan.sizing import size_to_nodes, sizes_line
from orchestrator.plan.spec import SpecError, SweepSpec, resolve_devices
from orchestrator.plan.study import kept
from orchestrator.plan.trial_plan import TrialPlan
from trainables.config import Device


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep will run: the spec with its devices resolved, and its trials."""

    spec: SweepSpec  # devices resolved against the nodes (what spec.json records)
    plans: list[TrialPlan]  # the trials to run, in grid order, without those in `skip`
    classes: list[HwClass] | None  # --per-class: the hardware classes found; else None


def plan_sweep(
    spec: SweepSpec,
    nodes: list[dict],
    echo: Callable[[str], None],
    *,
    skip: Collection[str] = frozenset(),
    cpu_models: Callable[[list[dict]], dict[str, str]] = hardware.probe_cpu_models,
) -> SweepPlan:
    """Plan `spec` on `nodes` (cluster.alive_nodes' shape). `cpu_models` names each node's CPU for
    --per-class (Ray's probe by default; a local dry run reads this machine's without Ray). Raises
    SpecError for gpu cells where no node has a GPU, when the cluster has no class of the asked-for
    devices, or when a trial fits no node."""
    spec = resolve_devices(spec, nodes, echo)  # no --devices: those the nodes have
    check_devices(spec, nodes)
    if note := _left_out(spec):
        echo(note)
    alloc = resolve_allotment(spec, [int(n["resources"].get("CPU", 0)) for n in nodes])
    classes = _classes(spec, nodes, cpu_models)
    plans, sizes = size_to_nodes(spec, expand(spec, alloc, skip, classes), nodes)
    if sizes:
        echo(sizes_line(sizes))
    problem = unplaceable(plans, nodes)
    if problem:
        raise SpecError(problem)
    return SweepPlan(spec=spec, plans=plans, classes=classes)


def _left_out(spec: SweepSpec) -> str | None:
    """The line saying which cells of a preset with cells its axis values leave out (study.kept), and how
    to run them."""
    cells = PRESETS[spec.preset].cells if spec.preset else None
    axes = cell_axes(spec)
    left = [c for c in cells or () if c not in kept(cells, axes)]
    if not left:
        return None
    others = [d.value for d in dict.fromkeys(c.device for c in cells) if d not in spec.devices]
    if set(left) == {c for c in cells if c.device.value in others}:  # --devices alone
        return (
            f"benchctl: --devices {','.join(d.value for d in spec.devices)}: the {len(left)} "
            f"{'/'.join(others)} cells per model of --preset {spec.preset.value} are left out; run them "
            f"with --devices {','.join(others)} and another --name, then report both folders together"
        )
    return (
        f"benchctl: {len(left)} of the {len(cells)} cells per model of --preset {spec.preset.value} are "
        f"left out by the options given ({', '.join(f'{c.kind} {c.label}' for c in left)}); run them "
        f"under another --name, then report both folders together"
    )


def _classes(spec: SweepSpec, nodes: list[dict], cpu_models) -> list[HwClass] | None:
    if not spec.per_class:
        return None
    classes = hardware.hardware_classes(nodes, cpu_models(nodes))
    wanted = {d.value for d in spec.devices}
    if not any(c.device in wanted for c in classes):
        raise SpecError(
            f"--per-class: no node of this cluster has a {' or '.join(sorted(wanted))} class; "
            "check `benchctl cluster status`"
        )
    return classes


def why_not(plan: TrialPlan, node: dict, largest: float) -> str | None:
    """Why `node` cannot take the trial `plan` describes (None: it can); `largest` is the largest
    node's CPU count."""
    need, have = plan.resources, node["resources"]
    what = plan.where
    if plan.node_ids and node.get("node_id") not in plan.node_ids:
        return f"{what} cells are pinned to other nodes"
    if _fits(need, have):
        return None
    if need.get("GPU") and have.get("GPU", 0) < need["GPU"]:
        return f"{what} cells need a GPU, it has none"
    why = f"{what} cells need {describe(need)}, it has {have.get('CPU', 0):g}"
    if plan.trial.device is Device.cpu and not plan.node_ids and need.get("CPU", 0) >= largest - 1:
        why += " (--uniform-cells: sized to the largest node; without it each is sized to its nodes)"
    return why


def largest_cpus(nodes: list[dict]) -> float:
    return max((n["resources"].get("CPU", 0) for n in nodes), default=0)


def idle_nodes(plans: list[TrialPlan], nodes: list[dict]) -> list[str]:
    """`host (reason; reason)` for every node that can run none of `plans`; empty when all can."""
    largest = largest_cpus(nodes)
    out = []
    for node in nodes:
        reasons = {}
        for plan in plans:
            why = why_not(plan, node, largest)
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
