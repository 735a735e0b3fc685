"""orchestrator.lab.hardware: class names, grouping nodes into classes, and per-class cells in the grid."""

from ray.tune import PlacementGroupFactory

from orchestrator.lab.hardware import (
    cpu_class_name,
    gpu_class_name,
    hardware_classes,
    row_class,
    short_cpu_name,
)
from orchestrator.plan.matrix import expand, resolve_allotment, unplaceable
from orchestrator.plan.spec import SweepSpec

NODES = [
    {"host": "head", "node_id": "n0", "resources": {"CPU": 0.0, "memory": 1.0}},
    {"host": "gpu1", "node_id": "n1", "resources": {"CPU": 16.0, "GPU": 1.0, "accelerator_type:H200": 1.0}},
    {"host": "cpu1", "node_id": "n2", "resources": {"CPU": 64.0}},
    {"host": "cpu2", "node_id": "n3", "resources": {"CPU": 64.0}},
    {"host": "lap", "node_id": "n4", "resources": {"CPU": 12.0}},
]
MODELS = {
    "n1": "Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz",
    "n2": "AMD EPYC 7763 64-Core Processor",
    "n3": "AMD EPYC 7763 64-Core Processor",
    "n4": "12th Gen Intel(R) Core(TM) i7-12700H",
}


def test_names_are_short_and_stable():
    assert short_cpu_name(MODELS["n1"]) == "Xeon-Platinum-8480+"
    assert short_cpu_name(MODELS["n2"]) == "EPYC-7763"
    assert short_cpu_name(MODELS["n4"]) == "12th-Gen-Core-i7-12700H"
    assert short_cpu_name(None) == "unknown"
    assert cpu_class_name(MODELS["n2"], 64.0) == "cpu:EPYC-7763-64c"
    assert gpu_class_name({"accelerator_type:H200": 1.0}) == "gpu:H200"
    assert gpu_class_name({}, "NVIDIA GeForce RTX 3050") == "gpu:GeForce-RTX-3050"


def test_nodes_group_into_gpu_and_cpu_classes():
    classes = {c.name: c for c in hardware_classes(NODES, MODELS)}
    assert sorted(classes) == [
        "cpu:12th-Gen-Core-i7-12700H-12c",
        "cpu:EPYC-7763-64c",
        "cpu:Xeon-Platinum-8480+-16c",
        "gpu:H200",
    ]
    assert classes["cpu:EPYC-7763-64c"].node_ids == ("n2", "n3")  # two identical boxes, one class
    assert classes["gpu:H200"].device == "gpu" and classes["gpu:H200"].node_ids == ("n1",)
    # the 0-CPU head has no class; the GPU box is also a CPU class (the paper's same-machine CPU)
    assert not any("n0" in c.node_ids for c in classes.values())


def test_per_class_grid_pins_each_cell_and_sizes_cpu_cells_to_their_class():
    classes = hardware_classes(NODES, MODELS)
    spec = SweepSpec(name="pc", models=("resnet18",), devices=("cpu", "gpu"), per_class=True)
    alloc = resolve_allotment(spec, [16, 64, 12])
    configs = expand(spec, alloc, classes=classes)
    by_class = {c.trial.hw_class: c for c in configs}
    assert len(configs) == 4 and set(by_class) == {c.name for c in classes}
    epyc = by_class["cpu:EPYC-7763-64c"]
    assert epyc.resources == {"CPU": 64} and epyc.trial.cpus == 64  # every core: priority.py keeps Ray out
    laptop = by_class["cpu:12th-Gen-Core-i7-12700H-12c"]
    assert laptop.resources == {"CPU": 12} and laptop.trial.cpus == 12
    assert epyc.trial.cell == "resnet18/cpu:EPYC-7763-64c/bs128/loader/fp32"
    request = by_class["gpu:H200"].request()
    assert isinstance(request, PlacementGroupFactory)
    assert request.bundles == [{"CPU": 3.0, "GPU": 1.0}]
    assert unplaceable(configs, NODES) is None
    # a class whose nodes are gone cannot be placed, even if another node is big enough
    assert "cpu:EPYC-7763-64c cells" in unplaceable(
        configs, [n for n in NODES if n["node_id"] not in ("n2", "n3")]
    )


def test_without_per_class_rows_get_the_class_of_their_node():
    node = NODES[1]
    assert row_class("gpu", {"device_name": "NVIDIA H200"}, node) == "gpu:H200"
    assert row_class("cpu", {"cpu_model": MODELS["n1"]}, node) == "cpu:Xeon-Platinum-8480+-16c"
    assert row_class("cpu", {}, None) is None
