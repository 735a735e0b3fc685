"""The experiment matrix, declared as data and expanded in exactly one place.

    axes = matrix_axes(spec)             # {"model": [...], "device": [...], ...}: the grid, as data
    space = param_space(spec, alloc)     # the grid's cells as one tune.grid_search, for Ray Tune
    configs = expand(spec, alloc)        # the same configs Tune resolves, for checks before Ray runs

Each Tune config is `{"cell": {model, device, batch_size, pipeline, precision, repeat}, ...fixed}`:
the grid is expanded here into a list of cells and handed to Tune as one `grid_search`, so a
`--resume` can leave out the cells already complete (`skip`) and still run through this one place.

Resources are a function of a trial's config (`trial_resources`), used both by Ray
(`tune.with_resources`) and by the trial itself (its torch threads), so what Ray reserves and what
the trial uses can never disagree. Per placement mode (`--placement`):

    exclusive    cpu cell: every core of the largest node, reserved and used (as the paper's CPU
                 baseline), so nothing else runs beside it; gpu cell: 1 GPU + 1 core + 1 per worker
    partitioned  cpu cell: half the largest node (or --cpus-per-trial), pinned to its own cores with
                 CPU affinity; gpu cells as above, also pinned; cells share a node on disjoint cores
    packed       every trial is 1 CPU (+1 GPU) in Ray's books but uses its full thread count:
                 trials crowd each other, numbers are for smoke runs only (the report flags overlap)

With `--per-class` the device axis becomes a hardware-class axis (orchestrator/hardware.py): one
column per class found in the cluster, each CPU class with its own allotment (sized to its nodes),
and every cell pinned to its class's nodes through Ray's node-id label (`trial_request`).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from dataclasses import dataclass

from orchestrator.hardware import NODE_ID_LABEL, HwClass
from orchestrator.spec import Placement, SweepSpec
from trainables.config import Device, Pipeline, TrialConfig


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
    """The grid: every combination of these values is one trial. With --per-class, `hw_class`
    (the classes of the asked-for devices) replaces `device`."""
    if spec.per_class:
        wanted = {d.value for d in spec.devices}
        where = {"hw_class": [c.name for c in classes or [] if c.device in wanted]}
    else:
        where = {"device": [d.value for d in spec.devices]}
    return {
        "model": list(spec.models),
        **where,
        "batch_size": list(spec.batch_sizes),
        "pipeline": [p.value for p in spec.pipelines],
        "precision": [p.value for p in spec.precisions],
        "repeat": list(range(spec.repeats)),
    }


def cells(spec: SweepSpec, classes: list[HwClass] | None = None) -> list[dict]:
    """Every combination of the axes' values, one dict per trial, in a stable order."""
    axes = matrix_axes(spec, classes)
    out = [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]
    for cell in out:
        if "hw_class" in cell:
            cell["device"] = cell["hw_class"].split(":", 1)[0]
    return out


def _fixed(spec: SweepSpec, alloc: Allotment, classes: list[HwClass] | None = None) -> dict:
    fixed = {
        "trial": spec.trial_template(),
        "cpu_cell_cpus": alloc.cpu_cell_cpus,
        "gpu_cell_cpus": alloc.gpu_cell_cpus,
        "cpu_cell_reserve": alloc.cpu_cell_reserve,
        "placement": alloc.placement.value,
        "trial_process": spec.trial_process.value,
        "sweep": spec.name,
    }
    if spec.per_class:
        per = {}
        for c in classes or []:
            own = resolve_allotment(spec, [c.cpus])  # a CPU class's cells are sized to its own nodes
            per[c.name] = {"node_ids": list(c.node_ids), "cpu_cell_cpus": own.cpu_cell_cpus,
                           "cpu_cell_reserve": own.cpu_cell_reserve}  # fmt: skip
        fixed["classes"] = per
    return fixed


def expand(
    spec: SweepSpec, alloc: Allotment, skip: Collection[str] = (), classes: list[HwClass] | None = None
) -> list[dict]:
    """The Tune configs of the grid, minus trials whose trial_id is in `skip` (done on a --resume)."""
    fixed = _fixed(spec, alloc, classes)
    configs = [{"cell": cell, **fixed} for cell in cells(spec, classes)]
    return [c for c in configs if trial_config(c).trial_id not in skip]


