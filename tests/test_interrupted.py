"""Interrupted sweeps: the resume command Ctrl-C prints, `report` on a sweep cut before anything
finished, and long paths cut to their tail in terminal lines."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.errors import short_path, short_paths
from orchestrator.plan.hints import resume_command
from orchestrator.results.files import file_key, write_rows
from tests.test_report import identity, trial_row

runner = CliRunner()


def test_short_path_keeps_the_tail_in_whole_components():
    assert short_path("/tmp/a/b") == "/tmp/a/b"
    long = "/home/user/benchctl/results/" + "x" * 30 + "/simple_cnn/cpu/bs128/checkpoint_000003"
    assert short_path(long) == "…/simple_cnn/cpu/bs128/checkpoint_000003"
    assert len(short_path(long, width=30)) <= 30 and short_path(long, width=30).endswith("/checkpoint_000003")
    trial = "tune_trial_3f2a1_00000_0_batch_size=128,compile=off,device=cpu,model=simple_cnn"
    tune = f"/r/s/.tune/s/{trial}/checkpoint_000003"  # Tune's trial folder: too long to keep whole
    assert short_path(tune) == f"…/{trial[:39]}…/checkpoint_000003" and len(short_path(tune)) == 60
    assert short_path("/" + "z" * 80) == "…/" + "z" * 80  # the last component stays whole
    text = f"fetching its checkpoint ({tune}) after epoch 3"
    assert short_paths(text) == f"fetching its checkpoint ({short_path(tune)}) after epoch 3"
    assert (
        short_paths("generating 5,120 synthetic images, 1/2 done")
        == "generating 5,120 synthetic images, 1/2 done"
    )


def test_the_resume_command_names_out_only_when_it_is_not_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resume_command(Path("results/s1")) == "benchctl sweep --resume --name s1"
    assert resume_command(tmp_path / "results" / "s1") == "benchctl sweep --resume --name s1"
    assert (
        resume_command(Path("/data/my runs/s1")) == "benchctl sweep --resume --name s1 --out '/data/my runs'"
    )


def _started_sweep(results_dir: Path) -> None:
    results_dir.mkdir(parents=True)
    (results_dir / "spec.json").write_text(json.dumps({"spec": {"name": results_dir.name}}))


@pytest.mark.parametrize("started", [True, False], ids=["after-it-began", "before-it-began"])
def test_ctrl_c_prints_the_exact_resume_command(tmp_path, monkeypatch, started):
    import orchestrator.run.sweep as sweep_module

    def interrupted(spec, **_):
        if started:
            _started_sweep(spec.results_dir)
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "run_sweep", interrupted)
    result = runner.invoke(app, ["sweep", "--devices", "cpu", "--out", str(tmp_path / "r"), "--name", "cut"])
    assert result.exit_code == 130
    lines = result.stderr.strip().splitlines()
    if started:
        expected = f"benchctl sweep --resume --name cut --out {tmp_path / 'r'}"
        assert lines == [f"benchctl: interrupted; continue it with: {expected}"]
    else:  # nothing was written: nothing to resume
        assert lines == ["benchctl: interrupted"]


def test_report_on_a_sweep_cut_before_its_first_epoch_says_how_to_continue(tmp_path):
    d = tmp_path / "s1"
    _started_sweep(d)
    result = runner.invoke(app, ["report", str(d)])
    assert result.exit_code == 2 and "holds no benchctl results" not in result.stderr
    expected = f"`benchctl sweep --resume --name s1 --out {tmp_path}`"
    assert result.stderr.strip() == (
        f"benchctl: error: {d}: the sweep finished no epoch yet, so there is nothing to report; "
        f"continue it with {expected}"
    )
    # a trial row written (its attempt cut off, status partial), still no epoch
    ident = identity("resnet18", "cpu")
    write_rows(d, "trials", file_key(ident["trial"], 1), [trial_row(ident, "partial")])
    result = runner.invoke(app, ["report", str(d)])
    assert result.exit_code == 2
    assert (
        f"{d}: the sweep finished no epoch yet, nothing to report; continue it with {expected}"
        in result.stderr
    )
    assert not (d / "report").exists()
