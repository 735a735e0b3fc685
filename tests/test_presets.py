"""`benchctl sweep --preset paper`: what the preset sets, through the real CLI.

A --resume against a stored spec is refused before Ray starts with every difference named, so it shows
the spec the command line built without running a sweep.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.plan.spec import SweepSpec
from orchestrator.results.files import write_json_atomic

runner = CliRunner()


@pytest.fixture
def stored(tmp_path):
    """A sweep `k` stored with none of the paper's settings but its data set (so nothing downloads)."""
    spec = SweepSpec(name="k", out=tmp_path, models=("simple_cnn",), devices=("cpu",), epochs=1,
                     batch_sizes=(64,), pipelines=("resident",), precisions=("amp",), max_steps=3,
                     max_eval_steps=1)  # fmt: skip
    write_json_atomic({"spec": spec.to_dict(), "provenance": {}}, tmp_path / "k" / "spec.json")
    return tmp_path


def built_against(stored, *args) -> str:
    """The one-line --resume refusal: `field: stored -> what the command line built` per difference."""
    result = runner.invoke(
        app, ["sweep", "--dataset", "synthetic", *args, "--out", str(stored), "--name", "k", "--resume"]
    )
    assert result.exit_code == 2, result.output
    assert "\n" not in result.stderr.strip()
    return result.stderr


def test_preset_paper_sets_the_papers_study(stored):
    line = built_against(stored, "--preset", "paper")
    for change in (
        "models: ['simple_cnn'] -> ['simple_cnn', 'resnet18', 'resnet50']",
        "devices: ['cpu'] -> ['cpu', 'gpu']",
        "batch_sizes: [64] -> [128]",
        "pipelines: ['resident'] -> ['loader']",
        "precisions: ['amp'] -> ['fp32']",
        "epochs: 1 -> 10",
        "max_steps: 3 -> None",
        "max_eval_steps: 1 -> None",
    ):
        assert change in line, line
    assert "dataset" not in line  # --dataset given: the preset's cifar10 is overridden


def test_options_given_beside_the_preset_override_it(stored):
    line = built_against(
        stored, "--preset", "paper", "--epochs", "1", "--batch-size", "64", "--devices", "cpu"
    )
    assert "epochs" not in line and "batch_sizes" not in line and "devices" not in line
    assert "pipelines: ['resident'] -> ['loader']" in line  # not given: still the preset's
    capped = built_against(stored, "--preset", "paper", "--max-steps", "3", "--precision", "amp")
    assert "max_steps" not in capped and "precisions" not in capped and "epochs: 1 -> 10" in capped


def test_an_unknown_preset_is_one_line_exit_2(stored):
    result = runner.invoke(app, ["sweep", "--preset", "quick", "--out", str(stored), "--name", "x"])
    assert result.exit_code == 2 and "--preset" in result.stderr and "paper" in result.stderr
    assert not (stored / "x").exists()
