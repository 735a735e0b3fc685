"""`benchctl report A B` over sweeps run under different conditions: refused unless --pool, and then said.

Hand-made results (results.write_rows + a spec.json as `sweep` writes it), through the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.plan.spec import SweepSpec
from orchestrator.results.files import file_key, write_json_atomic, write_rows

runner = CliRunner()


def fake_sweep(out: Path, name: str, spec_json: bool = True, **spec_fields) -> Path:
    """One sweep's results directory: simple_cnn on cpu (8 s epochs) and gpu (2 s), 2 steady epochs each."""
    spec = SweepSpec(name=name, out=out, models=("simple_cnn",), devices=("cpu", "gpu"), **spec_fields)
    base = {"sweep": name, "model": "simple_cnn", "params": 551018, "batch_size": 128, "pipeline": "loader",
            "precision": "fp32", "dataset": spec.dataset, "repeat": 0, "steps": 2, "full_steps": 2,
            "images": 256, "data_s": 0.0, "test_acc": 0.5}  # fmt: skip
    for device, seconds in (("cpu", 8.0), ("gpu", 2.0)):
        trial = f"simple_cnn/{device}/bs128/loader/fp32/r0"
        ident = {**base, "device": device, "cell": trial.rsplit("/", 1)[0], "trial": trial, "attempt": 1}
        epochs = range(1, spec.epochs + 1)
        rows = [{**ident, "epoch": e, "warmup": e == 1, "epoch_s": seconds} for e in epochs]
        write_rows(spec.results_dir, "epochs", file_key(trial, 1), rows)
        write_rows(spec.results_dir, "trials", file_key(trial, 1), [{**ident, "status": "ok"}])
    if spec_json:
        write_json_atomic({"spec": spec.to_dict(), "provenance": {}}, spec.results_dir / "spec.json")
    return spec.results_dir


def report(*args) -> object:
    return runner.invoke(app, ["report", *map(str, args)])


def test_sweeps_with_different_epochs_are_refused_naming_epochs_and_the_values(tmp_path):
    a, b = fake_sweep(tmp_path, "a", epochs=3), fake_sweep(tmp_path, "b", epochs=2)
    result = report(a, b, "--out", tmp_path / "cmp")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchctl: error: these sweeps ran under different")
    assert f"epochs ({a}: 3, {b}: 2)" in lines[0] and "--pool" in lines[0]
    assert "max_steps" not in lines[0]  # only what differs
    assert not (tmp_path / "cmp").exists()  # refused before anything was written


def test_with_pool_the_report_and_the_terminal_say_what_was_pooled(tmp_path):
    a, b = fake_sweep(tmp_path, "a", epochs=3), fake_sweep(tmp_path, "b", epochs=2, max_steps=5)
    result = report(a, b, "--out", tmp_path / "cmp", "--pool")
    assert result.exit_code == 0, result.output
    pooled = f"epochs ({a}: 3, {b}: 2); max_steps ({a}: None, {b}: 5)"
    assert f"Pooled across different conditions (--pool): {pooled}." in result.stdout
    md = (tmp_path / "cmp" / "report.md").read_text()
    assert f"`epochs` (`{a}`: 3, `{b}`: 2); `max_steps` (`{a}`: None, `{b}`: 5)" in md
    assert "Pooled across different conditions" in (tmp_path / "cmp" / "report.html").read_text()
    # both sweeps' epochs are in the one cell: a's 2 steady epochs and b's 1, per side
    as_json = report(a, b, "--out", tmp_path / "cmp", "--pool", "--json")
    assert as_json.exit_code == 0, as_json.output
    [row] = json.loads(as_json.stdout)["cells"]
    assert row["cpu_n"] == 3 and row["gpu_n"] == 3 and row["speedup"] == 8.0 / 2.0
    assert "Pooled across" in as_json.stderr and "Pooled" not in as_json.stdout  # stdout stays JSON


def test_the_grid_and_how_a_sweep_ran_may_differ_without_pool(tmp_path):
    a = fake_sweep(tmp_path, "a", epochs=3)
    b = fake_sweep(tmp_path, "b", epochs=3, repeats=2, max_failures=3, batch_sizes=(64, 128))
    result = report(a, b, "--out", tmp_path / "cmp")
    assert result.exit_code == 0, result.output
    assert "Pooled" not in result.stdout and "Pooled" not in (tmp_path / "cmp" / "report.md").read_text()


def test_a_spec_without_a_newer_key_reads_as_what_benchctl_did_before_it(tmp_path):
    # trial_process was added later; a spec without it ran its trials inline, so a child sweep differs
    a, b = fake_sweep(tmp_path, "a", epochs=2), fake_sweep(tmp_path, "b", epochs=2)
    old = (a / "spec.json").read_text().replace('"trial_process": "child",', "")
    (a / "spec.json").write_text(old)
    result = report(a, b, "--out", tmp_path / "cmp")
    assert result.exit_code == 2 and f"trial_process ({a}: 'inline', {b}: 'child')" in result.stderr


def test_results_without_spec_json_are_pooled_as_unknown_conditions_and_said_so(tmp_path):
    a, b = fake_sweep(tmp_path, "a", epochs=3), fake_sweep(tmp_path, "b", spec_json=False, epochs=2)
    result = report(a, b, "--out", tmp_path / "cmp")
    assert result.exit_code == 0, result.output
    assert f"Conditions unknown for {b} (no spec.json)" in result.stdout
    assert f"Conditions unknown for `{b}` (no spec.json)" in (tmp_path / "cmp" / "report.md").read_text()
    alone = report(b, "--out", tmp_path / "alone")  # one sweep: nothing to compare, nothing to say
    assert alone.exit_code == 0 and "unknown" not in alone.stdout
