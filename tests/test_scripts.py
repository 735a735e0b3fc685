"""scripts/install.sh: nothing reinstalled when nothing changed; an install without setuptools' warning block.

.venv/bin/pytest -q tests/test_scripts.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fake_project(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A copy of install.sh and pyproject.toml whose .venv/bin/python only logs its arguments, and a PATH
    where `chromium` exists (so install.sh never reaches apt-get)."""
    project = tmp_path / "p"
    (project / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "install.sh", project / "scripts")
    shutil.copy(ROOT / "pyproject.toml", project)
    log = tmp_path / "calls.log"
    bin_dir = project / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "chromium").write_text("#!/bin/sh\n")
    for exe in (bin_dir / "python", tools / "chromium"):
        exe.chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
    env.pop("TORCH_SPEC", None)
    return project, log, env


def test_install_is_skipped_when_nothing_changed(tmp_path):
    project, log, env = _fake_project(tmp_path)
    install = ["bash", "scripts/install.sh"]
    first = subprocess.run(install, cwd=project, env=env, capture_output=True, text=True, check=True)
    assert "pip install" in log.read_text() and "up to date" not in first.stdout
    log.unlink()
    again = subprocess.run(install, cwd=project, env=env, capture_output=True, text=True, check=True)
    assert "up to date" in again.stdout and not log.exists()  # no pip, not even the import check
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text() + "\n# changed\n")
    subprocess.run(install, cwd=project, env=env, capture_output=True, text=True, check=True)
    assert "pip install" in log.read_text()  # a changed pyproject.toml installs again
    log.unlink()
    env["TORCH_SPEC"] = "torch==0 torchvision==0"
    subprocess.run(install, cwd=project, env=env, capture_output=True, text=True, check=True)
    assert "torch==0" in log.read_text()  # so does another TORCH_SPEC


def test_an_editable_install_warns_nothing(tmp_path):
    """setuptools' import-finder editable install printed a `!!` warning block; the packages' directory
    is declared (package-dir), so it writes a .pth file instead, without one."""
    project = tmp_path / "p"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project)
    for package in ("orchestrator", "trainables"):
        shutil.copytree(ROOT / package, project / package, ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import warnings, sys; warnings.simplefilter('error')\n"
        "from setuptools import build_meta\n"
        "print(build_meta.build_editable(sys.argv[1]))\n"
    )
    out = tmp_path / "wheel"
    out.mkdir()
    done = subprocess.run([sys.executable, "-c", code, str(out)], cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Editable installation" not in done.stderr and "!!" not in done.stderr
    names = zipfile.ZipFile(out / done.stdout.strip().splitlines()[-1]).namelist()
    assert any(n.endswith(".pth") for n in names)
