import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.spec import (
    SpecError,
    SweepSpec,
    TrialProcess,
    parse_choices,
    parse_csv,
    parse_ints,
    spec_differences,
)
from trainables.config import Device, Pipeline


def test_defaults_are_the_papers_matrix():
    spec = SweepSpec(name="x")
    assert spec.models == ("simple_cnn", "resnet18", "resnet50")
    assert spec.devices == (Device.cpu, Device.gpu) and spec.epochs == 10 and spec.batch_sizes == (128,)


def test_library_callers_may_pass_strings():
    spec = SweepSpec(name="x", devices=["cpu"], pipelines=("resident",))
    assert spec.devices == (Device.cpu,) and spec.pipelines == (Pipeline.resident,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"models": ("resnet81",)}, "--models: unknown model 'resnet81'; did you mean resnet18"),
        ({"models": ("vit_b_16",)}, "--models: vit_b_16 does not accept native 32x32 input"),
        ({"epochs": 0}, "--epochs: must be >= 1, got 0"),
        ({"workers": -2}, "--workers: must be >= 0, got -2"),
        ({"max_steps": 0}, "--max-steps: must be >= 1, got 0"),
        ({"repeats": 0}, "--repeats: must be an integer >= 1, got 0"),
        ({"dataset": "mnist"}, "--dataset: must be synthetic, cifar10 or folder:PATH"),
        ({"name": "../escape"}, "--name: '../escape' must be"),
        ({"devices": ()}, "--devices: give at least one value"),
        ({"cpus_per_trial": 0}, "--cpus-per-trial: must be an integer >= 1"),
        ({"trial_process": "thread"}, "--trial-process: 'thread' is not one of child, inline"),
    ],
)
def test_bad_specs_say_which_option_and_why(kwargs, message):
    with pytest.raises(SpecError) as info:
        SweepSpec(**{"name": "x", **kwargs})
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_list_parsing_errors():
    with pytest.raises(SpecError, match="--batch-size: 'abc' is not an integer"):
        parse_ints("32,abc", "--batch-size")
    with pytest.raises(SpecError, match="--batch-size: 0 must be at least 1"):
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
    with pytest.raises(SpecError, match="must be at least 1"):
        parse_ints(str(value), "--batch-size")


def test_trials_run_in_a_child_process_unless_asked_inline():
    assert SweepSpec(name="x").trial_process is TrialProcess.child
    spec = SweepSpec(name="x", trial_process="inline")
    assert spec.trial_process is TrialProcess.inline and spec.to_dict()["trial_process"] == "inline"


def test_a_spec_stored_before_trial_process_existed_reads_as_inline():
    # such sweeps ran their loop inside the Ray worker: resuming them in a child would change what is measured
    spec = SweepSpec(name="x")
    stored = {k: v for k, v in spec.to_dict().items() if k != "trial_process"}
    assert spec_differences(stored, spec) == ["trial_process: 'inline' -> 'child'"]
    assert spec_differences(stored, SweepSpec(name="x", trial_process="inline")) == []
    assert spec_differences(spec.to_dict(), spec) == []
