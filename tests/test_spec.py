import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.plan.parse import parse_choices, parse_csv, parse_ints
from orchestrator.plan.presets import PRESETS, Preset, preset_fields
from orchestrator.plan.spec import (
    SpecError,
    SweepSpec,
    TrialProcess,
    condition_differences,
    conditions,
    resolve_devices,
    spec_differences,
)
from trainables.config import Device, Pipeline, Precision, StartMethod


def test_defaults_are_the_papers_matrix_on_the_devices_the_nodes_have():
    spec = SweepSpec(name="x")
    assert spec.models == ("simple_cnn", "resnet18", "resnet50")
    assert spec.devices is None and spec.epochs == 10 and spec.batch_sizes == (128,)  # None: resolve_devices


def test_library_callers_may_pass_strings():
    spec = SweepSpec(name="x", devices=["cpu"], pipelines=("resident",))
    assert spec.devices == (Device.cpu,) and spec.pipelines == (Pipeline.resident,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"models": ("resnet81",)}, "--models: unknown model 'resnet81'; did you mean resnet18"),
        ({"models": ("vit_b_16",)}, "--models: vit_b_16 does not accept native 32x32 input"),
        ({"epochs": 0}, "--epochs: 0 is not allowed; must be at least 1"),
        ({"workers": -2}, "--workers: -2 is not allowed; must be at least 0"),
        ({"max_steps": 0}, "--max-steps: 0 is not allowed; must be at least 1"),
        ({"repeats": 0}, "--repeats: 0 is not allowed; must be at least 1"),
        (
            {"dataset": "mnist"},
            "--dataset: 'mnist' is not allowed; must be synthetic, cifar10 or folder:PATH",
        ),
        ({"name": "../escape"}, "--name: '../escape' is not allowed; must be"),
        ({"devices": ()}, "--devices: give at least one value"),
        ({"cpus_per_trial": 0}, "--cpus-per-trial: 0 is not allowed; must be at least 1"),
        (
            {"trial_process": "thread"},
            "--trial-process: 'thread' is not allowed; must be one of child, inline",
        ),
        (
            {"start_method": "spawn"},
            "--start-method: 'spawn' is not allowed; must be one of fresh, prestarted, forkserver",
        ),
        ({"start_method": "forkserver", "trial_process": "inline"}, "--start-method forkserver: starts a"),
        ({"models": ("sleep:0.5",)}, "--models sleep:0.5: a sleep workload runs in the Ray worker only"),
        (
            {"models": ("sleep:soon",), "trial_process": "inline"},
            "--models: 'sleep:soon' is not allowed; a sleep workload is sleep:SECONDS",
        ),
    ],
)
def test_bad_specs_say_which_option_and_why(kwargs, message):
    with pytest.raises(SpecError) as info:
        SweepSpec(**{"name": "x", **kwargs})
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_list_parsing_errors():
    with pytest.raises(SpecError, match="--batch-size: 'abc' is not allowed; must be an integer"):
        parse_ints("32,abc", "--batch-size")
    with pytest.raises(SpecError, match="--batch-size: 0 is not allowed; must be at least 1"):
        parse_ints("0", "--batch-size")
    with pytest.raises(SpecError, match="--devices: unknown value 'tpu'; choose from cpu, gpu"):
        parse_choices("cpu,tpu", Device, "--devices")
    with pytest.raises(SpecError, match="names a value twice"):
        parse_csv("cpu,cpu", "--devices")
    with pytest.raises(SpecError, match="comma-separated"):
        parse_csv("a,,b", "--models")


@given(st.lists(st.integers(min_value=1, max_value=10**6), min_size=1, max_size=6, unique=True))
def test_parse_ints_round_trips_any_positive_list(values):
    assert parse_ints(",".join(map(str, values)), "--batch-size") == tuple(values)


@given(st.integers(max_value=0))
def test_parse_ints_refuses_every_non_positive(value):
    with pytest.raises(SpecError, match="is not allowed; must be at least 1"):
        parse_ints(str(value), "--batch-size")


def test_trials_run_in_a_child_process_unless_asked_inline():
    assert SweepSpec(name="x").trial_process is TrialProcess.child
    spec = SweepSpec(name="x", trial_process="inline")
    assert spec.trial_process is TrialProcess.inline and spec.to_dict()["trial_process"] == "inline"


def test_child_processes_are_prestarted_unless_asked_otherwise_and_old_specs_read_as_fresh():
    assert SweepSpec(name="x").start_method is StartMethod.prestarted
    assert SweepSpec(name="x", trial_process="inline").start_method is StartMethod.fresh  # it has no child
    spec = SweepSpec(name="x", start_method="forkserver")
    assert spec.start_method is StartMethod.forkserver and spec.to_dict()["start_method"] == "forkserver"
    # every sweep before the option started its children fresh: such a spec resumes as fresh
    stored = {k: v for k, v in SweepSpec(name="x").to_dict().items() if k != "start_method"}
    assert spec_differences(stored, SweepSpec(name="x", start_method="fresh")) == []
    assert spec_differences(stored, spec) == ["start_method: 'fresh' -> 'forkserver'"]
    assert spec_differences(stored, SweepSpec(name="x")) == ["start_method: 'fresh' -> 'prestarted'"]


