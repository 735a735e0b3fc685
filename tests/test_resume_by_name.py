"""`benchctl sweep --resume --name NAME` takes every option from the sweep's spec.json (real Ray, tiny)."""

import json
import re
import shutil
import tempfile

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app

runner = CliRunner()
OPTIONS = ["--models", "simple_cnn", "--devices", "cpu", "--epochs", "2", "--max-steps", "2",
           "--train-size", "256", "--test-size", "128", "--batch-size", "32", "--workers", "0",
           "--max-eval-steps", "1", "--seed", "7"]  # fmt: skip


@pytest.fixture
def ray_tmp(monkeypatch):
    path = tempfile.mkdtemp(prefix="bcray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    monkeypatch.setenv("RAY_TMPDIR", path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_resume_by_name_alone_reuses_the_stored_options(tmp_path, ray_tmp):
    out = str(tmp_path / "out")
    result = runner.invoke(app, ["sweep", *OPTIONS, "--out", out, "--name", "x"])
    assert result.exit_code == 0, result.output
    stored = json.loads((tmp_path / "out" / "x" / "spec.json").read_text())["spec"]
    assert stored["seed"] == 7 and stored["train_size"] == 256

    result = runner.invoke(app, ["sweep", "--resume", "--name", "x", "--out", out])
    assert result.exit_code == 0, result.output
    assert re.search(r"1 trials? complete, 0 to run", result.stdout)

    # a resume may change how it runs (RESUMABLE_CHANGES), not what it measures
    result = runner.invoke(app, ["sweep", "--resume", "--name", "x", "--out", out, "--max-failures", "3"])
    assert result.exit_code == 0, result.output
    assert re.search(r"1 trials? complete, 0 to run", result.stdout)

    result = runner.invoke(app, ["sweep", "--resume", "--name", "x", "--out", out, "--epochs", "3"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "different spec (epochs: 2 -> 3)" in lines[0]


def test_resume_dry_run_reads_the_stored_options_and_writes_nothing(tmp_path):
    from orchestrator.plan.spec import SweepSpec
    from orchestrator.results.files import write_json_atomic

    spec = SweepSpec(models=("simple_cnn", "resnet18"), devices=("cpu",), repeats=2, epochs=2, name="y")
    write_json_atomic({"spec": spec.to_dict(), "provenance": {}}, tmp_path / "y" / "spec.json")
    before = sorted(p.name for p in (tmp_path / "y").iterdir())
    result = runner.invoke(app, ["sweep", "--resume", "--dry-run", "--name", "y", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "dry run: 4 trials" in result.stdout and "0 already complete" in result.stdout
    assert "resnet18/cpu/bs128/loader/fp32/r1" in result.stdout
    assert sorted(p.name for p in (tmp_path / "y").iterdir()) == before
