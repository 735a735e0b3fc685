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
        (["--epochs", "0"], "--epochs: 0 is not allowed; must be at least 1"),
        (["--batch-size", "32,x"], "--batch-size: 'x' is not allowed; must be an integer"),
        (["--devices", "cpu,tpu"], "--devices: unknown value 'tpu'"),
        (["--dataset", "folder:/nonexistent"], "--dataset: dataset folder /nonexistent does not exist"),
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


def test_debug_adds_the_traceback_and_keeps_the_exit_code(tmp_path):
    result = runner.invoke(app, ["--debug", "report", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "Traceback" in result.stderr


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

    from orchestrator.results.files import write_rows

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
    table = json.loads(result.stdout)["cells"]  # summary.json's object; cells: the speedup table
    assert len(table) == 1 and table[0]["model"] == "simple_cnn"
    assert table[0]["speedup"] == 10.0 / 2.0  # median(8, 12) / median(2, 2)
    assert (tmp_path / "r" / "report.md").is_file()


# ---- issue 6: every bad input is refused in one line, exit 2, before anything is written ----------

QUICK_REFUSED = ["--models", "simple_cnn", "--devices", "cpu", "--epochs", "1", "--max-steps", "1"]


def _refused(result, message: str) -> str:
    """Exit 2, one `benchctl: error:` line on stderr containing `message`; returns the line."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchctl: error: "), result.stderr
    assert message in lines[0], lines[0]
    assert "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--epochs", "-1"], "--epochs: -1 is not allowed; must be at least 1"),
        (["--batch-size", "0"], "--batch-size: 0 is not allowed; must be at least 1"),
        (["--batch-size", "-1"], "--batch-size: -1 is not allowed; must be at least 1"),
        (["--batch-size", "abc"], "--batch-size: 'abc' is not allowed; must be an integer"),
        (["--epochs", "x"], "--epochs: 'x' is not allowed; must be an integer"),  # Typer's own check
        (["--repeats", "0"], "--repeats: 0 is not allowed; must be at least 1"),
        (["--repeats", "-1"], "--repeats: -1 is not allowed; must be at least 1"),
        (["--workers", "-1"], "--workers: -1 is not allowed; must be at least 0"),
        (["--port", "6390"], "--port: only means something with --cluster FILE"),
        (
            ["--cluster", "/nonexistent.yaml", "--port", "0"],
            "--port: 0 is not allowed; must be a TCP port, 1-65535",
        ),
        (["--name", "a/b"], "--name: 'a/b' is not allowed; must be 1-100 letters"),
    ],
)
def test_bad_numbers_and_names_are_one_line_exit_2(tmp_path, args, message):
    out = tmp_path / "out"
    result = runner.invoke(app, ["sweep", *QUICK_REFUSED, "--out", str(out), "--name", "x", *args])
    _refused(result, message)
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--epochs", "abc"], "--epochs"),
        (["--repeats", "1.5"], "--repeats"),
        (["--workers", "x"], "--workers"),
        (["--placement", "bogus"], "--placement"),
    ],
)
def test_typer_parse_errors_exit_2_and_name_the_option(tmp_path, args, option):
    # Typer/Click refuses these before benchctl sees them: exit 2, the option named, nothing written.
    out = tmp_path / "out"
    result = runner.invoke(app, ["sweep", *QUICK_REFUSED, "--out", str(out), "--name", "x", *args])
    assert result.exit_code == 2, result.output
    # a number benchctl's way (`--epochs: 'abc' is not allowed; must be an integer`), a choice Typer's way
    named = f"{option}: '{args[1]}' is not allowed; must be an integer" if option != "--placement" else None
    assert (named or f"Invalid value for '{option}'") in result.stderr and "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize("args", [["--epochs", "abc"], ["--placement", "bogus"]])
def test_typer_parse_errors_are_one_line(tmp_path, args):
    result = runner.invoke(
        app, ["sweep", *QUICK_REFUSED, "--out", str(tmp_path / "out"), "--name", "x", *args]
    )
    _refused(result, args[0])


def test_malformed_cluster_yaml_names_file_line_column(tmp_path):
    import re

    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster_name: lab\nprovider:\n  type: local\n  head_ip: [10.0.0.1\n  worker_ips: []\n")
    out = tmp_path / "out"
    for argv in (
        ["sweep", *QUICK_REFUSED, "--out", str(out), "--name", "x", "--cluster", str(bad)],
        ["cluster", "status", "--cluster", str(bad)],
    ):
        line = _refused(runner.invoke(app, argv), f"--cluster: {bad}:")
        assert re.search(rf"{re.escape(str(bad))}:\d+:\d+: invalid YAML \(", line), line
    assert not out.exists()


def test_yaml_that_is_not_a_cluster_file_is_refused(tmp_path):
    other = tmp_path / "ci.yaml"
    other.write_text("name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n")
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["sweep", *QUICK_REFUSED, "--out", str(out), "--name", "x", "--cluster", str(other)]
    )
    _refused(result, f"--cluster: {other} has no provider.head_ip")
    assert not out.exists()


def test_unreachable_cluster_head_is_refused_within_the_bound(tmp_path):
    import socket
    import time

    with socket.socket() as s:  # a port nobody listens on: bind, note it, close
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lab = tmp_path / "lab.yaml"
    lab.write_text("provider:\n  type: local\n  head_ip: 127.0.0.1\n")
    out = tmp_path / "out"
    for argv in (
        [
            "sweep",
            *QUICK_REFUSED,
            "--out",
            str(out),
            "--name",
            "x",
            "--cluster",
            str(lab),
            "--port",
            str(port),
        ],
        ["cluster", "status", "--cluster", str(lab), "--port", str(port)],
    ):
        t0 = time.monotonic()
        result = runner.invoke(app, argv)
        _refused(result, f"--cluster: cannot reach the Ray head at 127.0.0.1:{port} within 5 s")
        assert time.monotonic() - t0 < 30  # bounded (PROBE_TIMEOUT_S), not Ray's own long wait
    assert not out.exists()


def test_dataset_folder_without_train_and_test_is_refused(tmp_path):
    (tmp_path / "imgs" / "cats").mkdir(parents=True)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["sweep", *QUICK_REFUSED, "--out", str(out), "--name", "x", "--dataset", f"folder:{tmp_path}/imgs"],
    )
    _refused(result, f"--dataset: dataset folder {tmp_path}/imgs has no train/ subfolder")
    assert not out.exists()


def test_cifar10_missing_offline_is_one_line_exit_2(tmp_path):
    # This machine (and CI) cannot reach the download host (see test_data.py).
    (tmp_path / "empty").mkdir()
    out = tmp_path / "out"
    args = ["--dataset", "cifar10", "--data-dir", str(tmp_path / "empty")]
    result = runner.invoke(app, ["sweep", *QUICK_REFUSED, "--out", str(out), "--name", "x", *args])
    _refused(result, f"--dataset: cifar10 is not in {tmp_path / 'empty'} and could not be downloaded")
    assert not out.exists()


def test_report_names_a_truncated_parquet_file(tmp_path):
    from orchestrator.results.files import write_rows

    path = write_rows(tmp_path, "trials", "k-a1", [{"trial": "t", "attempt": 1, "status": "ok"}])
    path.write_bytes(path.read_bytes()[:100])
    result = runner.invoke(app, ["report", str(tmp_path)])
    _refused(result, f"{path}: not a readable Parquet file")
    assert not (tmp_path / "report").exists()


def test_report_on_an_empty_directory(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path)])
    _refused(result, f"{tmp_path} holds no benchctl results")
    assert not (tmp_path / "report").exists()


def test_report_to_an_unwritable_out_is_one_line_exit_2(tmp_path):
    from orchestrator.results.files import write_rows

    row = {"sweep": "s", "model": "simple_cnn", "device": "cpu", "trial": "t", "epoch": 2, "epoch_s": 1.0}
    write_rows(tmp_path / "res", "epochs", "k-a1", [row])
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = runner.invoke(app, ["report", str(tmp_path / "res"), "--out", str(blocker / "r")])
    _refused(result, "--out")


@pytest.mark.slow  # waits out the probe's answer timeout
def test_a_head_port_that_is_not_ray_is_refused_within_bounded_time(tmp_path):
    # e.g. a wrong --port that hits a web server: the port accepts, nothing speaks Ray's protocol
    import http.server
    import threading
    import time

    from orchestrator.lab.cluster import GCS_ANSWER_TIMEOUT_S, PROBE_TIMEOUT_S

    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):  # the server's own log would land in the output checked below
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        lab = tmp_path / "lab.yaml"
        lab.write_text("provider: {type: local, head_ip: 127.0.0.1}\n")
        port = str(server.server_address[1])
        t0 = time.monotonic()
        result = runner.invoke(app, ["cluster", "status", "--cluster", str(lab), "--port", port])
        line = _refused(result, f"--cluster: 127.0.0.1:{port} accepts connections but no Ray head answered")
        assert "--port" in line
        assert time.monotonic() - t0 < PROBE_TIMEOUT_S + GCS_ANSWER_TIMEOUT_S + 15  # bounded, not minutes
    finally:
        server.shutdown()


def test_report_on_a_file_says_it_is_not_a_directory(tmp_path):
    f = tmp_path / "results.txt"
    f.write_text("not results")
    _refused(runner.invoke(app, ["report", str(f)]), f"{f} is a file, not a results directory")