def param_space(
    spec: SweepSpec, alloc: Allotment, skip: Collection[str] = (), classes: list[HwClass] | None = None
) -> dict:
    """`expand` as Tune's param_space: the cells as one grid_search, the fixed keys beside it."""
    from ray import tune

    configs = expand(spec, alloc, skip, classes)
    return {"cell": tune.grid_search([c["cell"] for c in configs]), **_fixed(spec, alloc, classes)}


def _class_of(config: dict) -> dict | None:
    name = config["cell"].get("hw_class")
    return config.get("classes", {}).get(name) if name else None


def axis(config: dict, name: str):
    """An axis value of a Tune config (`device`, `pipeline`, ...)."""
    return config["cell"][name]


def cpus_used(config: dict) -> int:
    """Cores the trial itself uses (torch threads + DataLoader workers fit inside them)."""
    if axis(config, "device") == Device.gpu.value:
        # a resident gpu cell has no DataLoader workers: one core drives the GPU
        workers = config["trial"]["workers"] if axis(config, "pipeline") == Pipeline.loader.value else 0
        return config["gpu_cell_cpus"] or 1 + workers
    own = _class_of(config)
    return own["cpu_cell_cpus"] if own else config["cpu_cell_cpus"]


def trial_resources(config: dict) -> dict[str, float]:
    """Ray resources of one trial: `{"CPU": n}` for a cpu cell (the cores it uses plus its idle
    reserve), `{"CPU": n, "GPU": 1}` for a gpu cell; packed: 1 CPU whatever the trial uses."""
    gpu = {"GPU": 1} if axis(config, "device") == Device.gpu.value else {}
    if config.get("placement") == Placement.packed.value:
        return {"CPU": 1, **gpu}
    if gpu:
        return {"CPU": cpus_used(config), **gpu}
    own = _class_of(config)
    reserve = own["cpu_cell_reserve"] if own else config.get("cpu_cell_reserve", 0)
    return {"CPU": cpus_used(config) + reserve}


def trial_request(config: dict):
    """What Tune asks Ray for: `trial_resources`, pinned to the class's nodes when the cell has a
    hardware class (a placement group whose bundle carries Ray's node-id label selector)."""
    resources = trial_resources(config)
    own = _class_of(config)
    if own is None:
        return resources
    from ray.tune import PlacementGroupFactory

    selector = {NODE_ID_LABEL: f"in({','.join(own['node_ids'])})"}
    return PlacementGroupFactory([resources], bundle_label_selector=[selector])


def pins_cpus(config: dict) -> bool:
    """Whether the trial pins itself to its own cores (partitioned placement)."""
    return config.get("placement") == Placement.partitioned.value


def trial_config(config: dict) -> TrialConfig:
    """The TrialConfig a Tune config describes (validated by TrialConfig itself)."""
    return TrialConfig(**config["cell"], **config["trial"], cpus=cpus_used(config))


def _fits(need: dict[str, float], have: dict[str, float]) -> bool:
    return all(have.get(k, 0) >= v for k, v in need.items())


def describe(resources: dict[str, float]) -> str:
    cpus = resources.get("CPU", 0)
    parts = [f"{resources.get('GPU', 0):g} GPU", f"{cpus:g} CPU{'' if cpus == 1 else 's'}"]
    return " + ".join(parts) if resources.get("GPU") else parts[1]


def unplaceable(configs: list[dict], nodes: list[dict]) -> str | None:
    """None if every trial fits on some node; else one line naming what no node can ever hold.

    A trial that fits no node would sit PENDING forever in Tune, so it is refused before fit().
    """
    missing: dict[str, dict[str, float]] = {}
    for config in configs:
        need = trial_resources(config)
        own = _class_of(config)
        candidates = [n for n in nodes if own is None or n.get("node_id") in own["node_ids"]]
        if not any(_fits(need, n["resources"]) for n in candidates):
            missing.setdefault(f"{config['cell'].get('hw_class') or axis(config, 'device')} cells", need)
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
