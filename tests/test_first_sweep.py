"""The README's first sweep, and --devices left to the machine: real Ray (local), real training, real CLI.

Without --devices a sweep runs the devices the Ray nodes have and says so; spec.json keeps the devices
that ran, and a --resume without --devices runs those.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.plan.spec import SweepSpec
from orchestrator.results.compact import compact_path
from orchestrator.results.files import write_json_atomic
from orchestrator.results.reader import read_results

pytestmark = pytest.mark.slow  # real sweeps: each starts Ray (a refused resume too, to see the nodes)

runner = CliRunner()
# the README's first sweep line (without its --name), and caps that make it take seconds: given after it,
# the later value of an option wins (2 steps an epoch, 2 epochs, tiny sizes)
README_SWEEP = [
    "sweep",
    "--models",
    "simple_cnn",
    "--epochs",
    "4",
    "--train-size",
    "5000",
    "--test-size",
    "1000",
]
CAPS = ["--max-steps", "2", "--train-size", "256", "--test-size", "128", "--epochs", "2"]
ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_shows_this_first_sweep():
    assert f"benchctl {' '.join(README_SWEEP)} --name first\n" in (ROOT / "README.md").read_text()


HAS_GPU = torch.cuda.is_available()


def stored_spec(results_dir) -> dict:
    return json.loads((results_dir / "spec.json").read_text())["spec"]


def test_the_readme_first_sweep_runs_on_this_machine_and_says_which_devices(tmp_path):
    result = runner.invoke(app, [*README_SWEEP, *CAPS, "--out", str(tmp_path), "--name", "first"])
    assert result.exit_code == 0, result.output + str(result.exception)
    devices = ["cpu", "gpu"] if HAS_GPU else ["cpu"]
    said = "benchctl: --devices not given: running " + ",".join(devices)
    assert said + (" (" if HAS_GPU else " (no GPU on this machine)") in result.output
    assert stored_spec(tmp_path / "first")["devices"] == devices  # what ran, for --resume and report
    epochs, trials = read_results(tmp_path / "first")
    assert sorted(trials.device) == devices and (trials.status == "ok").all()
    assert len(epochs) == 2 * len(devices)
    # the sweep's end compacted its files (results.compact), the per-trial files kept beside them
    for kind in ("epochs", "trials"):
        held = pq.ParquetFile(compact_path(tmp_path / "first", kind)).schema_arrow.metadata
        files = sorted(p.name for p in (tmp_path / "first" / kind).glob("*.parquet"))
        assert [f[0] for f in json.loads(held[b"benchctl.compact_sources"])] == files and files

    again = runner.invoke(app, [*README_SWEEP, *CAPS, "--out", str(tmp_path), "--name", "first", "--resume"])
    assert again.exit_code == 0, again.output
    assert f"{len(devices)} trial{'s' * (len(devices) != 1)} complete, 0 to run" in again.output


@pytest.mark.skipif(HAS_GPU, reason="needs a machine without GPUs")
def test_a_resume_without_devices_runs_the_stored_ones_even_where_they_cannot_run(tmp_path):
    # the sweep was started where a GPU was; resumed here without --devices it still asks for gpu cells
    # (every option not given comes from spec.json), and this machine has none: refused up front, as an
    # explicit --devices gpu is
    spec = SweepSpec(name="k", out=tmp_path, models=("simple_cnn",), devices=("cpu", "gpu"), epochs=2)
    write_json_atomic({"spec": spec.to_dict(), "provenance": {}}, tmp_path / "k" / "spec.json")
    args = ["sweep", "--models", "simple_cnn", "--epochs", "2", "--out", str(tmp_path), "--name", "k"]
    result = runner.invoke(app, [*args, "--resume"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().startswith("benchctl: error: no GPU found on any node")
    assert "spec.json (--resume) has gpu cells" in result.stderr
    assert stored_spec(tmp_path / "k")["devices"] == ["cpu", "gpu"]  # untouched
    assert not list((tmp_path / "k").glob("resume-*.json"))


def test_a_preset_sweep_records_the_preset_and_the_options_in_effect(tmp_path):
    overrides = ["--dataset", "synthetic", "--devices", "cpu", "--models", "simple_cnn", *CAPS]
    result = runner.invoke(
        app, ["sweep", "--preset", "paper", *overrides, "--out", str(tmp_path), "--name", "p"]
    )
    assert result.exit_code == 0, result.output + str(result.exception)
    spec = stored_spec(tmp_path / "p")
    assert spec["preset"] == "paper"
    # given on the command line: those; the rest: the preset's
    assert spec["dataset"] == "synthetic" and spec["devices"] == ["cpu"] and spec["epochs"] == 2
    assert spec["models"] == ["simple_cnn"] and spec["max_steps"] == 2
    assert spec["batch_sizes"] == [128] and spec["pipelines"] == ["loader"] and spec["precisions"] == ["fp32"]
    assert spec["max_eval_steps"] is None
    _, trials = read_results(tmp_path / "p")
    assert trials.batch_size.tolist() == [128] and (trials.status == "ok").all()


@pytest.mark.slow
def test_the_readme_first_sweep_uncapped_gives_an_interval(tmp_path):
    """The README's first example uncapped (no --max-steps: every epoch runs its whole data set), on less
    data than the README's 5,000 images (its run time is not what this shows: tests/test_estimate.py
    judges it): 3 steady epochs per cell, so the report gives each number a 95% interval (the speedup's
    with a GPU, else the CPU epoch time's)."""
    less_data = ["--train-size", "1024", "--test-size", "256"]
    result = runner.invoke(app, [*README_SWEEP, *less_data, "--out", str(tmp_path), "--name", "first"])
    assert result.exit_code == 0, result.output + str(result.exception)
    assert "this sweep is estimated to take" not in result.output  # not announced as long
    epochs, _ = read_results(tmp_path / "first")
    assert not epochs.extrapolated.any() and len(epochs) == 4 * (2 if HAS_GPU else 1)  # uncapped, 4 epochs
    report = runner.invoke(app, ["report", str(tmp_path / "first")])
    assert report.exit_code == 0, report.output
    row = next(line for line in report.stdout.splitlines() if line.startswith("simple_cnn"))
    interval = r"\d+(\.\d+)?x \[[\d.]+–[\d.]+\]" if HAS_GPU else r"[\d.]+ \[[\d.]+–[\d.]+\]"
    assert re.search(interval, row), row
