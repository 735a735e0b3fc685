"""The experiment matrix, declared as data and expanded in exactly one place.

    axes = matrix_axes(spec)             # {"model": [...], "device": [...], ...}: the grid, as data
    space = param_space(spec, alloc)     # the same axes as tune.grid_search, for Ray Tune
    cells = expand(spec, alloc)          # the same grid as resolved configs, for checks before Ray runs

Resources are a function of a trial's config (`trial_resources`), used both by Ray
(`tune.with_resources`) and by the trial itself (its torch threads), so what Ray reserves and what
the trial uses can never disagree: a cpu cell asks for CPUs only, a gpu cell for one GPU plus the
CPUs its input pipeline needs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from orchestrator.spec import SweepSpec
from trainables.config import Device, Pipeline, TrialConfig


@dataclass(frozen=True)
class Allotment:
    """CPU cores per trial, resolved against the cluster's nodes."""

    cpu_cell_cpus: int  # a CPU cell's cores: its torch threads plus its DataLoader workers
    gpu_cell_cpus: int | None  # a GPU cell's cores; None: one for the training process + one per worker
    cpu_cell_reserve: int = 0  # cores a CPU cell reserves in Ray beyond those it uses (kept idle)


def resolve_allotment(spec: SweepSpec, node_cpus: list[int]) -> Allotment:
    """Defaults: a CPU cell has the largest node to itself and uses all its cores but one; the spare
    core keeps Ray's daemons and the driver from preempting the trial's threads (the paper's CPU
    baseline uses the whole machine). A GPU cell gets one core for the training process plus one per
    DataLoader worker. An explicit --cpus-per-trial reserves exactly that many cores."""
    if spec.cpus_per_trial:
        return Allotment(spec.cpus_per_trial, spec.gpu_cpus, 0)
    largest = max(node_cpus, default=1)
    reserve = 1 if largest > 1 else 0
    return Allotment(cpu_cell_cpus=largest - reserve, gpu_cell_cpus=spec.gpu_cpus, cpu_cell_reserve=reserve)


def matrix_axes(spec: SweepSpec) -> dict[str, list]:
    """The grid: every combination of these values is one trial."""
    return {
        "model": list(spec.models),
        "device": [d.value for d in spec.devices],
        "batch_size": list(spec.batch_sizes),
        "pipeline": [p.value for p in spec.pipelines],
        "precision": [p.value for p in spec.precisions],
        "repeat": list(range(spec.repeats)),
    }


def _fixed(spec: SweepSpec, alloc: Allotment) -> dict:
    return {
        "trial": spec.trial_template(),
        "cpu_cell_cpus": alloc.cpu_cell_cpus,
        "gpu_cell_cpus": alloc.gpu_cell_cpus,
        "cpu_cell_reserve": alloc.cpu_cell_reserve,
        "sweep": spec.name,
    }


def param_space(spec: SweepSpec, alloc: Allotment) -> dict:
    from ray import tune

    return {
        **{axis: tune.grid_search(values) for axis, values in matrix_axes(spec).items()},
        **_fixed(spec, alloc),
    }


def expand(spec: SweepSpec, alloc: Allotment) -> list[dict]:
    """The grid's configs exactly as Tune will resolve them (same keys, same values)."""
    axes = matrix_axes(spec)
    return [
        {**dict(zip(axes, combo, strict=True)), **_fixed(spec, alloc)}
        for combo in itertools.product(*axes.values())
    ]


def cpus_used(config: dict) -> int:
    """Cores the trial itself uses (torch threads + DataLoader workers fit inside them)."""
    if config["device"] == Device.gpu.value:
        # a resident gpu cell has no DataLoader workers: one core drives the GPU
        workers = config["trial"]["workers"] if config["pipeline"] == Pipeline.loader.value else 0
        return config["gpu_cell_cpus"] or 1 + workers
    return config["cpu_cell_cpus"]


def trial_resources(config: dict) -> dict[str, float]:
    """Ray resources of one trial: `{"CPU": n}` for a cpu cell (the cores it uses plus its idle
    reserve), `{"CPU": n, "GPU": 1}` for a gpu cell."""
    if config["device"] == Device.gpu.value:
        return {"CPU": cpus_used(config), "GPU": 1}
    return {"CPU": cpus_used(config) + config.get("cpu_cell_reserve", 0)}


def trial_config(config: dict) -> TrialConfig:
    """The TrialConfig a Tune config describes (validated by TrialConfig itself)."""
    axes = {k: config[k] for k in ("model", "device", "batch_size", "pipeline", "precision", "repeat")}
    return TrialConfig(**axes, **config["trial"], cpus=cpus_used(config))


def _fits(need: dict[str, float], have: dict[str, float]) -> bool:
    return all(have.get(k, 0) >= v for k, v in need.items())


def describe(resources: dict[str, float]) -> str:
    parts = [f"{resources.get('GPU', 0):g} GPU", f"{resources.get('CPU', 0):g} CPUs"]
    return " + ".join(parts) if resources.get("GPU") else parts[1]


def unplaceable(configs: list[dict], nodes: list[dict]) -> str | None:
    """None if every trial fits on some node; else one line naming what no node can ever hold.

    A trial that fits no node would sit PENDING forever in Tune, so it is refused before fit().
    """
    missing: dict[str, dict[str, float]] = {}
    for config in configs:
        need = trial_resources(config)
        if not any(_fits(need, n["resources"]) for n in nodes):
            missing.setdefault(f"{config['device']} cells", need)
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
