"""The command line through Typer's CliRunner: parsing, one-line errors, exit codes."""

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app

runner = CliRunner()


def test_models_lists_exact_counts():
    result = runner.invoke(app, ["models"])
    assert result.exit_code == 0, result.output
    assert "simple_cnn" in result.output and "11,181,642" in result.output and "23,528,522" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--models", "resnet81"], "--models: unknown model 'resnet81'; did you mean resnet18"),
        (["--epochs", "0"], "--epochs: must be >= 1, got 0"),
        (["--batch-size", "32,x"], "--batch-size: 'x' is not an integer"),
        (["--devices", "cpu,tpu"], "--devices: unknown value 'tpu'"),
        (["--dataset", "folder:/nonexistent"], "--dataset: dataset folder /nonexistent has no train/"),
        (["--cluster", "/nonexistent.yaml"], "--cluster: cannot read /nonexistent.yaml"),
    ],
)
def test_bad_sweep_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, message):
    out = tmp_path / "out"
    result = runner.invoke(app, ["sweep", "--out", str(out), "--name", "x", *args])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"benchctl: error: {message}")
    assert not out.exists()


def test_existing_name_is_refused(tmp_path):
    (tmp_path / "taken").mkdir()
    result = runner.invoke(app, ["sweep", "--out", str(tmp_path), "--name", "taken", "--devices", "cpu"])
    assert result.exit_code == 2 and "already exists" in result.stderr


def test_report_on_missing_directory(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert not (tmp_path / "nothing").exists()


def test_debug_shows_the_traceback_instead(tmp_path):
    result = runner.invoke(app, ["--debug", "report", str(tmp_path / "nothing")])
    assert result.exit_code == 1 and result.exception is not None


def test_unwritable_out_is_a_usage_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = runner.invoke(app, ["sweep", "--devices", "cpu", "--out", str(blocker), "--name", "x"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"benchctl: error: --out: cannot create {blocker}/x")


def test_report_names_a_foreign_parquet_file_without_traceback(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "epochs").mkdir()
    pq.write_table(pa.table({"x": [1]}), tmp_path / "epochs" / "stray.parquet")
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert "stray.parquet: not a benchctl epochs file" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "report").exists()


def test_report_json_is_the_speedup_table(tmp_path):
    import json

    from orchestrator.results import write_rows

    base = {
        "sweep": "s",
        "model": "simple_cnn",
        "params": 551018,
        "batch_size": 32,
        "pipeline": "loader",
        "precision": "fp32",
        "warmup": False,
        "images": 64,
        "steps": 2,
        "full_steps": 2,
        "data_s": 0.0,
        "test_acc": 0.5,
        "repeat": 0,
    }
    rows = [
        {**base, "device": d, "cell": d, "trial": d, "epoch": e, "epoch_s": s, "device_name": n}
        for d, n, times in (("cpu", "Xeon", (8.0, 12.0)), ("gpu", "NVIDIA H200", (2.0, 2.0)))
        for e, s in zip((2, 3), times, strict=True)
    ]
    write_rows(tmp_path, "epochs", "k-a1", rows)
    result = runner.invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "r"), "--json"])
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout)
    assert len(table) == 1 and table[0]["model"] == "simple_cnn"
    assert table[0]["speedup"] == 10.0 / 2.0  # median(8, 12) / median(2, 2)
    assert (tmp_path / "r" / "report.md").is_file()
