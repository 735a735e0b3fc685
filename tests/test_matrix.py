import copy
import dataclasses
import math

from ray import tune

from orchestrator.plan.matrix import (
    Allotment,
    expand,
    matrix_axes,
    param_space,
    resolve_allotment,
    unplaceable,
)
from orchestrator.plan.spec import SweepSpec
from orchestrator.plan.trial_plan import TrialPlan

SPEC = SweepSpec(
    name="m",
    models=("simple_cnn", "resnet18"),
    devices=("cpu", "gpu"),
    batch_sizes=(32, 128),
    repeats=2,
    workers=3,
)
ALLOT = Allotment(cpu_cell_cpus=16, gpu_cell_cpus=None)


def test_grid_is_declared_once_and_expanded_consistently():
    axes = matrix_axes(SPEC)
    space = param_space(expand(SPEC, ALLOT))
    configs = expand(SPEC, ALLOT)
    assert [TrialPlan.from_tune(c) for c in _resolved(space)] == configs  # plans round-trip through Tune
    assert len(configs) == math.prod(len(v) for v in axes.values()) == 2 * 2 * 2 * 2
    for name, values in axes.items():  # every axis value appears, and nothing else
        assert {getattr(c.trial, name) for c in configs} == set(values)
    assert len({c.trial.trial_id for c in configs}) == len(configs)


def test_resume_skips_exactly_the_trials_already_done():
    configs = expand(SPEC, ALLOT)
    done = {c.trial.trial_id for c in configs[::3]}
    left = expand(SPEC, ALLOT, skip=done)
    assert len(left) == len(configs) - len(done)
    assert not done & {c.trial.trial_id for c in left}
    assert [TrialPlan.from_tune(c) for c in _resolved(param_space(left))] == left


def _resolved(space: dict) -> list[dict]:
    """The trial configs Tune generates from a param_space, in order."""
    from ray.tune.search.variant_generator import generate_variants

    return [config for _, config in generate_variants(space)]


def test_the_param_space_grows_linearly_with_the_trials():
    # Tune deep-copies the unresolved space for every trial it generates: the plans must not be in it
    space = param_space(expand(SweepSpec(name="big", repeats=400, devices=("cpu",)), ALLOT))
    assert space["index"] == tune.grid_search(list(range(1200)))
    assert copy.deepcopy(space)["plan"].func is space["plan"].func  # the plans travel by reference


def test_resources_are_a_function_of_the_config():
    cpu, gpu = (next(c for c in expand(SPEC, ALLOT) if c.trial.device == d) for d in ("cpu", "gpu"))
    assert cpu.resources == {"CPU": 16}
    assert gpu.resources == {"CPU": 4, "GPU": 1}  # 1 driving the GPU + 3 DataLoader workers
    resident = _gpu_cell(dataclasses.replace(SPEC, pipelines=("resident",)), ALLOT)
    assert resident.resources == {"CPU": 1, "GPU": 1}
    assert _gpu_cell(SPEC, dataclasses.replace(ALLOT, gpu_cell_cpus=6)).resources == {"CPU": 6, "GPU": 1}
    # the trial uses what Ray reserved: threads + workers == allotment
    cfg = cpu.trial
    assert cfg.cpus == 16 and cfg.torch_threads + cfg.data_workers == 16


def _gpu_cell(spec, alloc):
    return next(c for c in expand(spec, alloc) if c.trial.device == "gpu")


def test_default_cpu_cell_has_the_largest_node_and_uses_every_core():
    alloc = resolve_allotment(SPEC, [4, 16, 8])
    assert (alloc.cpu_cell_cpus, alloc.cpu_cell_reserve) == (16, 0)
    cpu = next(c for c in expand(SPEC, alloc) if c.trial.device == "cpu")
    assert cpu.resources == {"CPU": 16}  # the whole node in Ray's books: nothing runs beside it
    cfg = cpu.trial
    assert cfg.cpus == 16 and cfg.torch_threads + cfg.data_workers == 16  # and the trial uses all of it
    # a 2-core node: 2 threads, not 1 (keeping a core for Ray's daemons halved such a host)
    assert resolve_allotment(SPEC, [2]) == Allotment(cpu_cell_cpus=2, gpu_cell_cpus=None, cpu_cell_reserve=0)
    assert resolve_allotment(SPEC, [1]) == Allotment(cpu_cell_cpus=1, gpu_cell_cpus=None, cpu_cell_reserve=0)
    spec = SweepSpec(name="m", cpus_per_trial=6, gpu_cpus=2)
    assert resolve_allotment(spec, [16]) == Allotment(cpu_cell_cpus=6, gpu_cell_cpus=2, cpu_cell_reserve=0)


def test_placement_modes_decide_what_ray_books_and_what_the_trial_uses():
    nodes = [16, 8]
    part = SweepSpec(name="m", placement="partitioned", devices=("cpu", "gpu"))
    alloc = resolve_allotment(part, nodes)
    assert (alloc.cpu_cell_cpus, alloc.cpu_cell_reserve) == (8, 0)  # two cells share the 16-core node
    cpu = next(c for c in expand(part, alloc) if c.trial.device == "cpu")
    assert cpu.resources == {"CPU": 8} and cpu.pins_cpus
    assert cpu.trial.torch_threads + cpu.trial.data_workers == 8
    packed = SweepSpec(name="m", placement="packed", devices=("cpu", "gpu"))
    alloc = resolve_allotment(packed, nodes)
    cpu, gpu = (next(c for c in expand(packed, alloc) if c.trial.device == d) for d in ("cpu", "gpu"))
    assert cpu.resources == {"CPU": 1} and cpu.trial.cpus == 16  # books 1, uses 16
    assert gpu.resources == {"CPU": 1, "GPU": 1} and not gpu.pins_cpus
    exclusive = next(c for c in expand(SPEC, resolve_allotment(SPEC, nodes)) if c.trial.device == "cpu")
    assert not exclusive.pins_cpus


def test_gpu_cells_on_a_cpu_only_cluster_are_refused_in_one_line():
    nodes = [{"host": "a", "resources": {"CPU": 16.0}}, {"host": "b", "resources": {"CPU": 8.0}}]
    message = unplaceable(expand(SPEC, ALLOT), nodes)
    assert message.startswith("gpu cells need 1 GPU + 4 CPUs, but no node has that (a: 16 CPUs; b: 8 CPUs)")
    assert "drop gpu from --devices" in message and "\n" not in message
    with_gpu = nodes + [{"host": "g", "resources": {"CPU": 16.0, "GPU": 1.0}}]
    assert unplaceable(expand(SPEC, ALLOT), with_gpu) is None


def test_cpu_cells_larger_than_any_node_are_refused():
    nodes = [{"host": "a", "resources": {"CPU": 8.0, "GPU": 1.0}}]
    message = unplaceable(expand(SPEC, ALLOT), nodes)
    assert message.startswith("cpu cells need 16 CPUs") and "--cpus-per-trial" in message
