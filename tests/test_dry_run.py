"""`benchctl sweep --dry-run`: the planned trials and where each can run, with nothing started or written."""

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.plan.dryrun import local_nodes
from orchestrator.plan.matrix import expand, resolve_allotment
from orchestrator.plan.planning import idle_note
from orchestrator.plan.spec import SweepSpec

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_default_dry_run_lists_trials_and_starts_no_ray(tmp_path):
    ray_tmp = tmp_path / "ray"
    ray_tmp.mkdir()
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp), "PYTHONPATH": str(ROOT)}
    # run from an empty folder, so the default --out (results/) would appear in it if anything were written
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "sweep", "--dry-run"],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for model in ("simple_cnn", "resnet18", "resnet50"):
        assert f"{model}/cpu/bs128/loader/fp32/r0" in proc.stdout
    devices = 2 if local_nodes()[0]["resources"].get("GPU") else 1
    assert f"dry run: {3 * devices} trials on" in proc.stdout
    assert "exclusive" in proc.stdout
    assert list(work.iterdir()) == []  # no results/ folder, no spec.json
    assert list(ray_tmp.iterdir()) == []  # no Ray session


def test_dry_run_resources_follow_the_allotment(tmp_path):
    result = runner.invoke(
        app,
        ["sweep", "--dry-run", "--models", "simple_cnn", "--devices", "cpu", "--repeats", "2",
         "--cpus-per-trial", "1", "--placement", "partitioned", "--out", str(tmp_path / "o")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("simple_cnn/")]
    assert [r[0] for r in rows] == [
        "simple_cnn/cpu/bs128/loader/fp32/r0",
        "simple_cnn/cpu/bs128/loader/fp32/r1",
    ]
    assert all(r[1:4] == ["1", "CPU", "partitioned"] for r in rows)
    assert "dry run: 2 trials" in result.stdout
    assert not (tmp_path / "o").exists()


def test_dry_run_refuses_what_the_sweep_would_refuse(tmp_path):
    (tmp_path / "taken").mkdir()
    result = runner.invoke(
        app, ["sweep", "--dry-run", "--devices", "cpu", "--out", str(tmp_path), "--name", "taken"]
    )
    assert result.exit_code == 2 and "already exists" in result.stderr
    result = runner.invoke(app, ["sweep", "--dry-run", "--devices", "cpu", "--cpus-per-trial", "999",
                                 "--out", str(tmp_path / "o")])  # fmt: skip
    assert result.exit_code == 2 and "no node has that" in result.stderr
    assert not (tmp_path / "o").exists()


def _node(host: str, cpus: int, gpus: int = 0) -> dict:
    return {"host": host, "node_id": host, "resources": {"CPU": cpus, **({"GPU": gpus} if gpus else {})}}


def test_idle_nodes_are_named_with_the_reason():
    nodes = [_node("big", 16), _node("small", 4), _node("gpubox", 8, gpus=1)]
    spec = SweepSpec(models=("simple_cnn",), devices=("cpu", "gpu"), workers=2, name="n")
    configs = expand(spec, resolve_allotment(spec, [16, 4, 8]))
    note = idle_note(configs, nodes)
    assert note is not None and note.startswith("benchctl: note: 1 node can run no cell")
    assert "small (4 CPUs: cpu cells need 16 CPUs, it has 4 (sized to the largest node; --per-class" in note
    assert "gpu cells need a GPU, it has none" in note
    assert "big" not in note and "gpubox" not in note
    cpu_only = SweepSpec(models=("simple_cnn",), devices=("cpu",), name="n")
    cpu_configs = expand(cpu_only, resolve_allotment(cpu_only, [16, 4, 8]))
    assert "gpubox" in idle_note(cpu_configs, nodes) and "small" in idle_note(cpu_configs, nodes)
    assert idle_note(configs, nodes[:1] + nodes[2:]) is None
