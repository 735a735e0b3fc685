"""The experiment matrix, declared as data and expanded in exactly one place.

    axes = matrix_axes(spec)             # {"model": [...], "device": [...], ...}: the grid, as data
    plans = expand(spec, alloc)          # one TrialPlan (orchestrator/plan/trial_plan.py) per cell
    space = param_space(plans)           # the plans as one tune.grid_search (of indexes), for Ray Tune

The grid is expanded here into a list of typed plans and handed to Tune as one `grid_search` of
their dicts, so a `--resume` can leave out the trials already complete (`skip`) and still run
through this one place. A preset with cells (`--preset paper-explained`, presets.py) is the union of
several grids (`grids(spec)`), each with its own DataLoader workers and GPU cell CPUs, expanded here
one after the other into the one list: one sweep, one results directory, one --resume.

Resources are a function of the plan (`TrialPlan.resources`), used both by Ray
(`tune.with_resources`) and by the trial itself (its torch threads: `plan.trial.cpus`), so what
Ray reserves and what the trial uses can never disagree. Per placement mode (`--placement`):

    exclusive    cpu cell: every core of the largest node, reserved and used (as the paper's CPU
                 baseline), so nothing else runs beside it; gpu cell: 1 GPU + 1 core + 1 per worker.
                 On nodes of several sizes, planning.plan_sweep then sizes each CPU trial to the
                 nodes it is pinned to (sizing.py), unless --uniform-cells
    partitioned  cpu cell: half the largest node (or --cpus-per-trial), pinned to its own cores with
                 CPU affinity; gpu cells as above, also pinned; cells share a node on disjoint cores
    packed       every trial is 1 CPU (+1 GPU) in Ray's books but uses its full thread count:
                 trials crowd each other, numbers are for smoke runs only (the report flags overlap)

With `--per-class` the device axis becomes a hardware-class axis (orchestrator/lab/hardware.py): one
column per class found in the cluster, each CPU class with its own allotment (sized to its nodes),
and every cell pinned to its class's nodes through Ray's node-id label (`TrialPlan.request`).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Collection
from dataclasses import dataclass

from orchestrator.lab.hardware import HwClass
from orchestrator.plan.axes import AXES
from orchestrator.plan.presets import union_grids
from orchestrator.plan.spec import Placement, SweepSpec
from orchestrator.plan.study import CELL_AXES
from orchestrator.plan.trial_plan import INDEX_KEY, TUNE_KEY, TrialPlan
from trainables.config import Device, TrialConfig


@dataclass(frozen=True)
class Allotment:
    """CPU cores per trial, resolved against the cluster's nodes."""

    cpu_cell_cpus: int  # a CPU cell's cores: its torch threads plus its DataLoader workers
    gpu_cell_cpus: int | None  # a GPU cell's cores; None: one for the training process + one per worker
    cpu_cell_reserve: int = 0  # cores a CPU cell reserves in Ray beyond those it uses (kept idle)
    placement: Placement = Placement.exclusive