def test_a_spec_stored_before_trial_process_existed_reads_as_inline():
    # such sweeps ran their loop inside the Ray worker: resuming them in a child would change what is measured
    spec = SweepSpec(name="x", start_method="fresh")  # what such sweeps did (an inline spec resolves to it)
    stored = {k: v for k, v in spec.to_dict().items() if k != "trial_process"}
    assert spec_differences(stored, spec) == ["trial_process: 'inline' -> 'child'"]
    assert spec_differences(stored, SweepSpec(name="x", trial_process="inline")) == []
    assert spec_differences(spec.to_dict(), spec) == []


# ---- issue 14: devices resolved from the nodes, one comparison of conditions, presets ---------------

CPU_NODE = {"host": "a", "resources": {"CPU": 8.0}}
GPU_NODE = {"host": "b", "resources": {"CPU": 16.0, "GPU": 2.0}}


def test_without_devices_a_sweep_runs_what_the_nodes_have_and_says_so():
    said = []
    cpu_only = resolve_devices(SweepSpec(name="x"), [CPU_NODE], said.append)
    assert cpu_only.devices == (Device.cpu,) and cpu_only.to_dict()["devices"] == ["cpu"]
    assert said == ["benchctl: --devices not given: running cpu (no GPU on this machine)"]
    both = resolve_devices(SweepSpec(name="x", cluster="lab.yaml"), [CPU_NODE, GPU_NODE], said.append)
    assert both.devices == (Device.cpu, Device.gpu)
    assert said[-1] == "benchctl: --devices not given: running cpu,gpu (2 GPU(s) on the cluster)"
    asked = SweepSpec(name="x", devices=("gpu",))
    assert resolve_devices(asked, [CPU_NODE], said.append) is asked and len(said) == 2  # given: untouched


def test_a_resume_without_devices_runs_the_stored_ones(tmp_path):
    stored = SweepSpec(name="k", out=tmp_path, devices=("cpu", "gpu"))
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "spec.json").write_text(json.dumps({"spec": stored.to_dict()}))
    again = SweepSpec(name="k", out=tmp_path, resume=True)
    assert spec_differences(stored.to_dict(), again) == []  # not given: not a change
    said = []
    resolved = resolve_devices(again, [CPU_NODE], said.append)  # this machine has no GPU: still the stored
    assert resolved.devices == (Device.cpu, Device.gpu) and "as " in said[0] and "spec.json" in said[0]
    assert spec_differences(stored.to_dict(), SweepSpec(name="k", devices=("cpu",))) == [
        "devices: ['cpu', 'gpu'] -> ['cpu']"
    ]


def test_one_comparison_of_conditions_reads_a_missing_key_as_before_the_field_existed():
    spec = SweepSpec(name="a", devices=("cpu",))
    old = {k: v for k, v in spec.to_dict().items() if k not in ("trial_process", "epochs")}
    # no epochs stored: the default (10); no trial_process: inline, what benchctl did before it existed
    assert condition_differences(old, spec.to_dict()) == {"trial_process": ("inline", "child")}
    assert condition_differences(old, {**spec.to_dict(), "epochs": 3}) == {
        "epochs": (10, 3),
        "trial_process": ("inline", "child"),
    }
    # grid axes and what a --resume may change (name, cluster, preset, ...) are not conditions
    other = {**spec.to_dict(), "name": "b", "models": ["resnet18"], "repeats": 3, "preset": "paper"}
    assert condition_differences(spec.to_dict(), other) == {}
    assert "epochs" in conditions({}) and "models" not in conditions({}) and "name" not in conditions({})
    # resume reads the same way: the spec_differences of a missing key is its condition difference
    assert spec_differences(old, spec) == ["trial_process: 'inline' -> 'child'"]


def test_preset_is_a_label_that_old_specs_resume_without():
    spec = SweepSpec(name="x", devices=("cpu",), preset="paper")
    assert spec.preset is Preset.paper and spec.to_dict()["preset"] == "paper"
    stored = {k: v for k, v in spec.to_dict().items() if k != "preset"}  # written before --preset existed
    assert spec_differences(stored, spec) == []
    with pytest.raises(SpecError, match="--preset: 'quick' is not allowed; must be one of paper"):
        SweepSpec(name="x", preset="quick")


def test_the_paper_preset_is_the_papers_study():
    spec = SweepSpec(name="x", preset="paper", **preset_fields(Preset.paper))
    assert spec.dataset == "cifar10" and spec.models == ("simple_cnn", "resnet18", "resnet50")
    assert spec.devices == (Device.cpu, Device.gpu) and spec.batch_sizes == (128,)
    assert spec.pipelines == (Pipeline.loader,) and spec.precisions == (Precision.fp32,)
    assert spec.epochs == 10 and spec.max_steps is None and spec.max_eval_steps is None
    # a field the user gave an option for is left to the user
    assert set(preset_fields("paper", given={"batch_sizes", "dataset"})) == set(
        PRESETS[Preset.paper].settings
    ) - {"batch_sizes", "dataset"}
