"""`benchctl ls [DIR]`: one line per sweep folder; `report` on such a parent folder points to it."""

import os

from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.results.files import write_json_atomic, write_rows

runner = CliRunner()


def _sweep(parent, name, models, devices, ok, failed=(), started="2026-01-02T03:04:05Z"):
    spec = {"name": name, "models": models, "devices": devices, "batch_sizes": [32], "pipelines": ["loader"],
            "precisions": ["fp32"], "repeats": 1, "epochs": 2}  # fmt: skip
    doc = {"spec": spec, **({"provenance": {"started_at": started}} if started else {})}
    write_json_atomic(doc, parent / name / "spec.json")
    for i, (trial, status) in enumerate([(t, "ok") for t in ok] + [(t, "error") for t in failed]):
        row = {"sweep": name, "trial": trial, "attempt": 1, "status": status}
        write_rows(parent / name, "trials", f"t{i}-a1", [row])


def test_ls_lists_each_sweep_with_done_and_planned(tmp_path):
    _sweep(tmp_path, "a", ["simple_cnn", "resnet18"], ["cpu", "gpu"],
           ok=["simple_cnn/cpu/bs32/loader/fp32/r0", "simple_cnn/gpu/bs32/loader/fp32/r0"],
           failed=["resnet18/cpu/bs32/loader/fp32/r0"])  # fmt: skip
    _sweep(tmp_path, "b", ["resnet50"], ["cpu"], ok=[], started=None)
    os.utime(tmp_path / "b" / "spec.json", (1767323045, 1767323045))  # 2026-01-02 03:04:05 UTC
    (tmp_path / "not-a-sweep").mkdir()
    result = runner.invoke(app, ["ls", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["name", "date", "(UTC)"]
    assert lines[1].split() == ["a", "2026-01-02", "03:04", "2/4", "cpu,gpu", "simple_cnn,resnet18"]
    assert lines[2].split() == ["b", "2026-01-02", "03:04", "0/1", "cpu", "resnet50"]
    assert len(lines) == 3  # the folder without spec.json is no sweep


def test_ls_default_folder_is_results(tmp_path, monkeypatch):
    _sweep(tmp_path / "results", "only", ["simple_cnn"], ["cpu"], ok=["simple_cnn/cpu/bs32/loader/fp32/r0"])
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["ls"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].split()[0::3] == ["only", "1/1"]


def test_ls_empty_and_missing_folders(tmp_path):
    result = runner.invoke(app, ["ls", str(tmp_path)])
    assert result.exit_code == 0 and f"no sweeps in {tmp_path}" in result.stdout
    result = runner.invoke(app, ["ls", str(tmp_path / "nothing")])
    assert result.exit_code == 2
    missing = tmp_path / "nothing"
    assert result.stderr.strip().splitlines() == [
        f"benchctl: error: {missing} does not exist; pass the folder sweeps were written to (--out)"
    ]


def test_report_on_a_parent_folder_points_to_ls(tmp_path):
    _sweep(tmp_path, "a", ["simple_cnn"], ["cpu"], ok=[])
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"`benchctl ls {tmp_path}`" in lines[0]
    assert not (tmp_path / "report").exists()
