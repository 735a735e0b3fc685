"""`--resume`: a sweep whose driver was SIGKILLed is completed with exactly one set of rows per cell.

Real Ray (local), real training. The killed driver's Ray is given its own temp dir (RAY_TMPDIR), so
the test can find and end exactly the Ray processes that run started (Ray 2.60's per-node agents
outlive a SIGKILLed driver; its raylet and GCS do not).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas.testing as pdt
import pytest
from procutil import sigkill_after_first_trial, sigkill_when
from typer.testing import CliRunner

from orchestrator.analysis.stats import ok_epochs
from orchestrator.cli import app
from orchestrator.results.reader import read_results

runner = CliRunner()
SWEEP = [
    "sweep",
    "--models",
    "simple_cnn",
    "--devices",
    "cpu",
    "--epochs",
    "2",
    "--max-steps",
    "15",
    "--batch-size",
    "32",
    "--train-size",
    "2048",
    "--test-size",
    "128",
    "--max-eval-steps",
    "1",
    "--repeats",
    "3",
]




def test_sigkill_of_the_driver_then_resume_completes_the_set_once(tmp_path, ray_tmp):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "orchestrator", *SWEEP, "--out", str(out), "--name", "k"]
    proc = subprocess.Popen(
        cmd, env={**os.environ, "RAY_TMPDIR": ray_tmp}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    sigkill_after_first_trial(proc, out / "k")
    assert not (out / "k" / "compact").exists()  # a killed sweep never reached its end
    _, before = read_results(out / "k")
    assert 1 <= len(before) < 3

    done = before[before.status == "ok"]
    assert 1 <= len(done) < 3

    result = runner.invoke(app, [*SWEEP, "--out", str(out), "--name", "k", "--resume"])
    assert result.exit_code == 0, result.output
    assert f"{len(done)} trial{'s' * (len(done) != 1)} complete, {3 - len(done)} to run" in result.output
    epochs, trials = read_results(out / "k")
    ok = trials[trials.status == "ok"]
    assert sorted(ok.trial) == [f"simple_cnn/cpu/bs32/loader/fp32/r{r}" for r in range(3)]
    assert set(trials.status) <= {"ok", "partial"}  # the cut attempt stays on record as partial
    final = ok_epochs(epochs, trials)
    assert len(final) == 3 * 2 and not final.duplicated(["trial", "epoch"]).any()
    assert (out / "k" / "compact" / "trials.parquet").is_file()  # the resume's end compacted them all
    shutil.rmtree(out / "k" / "compact")
    loose_epochs, loose_trials = read_results(out / "k")
    pdt.assert_frame_equal(loose_epochs, epochs)
    pdt.assert_frame_equal(loose_trials, trials)

    again = runner.invoke(app, [*SWEEP, "--out", str(out), "--name", "k", "--resume"])
    assert again.exit_code == 0 and "3 trials complete, 0 to run" in again.output
    assert len(ok_epochs(*read_results(out / "k"))) == 6


def test_driver_sigkilled_in_epoch_3_then_resume_continues_the_trial_from_its_checkpoint(tmp_path, ray_tmp):
    out = tmp_path / "out"
    args = ["sweep", "--models", "simple_cnn", "--devices", "cpu", "--epochs", "6", "--max-steps", "12",
            "--batch-size", "32", "--train-size", "1024", "--test-size", "128", "--max-eval-steps", "1",
            "--workers", "0", "--out", str(out), "--name", "c"]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator", *args],
                            env={**os.environ, "RAY_TMPDIR": ray_tmp}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    # killed as soon as epoch 2's checkpoint is on record: the trial is then in its epoch 3
    rows = sigkill_when(proc, out / "c", lambda rows: any(r["checkpoint_epoch"] == 2 for r in rows),
                        "epoch 2 was checkpointed")  # fmt: skip
    epochs, trials = read_results(out / "c")
    assert list(trials.status) == ["partial"] and 2 <= len(epochs) < 6  # finished epochs are on disk
    cut_at = int(trials.checkpoint_epoch.iloc[0])
    assert rows and cut_at >= 2

    result = runner.invoke(app, [*args, "--resume"])
    assert result.exit_code == 0, result.output
    assert "0 trials complete, 1 to run, 1 continuing from their checkpoints" in result.output
    epochs, trials = read_results(out / "c")
    second = trials[trials.attempt == 2].iloc[0]
    assert second.status == "ok" and second.restored_from_epoch == cut_at  # not from epoch 1
    new = epochs[epochs.attempt == 2].sort_values("epoch")
    assert list(new.epoch) == list(range(cut_at + 1, 7))
    assert list(new.restored) == [True] + [False] * (5 - cut_at) and new.warmup.iloc[0]
    final = ok_epochs(epochs, trials)
    assert list(final.epoch) == [1, 2, 3, 4, 5, 6]  # six unique epochs, one run
    assert final.restored.fillna(False).sum() == 1 and set(final.attempt) == {2}


def _fake_sweep_dir(root: Path, epochs: int = 2) -> Path:
    """A results directory as `sweep` leaves it, without running one (spec.json is all --resume reads
    before it compares)."""
    from orchestrator.plan.spec import SweepSpec
    from orchestrator.results.files import write_json_atomic

    spec = SweepSpec(models=("simple_cnn",), devices=("cpu",), epochs=epochs, name="k", out=root)
    write_json_atomic({"spec": spec.to_dict(), "provenance": {}}, root / "k" / "spec.json")
    return root / "k"


def test_resume_with_a_different_spec_is_refused_naming_the_difference(tmp_path):
    _fake_sweep_dir(tmp_path, epochs=3)
    args = ["sweep", "--models", "simple_cnn", "--devices", "cpu", "--epochs", "2", "--batch-size", "64"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path), "--name", "k", "--resume"])
    assert result.exit_code == 2
    line = result.output.strip()
    assert line.startswith("benchctl: error: --resume:") and "\n" not in line
    assert "epochs: 3 -> 2" in line and "batch_sizes: [128] -> [64]" in line


def test_resume_of_nothing_and_without_a_name_are_refused(tmp_path):
    missing = runner.invoke(app, ["sweep", "--out", str(tmp_path), "--name", "nope", "--resume"])
    assert missing.exit_code == 2 and "no spec.json" in missing.output
    assert not (tmp_path / "nope").exists()
    unnamed = runner.invoke(app, ["sweep", "--out", str(tmp_path), "--resume"])
    assert unnamed.exit_code == 2 and "--name NAME" in unnamed.output


def test_an_existing_name_without_resume_points_at_resume(tmp_path):
    _fake_sweep_dir(tmp_path)
    result = runner.invoke(app, ["sweep", "--devices", "cpu", "--out", str(tmp_path), "--name", "k"])
    assert result.exit_code == 2 and "--resume" in result.output


@pytest.mark.slow  # a real sweep and its resume: starts Ray
def test_a_sweep_stored_compact_resumes_and_keeps_its_stored_rows(tmp_path):
    # the form reports/ keeps a study in: compact/ and spec.json, no per-trial file. Here one of two
    # repeats is missing from it: the resume runs that one, the stored trial's rows stay as they were
    from orchestrator.results.compact import compact, stored_compact

    out = tmp_path / "out"
    args = ["sweep", "--models", "simple_cnn", "--devices", "cpu", "--epochs", "2", "--max-steps", "2",
            "--batch-size", "32", "--train-size", "256", "--test-size", "128", "--max-eval-steps", "1",
            "--workers", "0", "--repeats", "2", "--out", str(out), "--name", "st"]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    d = out / "st"
    for f in [*d.glob("epochs/*r1-a1.parquet"), *d.glob("trials/*r1-a1.parquet")]:
        f.unlink()
    compact(d)  # its manifest now holds r0 only
    kept_epochs, kept_trials = read_results(d)
    shutil.rmtree(d / "epochs"), shutil.rmtree(d / "trials")
    assert stored_compact(d)

    result = runner.invoke(app, [*args, "--resume"])
    assert result.exit_code == 0, result.output
    assert "1 trial complete, 1 to run" in result.output
    epochs, trials = read_results(d)
    assert sorted(trials.trial) == [f"simple_cnn/cpu/bs32/loader/fp32/w0/r{r}" for r in range(2)]
    assert len(epochs) == 4 and not stored_compact(d)  # per-trial files again, compacted at the end
    r0 = epochs[epochs.trial.str.endswith("r0")].reset_index(drop=True)
    pdt.assert_frame_equal(r0, kept_epochs)
    pdt.assert_frame_equal(trials[trials.trial.str.endswith("r0")].reset_index(drop=True), kept_trials)
