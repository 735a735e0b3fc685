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
    assert f"dry run: {3 * devices} trials of 10 epochs on" in proc.stdout
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
    assert "small (4 CPUs: cpu cells need 16 CPUs, it has 4 (--uniform-cells: sized to the largest" in note
    assert "gpu cells need a GPU, it has none" in note
    assert "big" not in note and "gpubox" not in note
    cpu_only = SweepSpec(models=("simple_cnn",), devices=("cpu",), name="n")
    cpu_configs = expand(cpu_only, resolve_allotment(cpu_only, [16, 4, 8]))
    assert "gpubox" in idle_note(cpu_configs, nodes) and "small" in idle_note(cpu_configs, nodes)
    assert idle_note(configs, nodes[:1] + nodes[2:]) is None


# ---- issue 34: a dry run checks what a sweep checks, and says what the sweep will take -------------------


def _dry(tmp_path, *args):
    return runner.invoke(app, ["sweep", "--dry-run", "--out", str(tmp_path / "o"), *args])


def _folder(root: Path, train: dict, test: dict) -> None:
    for split, classes in (("train", train), ("test", test)):
        for name, files in classes.items():
            (root / split / name).mkdir(parents=True)
            for i in range(files):
                (root / split / name / f"{i}.png").write_bytes(b"not decoded by a check")


def test_dry_run_refuses_a_missing_folder_as_the_sweep_does(tmp_path):
    """`--dataset folder:/nonexistent --dry-run` planned 3 trials (exit 0); the sweep refused 7.5 s later."""
    for command in (["sweep", "--dry-run"], ["sweep"]):
        result = runner.invoke(app, [*command, "--dataset", "folder:/nonexistent", "--devices", "cpu",
                                     "--out", str(tmp_path / "o"), "--name", "x"])  # fmt: skip
        assert result.exit_code == 2, result.output
        assert result.stderr.strip().splitlines() == [
            "benchctl: error: --dataset: dataset folder /nonexistent does not exist; pass a folder holding "
            "train/ and test/, each with one folder of images per class"
        ]
    assert not (tmp_path / "o").exists()


def test_dry_run_refuses_malformed_folders(tmp_path):
    cases = {
        "no-test": ({"a": 1}, None, "has no test/ subfolder"),
        "empty-class": ({"a": 1, "b": 0}, {"a": 1, "b": 1}, "no image files (.jpg"),
        "other-classes": ({"a": 1, "b": 1}, {"a": 1, "c": 1}, "train/ and test/ hold different class"),
        "no-classes": ({}, {}, "holds no class folders"),
    }
    for name, (train, test, message) in cases.items():
        root = tmp_path / name
        (root / "train").mkdir(parents=True)
        if test is not None:
            (root / "test").mkdir()
        _folder(root, train, test or {})
        result = _dry(tmp_path, "--devices", "cpu", "--dataset", f"folder:{root}")
        assert result.exit_code == 2 and message in result.stderr, (name, result.output)
    good = tmp_path / "good"
    _folder(good, {"a": 3, "b": 2}, {"a": 1, "b": 1})
    result = _dry(tmp_path, "--devices", "cpu", "--dataset", f"folder:{good}", "--models", "simple_cnn")
    assert result.exit_code == 0, result.output


def test_no_gpu_says_so_and_names_what_asked_for_gpu_cells(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU for local_nodes, as on a CPU-only machine
    host, cpus = local_nodes()[0]["host"], os.cpu_count()
    result = _dry(tmp_path, "--devices", "gpu")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"benchctl: error: no GPU found on any node ({host}: {cpus} CPU{'s' * (cpus > 1)}, 0 GPUs); "
        "--devices gpu asks for gpu cells: use --devices cpu"
    )
    result = _dry(tmp_path, "--preset", "paper", "--data-dir", str(tmp_path / "data"))
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("--preset paper asks for gpu cells: add --devices cpu")
    assert "no GPU found on any node" in result.stderr
    assert "the sweep downloads it first" in result.stdout  # no cifar10: a dry run says so, fetches nothing
    assert not (tmp_path / "data").exists()
    # the real sweep refuses the same way, before it downloads anything or starts Ray
    result = runner.invoke(app, ["sweep", "--preset", "paper", "--data-dir", str(tmp_path / "data"),
                                 "--out", str(tmp_path / "o"), "--name", "x"])  # fmt: skip
    assert result.exit_code == 2 and "--preset paper asks for gpu cells: add --devices cpu" in result.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "o").exists()


def test_check_devices_on_a_cluster_without_gpus_names_every_node():
    from orchestrator.plan.preflight import check_devices
    from orchestrator.plan.spec import SpecError

    spec = SweepSpec(devices=("cpu", "gpu"), name="n")
    try:
        check_devices(spec, [_node("a", 16), _node("b", 8)])
    except SpecError as exc:
        assert str(exc) == (
            "no GPU found on any node (a: 16 CPUs, 0 GPUs; b: 8 CPUs, 0 GPUs); "
            "--devices cpu,gpu asks for gpu cells: use --devices cpu"
        )
    else:
        raise AssertionError("not refused")
    check_devices(spec, [_node("a", 16), _node("g", 8, gpus=1)])  # one GPU anywhere is enough


def test_dry_run_estimates_each_trial_and_the_sweep_in_seconds(tmp_path):
    import time

    started = time.perf_counter()
    result = _dry(tmp_path, "--devices", "cpu", "--epochs", "4", "--train-size", "5000")
    elapsed = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if "/cpu/bs128/" in line]
    assert len(rows) == 3 and all("(FLOPs)" in line for line in rows)
    assert "trials of 4 epochs on" in result.stdout
    assert "benchctl: estimate: ~" in result.stdout and "rough" in result.stdout
    assert elapsed < 10  # the bar, on 2 busy cores


def test_dry_run_imports_no_torch_and_starts_no_training(tmp_path):
    code = (
        "import sys; from typer.testing import CliRunner; from orchestrator.cli import app; "
        f"args = ['sweep', '--dry-run', '--devices', 'cpu', '--out', {str(tmp_path)!r}]; "
        "r = CliRunner().invoke(app, args); "
        "assert r.exit_code == 0, r.output; "
        "print(sorted(m for m in ('torch', 'torchvision', 'ray') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
