"""Hardware classes: which kind of GPU or CPU a cell ran on, for `--per-class` and for every row.

    classes = hardware_classes(nodes, probe_cpu_models(nodes))   # after ray.init, on the driver
    [c.name for c in classes]     # ["cpu:Xeon-Platinum-8480+-16c", "gpu:H200"]

A node's GPU class is Ray's own `accelerator_type:<model>` resource (Ray sets it on NVIDIA nodes),
so `gpu:H200`; its CPU class is its CPU model and the cores Ray gives it, `cpu:<model>-<N>c`, read
by a zero-CPU probe task pinned to the node (Ray does not report CPU models). Nodes with no CPUs
in Ray's books (a head that only coordinates, the driver's workstation) have no class. With
`--per-class`, each class becomes a column of the grid and its cells are pinned to the class's
nodes by Ray's node-id label (`ray.io/node-id in (...)`), so a lab gets the full model x hardware
table. Without it, rows are still labelled with the class of the node they ran on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NODE_ID_LABEL = "ray.io/node-id"  # a label Ray puts on every node


@dataclass(frozen=True)
class HwClass:
    name: str  # "gpu:H200", "cpu:EPYC-7763-64c"
    device: str  # "gpu" or "cpu": which trials the class runs
    node_ids: tuple[str, ...]  # Ray node ids of the nodes in the class
    cpus: int  # the smallest node's CPUs: a cell of the class must fit any of its nodes


_NOISE = re.compile(r"\((R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@.*$|\b\d+-Core\b|\bIntel\b|\bAMD\b", re.I)


def short_cpu_name(model: str | None) -> str:
    """`Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz` -> `Xeon-Platinum-8480+` (file- and table-friendly)."""
    text = _NOISE.sub(" ", model or "")
    words = [w for w in text.replace(",", " ").split() if w]
    return "-".join(words)[:40] or "unknown"


def cpu_class_name(cpu_model: str | None, cpus: float) -> str:
    return f"cpu:{short_cpu_name(cpu_model)}-{int(cpus)}c"


def gpu_model(resources: dict) -> str | None:
    """The model in Ray's `accelerator_type:<model>` resource, if the node has one."""
    return next((k.split(":", 1)[1] for k in resources if k.startswith("accelerator_type:")), None)


def gpu_class_name(resources: dict, device_name: str | None = None) -> str:
    model = gpu_model(resources)
    if model is None and device_name:
        model = device_name.replace("NVIDIA ", "").replace(" ", "-")
    return f"gpu:{model or 'unknown'}"


def probe_cpu_models(nodes: list[dict], timeout_s: float = 60) -> dict[str, str]:
    """{node_id: CPU model} for the nodes with CPUs, from one zero-CPU task pinned to each."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    def read_cpu_model() -> str:
        from trainables.device import cpu_model

        return cpu_model()

    refs = {
        n["node_id"]: read_cpu_model.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["node_id"], soft=False)
        ).remote()
        for n in nodes
        if n["resources"].get("CPU", 0) >= 1
    }
    models = ray.get(list(refs.values()), timeout=timeout_s)
    return dict(zip(refs, models, strict=True))


def hardware_classes(nodes: list[dict], cpu_models: dict[str, str]) -> list[HwClass]:
    """Group nodes into classes: one CPU class per (model, cores), one GPU class per GPU model."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for n in nodes:
        res = n["resources"]
        if res.get("GPU", 0) >= 1:
            groups.setdefault(("gpu", gpu_class_name(res)), []).append(n)
        if res.get("CPU", 0) >= 1 and n["node_id"] in cpu_models:
            groups.setdefault(("cpu", cpu_class_name(cpu_models[n["node_id"]], res["CPU"])), []).append(n)
    return [
        HwClass(
            name=name,
            device=device,
            node_ids=tuple(sorted(n["node_id"] for n in members)),
            cpus=int(min(n["resources"].get("CPU", 0) for n in members)),
        )
        for (device, name), members in sorted(groups.items())
    ]


def row_class(device: str, info: dict, node: dict | None) -> str | None:
    """The class of the node a trial ran on, from what the trial reported (rows without --per-class)."""
    if node is None:
        return None
    if device == "gpu":
        return gpu_class_name(node["resources"], info.get("device_name"))
    return cpu_class_name(info.get("cpu_model"), node["resources"].get("CPU", 0))
