"""`benchctl compare A B` on hand-made results whose B/A ratios are known, through the real CLI.

.venv/bin/python -m pytest -q tests/test_compare.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.analysis.compare import FASTER, NO_INTERVAL, SAME, SLOWER, compare, verdict
from orchestrator.cli import app
from orchestrator.plan.spec import SweepSpec
from orchestrator.report import compare_view
from orchestrator.results.files import file_key, write_json_atomic, write_rows

runner = CliRunner()
NOISE = (1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.00)  # +-3%: far below a 2x change
A_SECONDS = {("simple_cnn", "cpu"): 8.0, ("simple_cnn", "gpu"): 2.0, ("resnet18", "cpu"): 40.0}


def fake_sweep(out: Path, name: str, seconds: dict, spec_json: bool = True, **spec_fields) -> Path:
    """A results directory: per (model, device) in `seconds` (or (model, device, compile): eager where not
    given), one finished trial of a warm-up epoch and 8 steady epochs of seconds[...] x NOISE, with a
    spec.json as `sweep` writes it."""
    spec = SweepSpec(
        name=name, out=out, models=("simple_cnn", "resnet18"), devices=("cpu", "gpu"), **spec_fields
    )
    for (model, device, *step), base_s in seconds.items():
        compiled = step == ["on"]
        trial = f"{model}/{device}/bs128/loader/fp32{'/compiled' if compiled else ''}/r0"
        ident = {"sweep": name, "model": model, "params": 551018, "batch_size": 128, "pipeline": "loader",
                 "precision": "fp32", "compile": "on" if compiled else "off", "dataset": "synthetic",
                 "repeat": 0, "device": device, "cell": trial.rsplit("/", 1)[0], "trial": trial,
                 "attempt": 1}  # fmt: skip
        rows = [{**ident, "epoch": 1, "warmup": True, "epoch_s": 1e6}]  # warm-up: must not count
        rows += [
            {**ident, "epoch": e, "warmup": False, "epoch_s": base_s * f}
            for e, f in enumerate(NOISE, start=2)
        ]
        write_rows(spec.results_dir, "epochs", file_key(trial, 1), rows)
        write_rows(spec.results_dir, "trials", file_key(trial, 1), [{**ident, "status": "ok"}])
    if spec_json:
        write_json_atomic({"spec": spec.to_dict(), "provenance": {}}, spec.results_dir / "spec.json")
    return spec.results_dir


@pytest.fixture
def pair(tmp_path) -> tuple[Path, Path]:
    """A, and B where simple_cnn cpu takes exactly 2x, simple_cnn gpu the same, resnet18 cpu only in A,
    resnet50 gpu only in B, and B ran 3 epochs per trial where A ran 10."""
    a = fake_sweep(tmp_path, "a", A_SECONDS)
    b_seconds = {("simple_cnn", "cpu"): 16.0, ("simple_cnn", "gpu"): 2.0, ("resnet50", "gpu"): 9.0}
    b = fake_sweep(tmp_path, "b", b_seconds, epochs=3)
    return a, b


def test_known_ratios_verdicts_unmatched_cells_and_conditions(pair):
    a, b = pair
    result = compare(a, b)
    by_device = {r.cell.device: r for r in result.cells}
    assert [r.cell.model for r in result.cells] == ["simple_cnn", "simple_cnn"]
    cpu, gpu = by_device["cpu"], by_device["gpu"]
    assert cpu.ratio == pytest.approx(2.0) and cpu.a_epoch_s == pytest.approx(8.0)
    assert 1 < cpu.low <= 2.0 <= cpu.high and cpu.verdict == SLOWER
    assert gpu.ratio == pytest.approx(1.0) and gpu.low < 1 < gpu.high and gpu.verdict == SAME
    assert cpu.a_n == cpu.b_n == len(NOISE)  # the warm-up epoch is left out
    assert [c.label for c in result.only_a] == ["resnet18 cpu (batch 128, loader, fp32)"]
    assert [c.label for c in result.only_b] == ["resnet50 gpu (batch 128, loader, fp32)"]
    assert result.differing == {"epochs": (10, 3)} and result.unknown_conditions == ()
    assert compare(a, b) == result  # seeded: the same results give the same intervals


def test_faster_when_b_takes_half_and_the_interval_is_reproducible(tmp_path):
    a = fake_sweep(tmp_path, "a", {("simple_cnn", "gpu"): 2.0})
    b = fake_sweep(tmp_path, "b", {("simple_cnn", "gpu"): 1.0})
    (r,) = compare(a, b).cells
    assert r.ratio == pytest.approx(0.5) and r.high < 1 and r.verdict == FASTER
    assert compare(a, b).differing == {}


def test_verdict_needs_the_interval_to_exclude_one():
    assert verdict(1.01, 1.5) == SLOWER and verdict(0.5, 0.99) == FASTER
    assert verdict(0.9, 1.0) == SAME and verdict(1.0, 1.2) == SAME
    assert verdict(math.nan, math.nan) == NO_INTERVAL


def test_cli_table_and_compare_md(pair, tmp_path):
    a, b = pair
    result = runner.invoke(app, ["compare", str(a), str(b)])
    assert result.exit_code == 0, result.output  # cells differ, still exit 0
    lines = result.stdout.splitlines()
    cpu = next(line for line in lines if line.startswith("simple_cnn  cpu"))
    assert cpu.split()[-3] == "2.00x" and cpu.split()[-2].startswith("[1.") and cpu.endswith("slower")
    assert next(line for line in lines if line.startswith("simple_cnn  gpu")).endswith("same within noise")
    assert "Only in A: resnet18 cpu (batch 128, loader, fp32)." in lines
    assert "Only in B: resnet50 gpu (batch 128, loader, fp32)." in lines
    assert "Conditions that differ (A vs B): epochs (10 vs 3)." in lines
    md_path = a / "compare-with-b" / "compare.md"
    assert f"wrote {md_path}" in result.stdout
    md = md_path.read_text()
    assert md.startswith("# Compare b (B) with a (A)\n")
    row = next(line for line in md.splitlines() if line.startswith("| simple_cnn | cpu |"))
    assert "| 8.00 | 16.0 | 2.00x [" in row and row.endswith("| slower |")
    assert "- Only in A: `resnet18 cpu (batch 128, loader, fp32)`." in md
    assert "- Conditions that differ (A vs B): `epochs` (10 vs 3)." in md


def test_an_axis_the_cells_differ_in_has_a_column(tmp_path):
    """Every configuration axis (plan.axes.CONFIG_AXES) the cells differ in is a column: an eager and a
    compiled cell are two rows told apart, not two rows alike; an all-eager comparison has no step column."""
    seconds = {("simple_cnn", "gpu", "off"): 2.0, ("simple_cnn", "gpu", "on"): 1.0}
    a, b = (
        fake_sweep(tmp_path, "a", seconds),
        fake_sweep(tmp_path, "b", {k: 2 * v for k, v in seconds.items()}),
    )
    text = compare_view.terminal_text(compare(a, b)).splitlines()
    assert text[3].split()[:7] == ["model", "device", "batch", "pipeline", "precision", "step", "class"]
    assert [line.split()[5] for line in text[5:7]] == ["eager", "compiled"]
    assert "| step |" in compare_view.markdown(compare(a, b))
    eager = fake_sweep(tmp_path, "c", {("simple_cnn", "gpu"): 2.0})
    assert "step" not in compare_view.terminal_text(compare(eager, eager)).splitlines()[3]


def test_cli_json_and_out(pair, tmp_path):
    a, b = pair
    result = runner.invoke(app, ["compare", str(a), str(b), "--json", "--out", str(tmp_path / "cmp")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # stdout holds only the JSON
    cpu = next(c for c in data["cells"] if c["device"] == "cpu")
    assert cpu["model"] == "simple_cnn" and cpu["ratio"] == pytest.approx(2.0) and cpu["verdict"] == SLOWER
    assert [c["model"] for c in data["only_a"]] == ["resnet18"]
    assert data["differing_conditions"] == {"epochs": {"a": 10, "b": 3}}
    assert (tmp_path / "cmp" / "compare.md").is_file() and not (a / "compare-with-b").exists()


def test_cli_without_spec_json_says_conditions_are_unknown(tmp_path):
    a = fake_sweep(tmp_path, "a", A_SECONDS)
    b = fake_sweep(tmp_path, "b", A_SECONDS, spec_json=False)
    result = runner.invoke(app, ["compare", str(a), str(b), "--format", "none"])
    assert result.exit_code == 0, result.output
    assert f"Conditions unknown for {b} (no spec.json): not compared." in result.stdout
    assert result.stdout.count("same within noise") == 3 and not (a / "compare-with-b").exists()


@pytest.mark.parametrize("problem", ["missing", "empty", "format"])
def test_cli_errors_are_one_line_exit_2(tmp_path, problem):
    a = fake_sweep(tmp_path, "a", A_SECONDS)
    b = tmp_path / "nothing"
    if problem == "empty":
        b.mkdir()
    args = ["compare", str(a), str(b if problem != "format" else a)]
    result = runner.invoke(app, args + (["--format", "pdf"] if problem == "format" else []))
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("benchctl: error: ")
