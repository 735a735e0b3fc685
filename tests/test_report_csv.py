"""`benchctl report --format csv`: summary.csv (the speedup table) and epochs.csv (every epoch row used)."""

import json

import pandas as pd
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.results.files import write_rows

runner = CliRunner()
BASE = {
    "sweep": "s", "model": "simple_cnn", "params": 551018, "batch_size": 32, "pipeline": "loader",
    "precision": "fp32", "images": 64, "steps": 2, "full_steps": 2, "data_s": 0.0, "test_acc": 0.5,
    "repeat": 0,
}  # fmt: skip


def _results(tmp_path):
    rows = [
        {
            **BASE,
            "device": d,
            "cell": d,
            "trial": d,
            "epoch": e,
            "warmup": e == 1,
            "epoch_s": s,
            "device_name": n,
        }
        for d, n, times in (("cpu", "Xeon", (30.0, 8.0, 12.0)), ("gpu", "NVIDIA H200", (9.0, 2.0, 2.0)))
        for e, s in zip((1, 2, 3), times, strict=True)
    ]
    write_rows(tmp_path / "res", "epochs", "k-a1", rows)
    return tmp_path / "res"


def test_csv_holds_the_json_table_and_every_epoch_row(tmp_path):
    results = _results(tmp_path)
    out = tmp_path / "r"
    result = runner.invoke(app, ["report", str(results), "--out", str(out), "--format", "md,csv"])
    assert result.exit_code == 0, result.output
    assert (out / "report.md").is_file() and not (out / "report.html").exists()
    assert f"{out / 'summary.csv'} and {out / 'epochs.csv'}" in result.stdout

    as_json = json.loads(
        runner.invoke(app, ["report", str(results), "--out", str(tmp_path / "j"), "--json"]).stdout
    )["cells"]  # --json prints summary.json's object; its cells are the speedup table
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns) == list(as_json[0])
    assert len(summary) == len(as_json) == 1
    assert summary.loc[0, "model"] == "simple_cnn" and summary.loc[0, "speedup"] == 10.0 / 2.0

    epochs = pd.read_csv(out / "epochs.csv")
    assert len(epochs) == 6  # warm-up epochs included: every row the report read for its cells
    assert sorted(zip(epochs.device, epochs.epoch, epochs.epoch_s, strict=True)) == [
        ("cpu", 1, 30.0), ("cpu", 2, 8.0), ("cpu", 3, 12.0), ("gpu", 1, 9.0), ("gpu", 2, 2.0), ("gpu", 3, 2.0)
    ]  # fmt: skip
    wanted = {"sweep", "trial", "host", "torch_threads", "epoch_s", "data_s", "test_acc", "host_steal_pct"}
    assert wanted <= set(epochs.columns)


def test_csv_alone_writes_no_documents_and_default_writes_no_csv(tmp_path):
    results = _results(tmp_path)
    result = runner.invoke(app, ["report", str(results), "--out", str(tmp_path / "c"), "--format", "csv"])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (tmp_path / "c").iterdir())
    assert written == ["epochs.csv", "figures", "summary.csv", "summary.json"]
    result = runner.invoke(app, ["report", str(results), "--out", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "d" / "summary.csv").exists() and (tmp_path / "d" / "report.html").is_file()