def resolve_allotment(spec: SweepSpec, node_cpus: list[int]) -> Allotment:
    """Defaults (exclusive): a CPU cell has the largest node to itself and uses all its cores. No
    core is kept idle for Ray's daemons: they are light, and the trial process runs at a better
    priority than they do instead (trainables/priority.py); keeping one idle cost a 2-core host half
    its CPU. Partitioned: half the largest node, so two cells share it on
    disjoint cores. Packed: the exclusive thread count, but 1 CPU in Ray's books. A GPU cell gets
    one core for the training process plus one per DataLoader worker. An explicit --cpus-per-trial
    sets a CPU cell's cores (and reserves exactly those)."""
    largest = max(node_cpus, default=1)
    mode = spec.placement
    if spec.cpus_per_trial:
        return Allotment(spec.cpus_per_trial, spec.gpu_cpus, 0, mode)
    if mode is Placement.partitioned:
        return Allotment(max(1, largest // 2), spec.gpu_cpus, 0, mode)
    return Allotment(largest, spec.gpu_cpus, 0, mode)


def matrix_axes(spec: SweepSpec, classes: list[HwClass] | None = None) -> dict[str, list]:
    """The grid, keyed by TrialConfig field: every combination of these values is one trial. The axes
    are orchestrator/plan/axes.py's; with --per-class, `hw_class` (the classes of the asked-for devices)
    replaces `device`."""
    axes: dict[str, list] = {}
    for axis in AXES:
        if spec.per_class and axis.trial_field == "device":
            wanted = {d.value for d in spec.devices}
            axes["hw_class"] = [c.name for c in classes or [] if c.device in wanted]
        else:
            axes[axis.trial_field] = list(getattr(spec, axis.spec_field))
    return {**axes, "repeat": list(range(spec.repeats))}


def _cell_configs(spec: SweepSpec, classes: list[HwClass] | None) -> list[TrialConfig]:
    """Every combination of the axes' values as a TrialConfig (cpus not yet allotted), stable order."""
    axes = matrix_axes(spec, classes)
    out = []
    for combo in itertools.product(*axes.values()):
        cell = dict(zip(axes, combo, strict=True))
        if "hw_class" in cell:
            cell["device"] = cell["hw_class"].split(":", 1)[0]
        out.append(TrialConfig(**cell, **spec.trial_template()))
    return out


def _plan(spec: SweepSpec, alloc: Allotment, cfg: TrialConfig, own: HwClass | None) -> TrialPlan:
    """The plan of one cell: its cores (a CPU class's cells are sized to that class's own nodes)."""
    if cfg.device is Device.gpu:
        # a resident gpu cell has no DataLoader workers: one core drives the GPU
        cpus, reserve = alloc.gpu_cell_cpus or 1 + cfg.data_workers, 0
    else:
        sized = resolve_allotment(spec, [own.cpus]) if own else alloc
        cpus, reserve = sized.cpu_cell_cpus, sized.cpu_cell_reserve
    return TrialPlan(
        trial=dataclasses.replace(cfg, cpus=cpus),
        placement=alloc.placement,
        trial_process=spec.trial_process,
        start_method=spec.start_method,
        reserve=reserve,
        node_ids=own.node_ids if own else (),
        sweep=spec.name,
    )


def cell_axes(spec: SweepSpec) -> dict:
    """The spec's values of the axes that keep a preset's cells (study.CELL_AXES; those not yet set,
    such as devices before they are resolved, left out)."""
    return {f: v for f in CELL_AXES if (v := getattr(spec, f)) is not None}


def grids(spec: SweepSpec) -> list[SweepSpec]:
    """The grids `spec` runs: itself, or for a preset with cells one spec per grid of the union of the
    cells its axis values keep (study.kept), each with the fields its cells set (study.grids) and
    everything else the spec's."""
    fields = union_grids(spec.preset, cell_axes(spec))
    if fields is None:
        return [spec]
    return [dataclasses.replace(spec, preset=None, **f) for f in fields]


def expand(
    spec: SweepSpec, alloc: Allotment, skip: Collection[str] = (), classes: list[HwClass] | None = None
) -> list[TrialPlan]:
    """The plans of the grid (of each of `grids(spec)`, in turn: a GPU cell's cores are its grid's
    --gpu-cpus), minus trials whose trial_id is in `skip` (done on a --resume)."""
    by_name = {c.name: c for c in classes or []}
    plans = []
    for grid in grids(spec):
        own = alloc if grid is spec else dataclasses.replace(alloc, gpu_cell_cpus=grid.gpu_cpus)
        plans += [_plan(grid, own, cfg, by_name.get(cfg.hw_class)) for cfg in _cell_configs(grid, classes)]
    return [p for p in plans if p.trial.trial_id not in skip]


def param_space(plans: list[TrialPlan]) -> dict:
    """The plans as Tune's param_space: one grid_search over their indexes, each trial's plan picked by
    its index, so each trial's config is a plan's `tune_config()` plus its `index`. Not a grid_search over
    the plans' dicts: Tune deep-copies the whole grid for every trial it generates, so that cost O(trials^2)
    (1,000 trials: ~1e6 plan copies); a function is copied by reference."""
    from ray import tune

    dicts = [p.to_dict() for p in plans]

    def pick(config: dict) -> dict:
        return copy.deepcopy(dicts[config[INDEX_KEY]])  # a trial's own copy: Tune may change its config

    return {INDEX_KEY: tune.grid_search(list(range(len(dicts)))), TUNE_KEY: tune.sample_from(pick)}


def _fits(need: dict[str, float], have: dict[str, float]) -> bool:
    return all(have.get(k, 0) >= v for k, v in need.items())


def describe(resources: dict[str, float]) -> str:
    cpus = resources.get("CPU", 0)
    parts = [f"{resources.get('GPU', 0):g} GPU", f"{cpus:g} CPU{'' if cpus == 1 else 's'}"]
    return " + ".join(parts) if resources.get("GPU") else parts[1]


def unplaceable(plans: list[TrialPlan], nodes: list[dict]) -> str | None:
    """None if every trial fits on some node; else one line naming what no node can ever hold.

    A trial that fits no node would sit PENDING forever in Tune, so it is refused before fit().
    """
    missing: dict[str, dict[str, float]] = {}
    for plan in plans:
        need = plan.resources
        candidates = [n for n in nodes if not plan.node_ids or n.get("node_id") in plan.node_ids]
        if not any(_fits(need, n["resources"]) for n in candidates):
            missing.setdefault(f"{plan.where} cells", need)
    if not missing:
        return None
    have = "; ".join(f"{n['host']}: {describe(n['resources'])}" for n in nodes) or "no alive nodes"
    wants = ", ".join(f"{what} need {describe(need)}" for what, need in missing.items())
    hint = (
        "drop gpu from --devices or add a GPU node"
        if any("GPU" in n for n in missing.values())
        else ("lower --cpus-per-trial / --gpu-cpus or add a larger node")
    )
    return f"{wants}, but no node has that ({have}); {hint}"
