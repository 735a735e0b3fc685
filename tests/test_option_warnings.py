"""An option given where it has no effect is a one-line warning, not an error, and the sweep goes on."""

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.plan.hints import unused_options

runner = CliRunner()


def test_options_without_effect_in_the_combination_are_named():
    cifar = {"dataset": "cifar10", "pipelines": ("loader",)}
    assert unused_options(cifar, {"train_size", "test_size", "workers"}) == [
        "--train-size has no effect with --dataset cifar10: only synthetic data is generated at a size",
        "--test-size has no effect with --dataset cifar10: only synthetic data is generated at a size",
    ]
    folder = {"dataset": "folder:/data/x", "pipelines": ("resident",)}
    assert unused_options(folder, {"train_size", "workers"}) == [
        "--train-size has no effect with folder data: only synthetic data is generated at a size",
        "--workers has no effect with --pipeline resident: DataLoader workers serve the loader pipeline only",
    ]
    both = {"dataset": "synthetic", "pipelines": ("loader", "resident")}
    assert unused_options(both, {"train_size", "workers"}) == []  # loader cells use the workers
    assert unused_options(cifar, set()) == []  # a default is never warned about
    off = {"dataset": "synthetic", "checkpoint": False}
    assert unused_options(off, {"checkpoint_every", "checkpoint_every_s"}) == [
        "--checkpoint-every has no effect with --no-checkpoint: no trial checkpoints",
        "--checkpoint-every-s has no effect with --no-checkpoint: no trial checkpoints",
    ]
    assert unused_options({**off, "checkpoint": True}, {"checkpoint_every"}) == []


@pytest.mark.parametrize(
    ("args", "warning"),
    [
        (["--pipeline", "resident", "--workers", "3"], "--workers has no effect with --pipeline resident"),
        (
            ["--dataset", "cifar10", "--train-size", "100"],
            "--train-size has no effect with --dataset cifar10",
        ),
        (
            ["--no-checkpoint", "--checkpoint-every", "2"],
            "--checkpoint-every has no effect with --no-checkpoint",
        ),
    ],
)
def test_the_sweep_command_warns_in_one_line_and_goes_on(tmp_path, args, warning):
    result = runner.invoke(app, ["sweep", "--devices", "cpu", "--out", str(tmp_path), "--dry-run", *args])
    warnings = [ln for ln in result.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and warnings[0].startswith(f"benchctl: warning: {warning}"), result.output
    if "cifar10" not in args:  # (a cifar10 dry run may refuse a missing data set: not this test's point)
        assert result.exit_code == 0, result.output
