"""The CLI's start and its small promises: what --help and refusals import, --version, completion,
help at 80 columns, --debug anywhere, "1 trial", unused sizes in spec.json, and a local sweep that
leaves no Ray session folder behind.

Real processes: `python -X importtime -m orchestrator ...` lists every module the command imported.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.plan.spec import SweepSpec, conditions, spec_differences
from orchestrator.results.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "torchvision", "ray", "pandas", "matplotlib")


def benchctl(*args: str, env: dict | None = None, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *flags, "-m", "orchestrator", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def imported(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """The command's result and the top-level packages it imported (from -X importtime's list)."""
    proc = benchctl(*args, flags=("-X", "importtime"))
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \| *([\w.]+)$", proc.stderr, flags=re.M)
    assert names, proc.stderr[-2000:]
    return proc, {n.split(".")[0] for n in names}


@pytest.mark.parametrize(
    ("args", "code", "allowed"),
    [
        (["--help"], 0, ()),
        (["sweep", "--help"], 0, ()),
        (["report", "--help"], 0, ()),
        (["sweep", "--placement", "nope"], 2, ()),
        (["report", "/nonexistent"], 2, ()),
        (["--version"], 0, ()),
        (["models"], 0, ("torch", "torchvision")),  # it counts parameters: torch, never Ray
    ],
)
def test_the_start_imports_nothing_heavy_it_does_not_need(args, code, allowed):
    proc, packages = imported(*args)
    assert proc.returncode == code, proc.stderr[-2000:]
    assert sorted(packages & (set(HEAVY) - set(allowed))) == []


def test_version_names_package_commit_and_schema():
    proc = benchctl("--version")
    assert proc.returncode == 0, proc.stderr
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    want = f"benchctl 0.1.0 (commit {commit or 'unknown'}), results schema {SCHEMA_VERSION}"
    assert proc.stdout.strip() == want


def test_shell_completion_is_typers_own():
    proc = benchctl("--show-completion", "bash")
    assert proc.returncode == 0, proc.stderr
    assert "_BENCHCTL_COMPLETE=complete_bash" in proc.stdout
    assert "--install-completion" in benchctl("--help").stdout


@pytest.mark.parametrize("command", [[], ["sweep"], ["report"], ["cache"], ["cluster", "status"]])
def test_help_fits_80_columns_and_cuts_nothing(command):
    from typer.main import get_command

    from orchestrator.cli import app

    proc = benchctl(*command, "--help", env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80
    click_command = get_command(app)
    for name in command:
        click_command = click_command.commands[name]
    words = set(proc.stdout.split())
    for param in click_command.params:
        for opt in [*param.opts, *param.secondary_opts]:
            if opt.startswith("--"):
                assert opt in words or f"{opt}," in words, opt
    if command == ["sweep"]:  # the longest default, whole (a wrapped line never splits it)
        assert "simple_cnn,resnet18,resnet50]" in words


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_adds_the_traceback_and_keeps_the_exit_code(where):
    args = ["report", "/nonexistent"]
    proc = benchctl(*(["--debug", *args] if where == "before" else [*args, "--debug"]))
    assert proc.returncode == 2
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "benchctl: error: results directory /nonexistent does not exist; pass the folder a sweep wrote"
    )
    plain = benchctl(*args)  # without it: the one line only, same exit code
    assert plain.returncode == 2 and "Traceback" not in plain.stderr


def test_spec_json_leaves_sizes_of_a_real_data_set_null_and_old_specs_still_resume():
    cifar = SweepSpec(name="c", dataset="cifar10", models=("simple_cnn",))
    stored = cifar.to_dict()
    assert stored["train_size"] is None and stored["test_size"] is None
    assert SweepSpec(name="s").to_dict()["train_size"] == 50000  # synthetic: the sizes it generates
    old = {**stored, "train_size": 2048, "test_size": 128}  # stored before sizes were nulled
    assert spec_differences(old, cifar) == []
    assert conditions(old) == conditions(stored)
    synthetic = SweepSpec(name="s", train_size=2048).to_dict()
    assert spec_differences(synthetic, SweepSpec(name="s", train_size=4096)) == ["train_size: 2048 -> 4096"]




def test_a_local_sweep_of_one_trial_says_trial_and_removes_its_ray_session(tmp_path, ray_tmp):
    out = tmp_path / "out"
    proc = benchctl(
        "sweep", "--models", "simple_cnn", "--devices", "cpu", "--epochs", "2", "--max-steps", "2",
        "--batch-size", "32", "--train-size", "256", "--test-size", "64", "--workers", "0",
        "--out", str(out), "--name", "one",
        env={"RAY_TMPDIR": ray_tmp},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "benchctl: 1 trial on " in proc.stdout
    assert sorted(p.name for p in Path(ray_tmp).rglob("session_*")) == []
    # two steps of training leave the accuracy near chance: the report says why
    report = benchctl("report", str(out / "one"), "--format", "md")
    assert report.returncode == 0, report.stderr[-3000:]
    assert "few steps trained (cpu)" in (out / "one" / "report" / "report.md").read_text()
