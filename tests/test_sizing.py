"""orchestrator.plan.sizing: on a lab whose nodes differ in cores, every node gets CPU cells by default."""

from collections import Counter

from orchestrator.plan.planning import idle_nodes, plan_sweep
from orchestrator.plan.spec import SweepSpec, conditions, resume_fields


def _node(host: str, cpus: int, gpus: int = 0) -> dict:
    return {"host": host, "node_id": host, "resources": {"CPU": cpus, **({"GPU": gpus} if gpus else {})}}


LAB = [_node("head", 0), _node("big", 16), _node("mid1", 4), _node("mid2", 4), _node("tiny", 1)]


def _plan(nodes, **spec):
    lines = []
    fields = {"models": ("simple_cnn", "resnet18"), "devices": ("cpu",), "repeats": 6, "name": "s", **spec}
    planned = plan_sweep(SweepSpec(**fields), nodes, lines.append, cpu_models=lambda n: {})
    return planned.plans, lines


def test_every_node_size_gets_cpu_cells_with_its_own_cores():
    plans, lines = _plan(LAB)
    assert [i.split()[0] for i in idle_nodes(plans, LAB)] == ["head"]  # only the 0-CPU head sits idle
    by_size = Counter((p.node_ids, p.cpus, p.resources["CPU"]) for p in plans)
    sizes = {cpus: nodes for nodes, cpus, _ in by_size}
    assert sizes == {16: ("big",), 4: ("mid1", "mid2"), 1: ("tiny",)}  # each pinned to nodes of its size
    assert all(p.cpus == p.resources["CPU"] for p in plans)  # exclusive: Ray books what the trial uses
    counts = {cpus: n for (_, cpus, _), n in by_size.items()}
    # list scheduling, a trial on c cores counted as 1/c: more trials where there are more cores per slot
    assert sum(counts.values()) == 12 and counts[16] > counts[4] > counts[1] >= 1
    assert any(line.startswith("benchctl: cpu cells sized to their nodes:") for line in lines)
    # the cell ids are unchanged: sizing says where a trial runs, not what it measures
    assert {p.trial.cell for p in plans} == {f"{m}/cpu/bs128/loader/fp32" for m in ("simple_cnn", "resnet18")}


def test_uniform_cells_sizes_every_cpu_cell_to_the_largest_node():
    plans, lines = _plan(LAB, uniform_cells=True)
    assert {(p.cpus, p.node_ids) for p in plans} == {(16, ())}
    idle = idle_nodes(plans, LAB)
    assert [i.split()[0] for i in idle] == ["head", "mid1", "mid2", "tiny"]
    assert "--uniform-cells: sized to the largest node" in idle[1]
    assert not any("sized to their nodes" in line for line in lines)


def test_partitioned_cells_take_half_of_their_nodes():
    plans, _ = _plan(LAB, placement="partitioned")
    assert {p.node_ids: p.cpus for p in plans} == {("big",): 8, ("mid1", "mid2"): 2, ("tiny",): 1}


def test_one_size_or_an_explicit_size_leaves_the_plans_as_they_were():
    same = [_node("a", 4), _node("b", 4)]
    plans, lines = _plan(same)
    assert {(p.cpus, p.node_ids) for p in plans} == {(4, ())} and not lines
    explicit, _ = _plan(LAB, cpus_per_trial=1)
    assert {(p.cpus, p.node_ids) for p in explicit} == {(1, ())}


def test_gpu_nodes_keep_their_cores_for_gpu_cells():
    lab = [_node("gpubox", 32, gpus=1), _node("c1", 8), _node("c2", 8)]
    plans, _ = _plan(lab, devices=("cpu", "gpu"))
    cpu = [p for p in plans if p.trial.device.value == "cpu"]
    gpu = [p for p in plans if p.trial.device.value == "gpu"]
    # uniform cells would be 32 cores: only the GPU box could run them, c1 and c2 idle
    assert {(p.cpus, p.node_ids) for p in cpu} == {(8, ("c1", "c2"))}
    assert all(not p.node_ids for p in gpu) and idle_nodes(plans, lab) == []
    cpu_only, _ = _plan(lab)  # no gpu cells: the GPU box's cores run CPU cells too
    assert {p.node_ids for p in cpu_only} == {("gpubox",), ("c1", "c2")}


def test_a_sweep_stored_before_sizing_resumes_with_uniform_cells():
    assert resume_fields({"models": ["simple_cnn"]})["uniform_cells"] is True  # as it ran
    assert resume_fields({"models": ["simple_cnn"], "uniform_cells": False})["uniform_cells"] is False
    assert "uniform_cells" not in conditions({})  # where cells ran is no condition: sweeps still pool


def test_a_resume_sizes_only_the_trials_left():
    plans, _ = _plan(LAB)
    done = {p.trial.trial_id for p in plans[:10]}
    lines = []
    spec = SweepSpec(models=("simple_cnn", "resnet18"), devices=("cpu",), repeats=6, name="s")
    rest = plan_sweep(spec, LAB, lines.append, skip=done, cpu_models=lambda n: {}).plans
    assert len(rest) == 2 and {p.trial.trial_id for p in rest}.isdisjoint(done)
    assert {p.cpus for p in rest} == {16, 4}  # the two trials left: to the slots free first, largest first
