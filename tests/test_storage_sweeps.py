"""`--storage` and `--checkpoint-every` in real sweeps: a shared directory across the hosts of a lab of
network namespaces, and S3 on a real S3-compatible server (moto's, started here on loopback), where a
driver killed after epoch 2 is resumed from the checkpoint in the bucket."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from labnet import LabNet
from procutil import sigkill_when
from typer.testing import CliRunner

from orchestrator.analysis.stats import ok_epochs
from orchestrator.cli import app
from orchestrator.results.reader import read_results

pytestmark = pytest.mark.slow  # real Ray sweeps

# inline: no child process per trial to start (where the loop runs is not what these tests are about)
TINY = ["--models", "simple_cnn", "--devices", "cpu", "--batch-size", "32", "--train-size", "1024",
        "--test-size", "128", "--max-eval-steps", "1", "--workers", "0",
        "--trial-process", "inline"]  # fmt: skip




@pytest.fixture
def s3(monkeypatch):
    """A bucket `bkt` on moto's S3-compatible server on a free loopback port: its host:port."""
    pytest.importorskip("moto.server", reason="moto[server] (pyproject's test extras) is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "moto's server did not start"
                time.sleep(0.1)
        # any credentials do for moto; the AWS SDK in the driver and in every trial finds them here
        for key, value in (("AWS_ACCESS_KEY_ID", "benchctl"), ("AWS_SECRET_ACCESS_KEY", "benchctl"),
                           ("AWS_DEFAULT_REGION", "us-east-1")):  # fmt: skip
            monkeypatch.setenv(key, value)
        endpoint = f"127.0.0.1:{port}"
        code = ("import sys, pyarrow.fs as f\n"  # a fresh process, as _checkpoints says why
                "f.S3FileSystem(endpoint_override=sys.argv[1], scheme='http', allow_bucket_creation=True)"
                ".create_dir('bkt')")  # fmt: skip
        subprocess.run([sys.executable, "-c", code, endpoint], check=True, env={**os.environ})
        yield endpoint
    finally:
        server.kill()
        server.wait()


def _checkpoints(endpoint: str, base: str) -> list[str]:
    """The checkpoint folders Tune left under `base` (`.../checkpoint_000001`), each with its state.pt.
    Listed from a fresh process: pyarrow's I/O threads in this one may have been spawned while an earlier
    in-process sweep held its private network namespace, where nothing listens on the server's port."""
    code = (
        "import sys, pyarrow.fs as f\n"
        "fs = f.S3FileSystem(endpoint_override=sys.argv[1], scheme='http')\n"
        "for i in fs.get_file_info(f.FileSelector(sys.argv[2], recursive=True)): print(i.path)"
    )
    listed = subprocess.run([sys.executable, "-c", code, endpoint, base], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    return _state_dirs(listed.stdout.split())


def _local_checkpoints(base: Path) -> list[str]:
    """The same for a directory on this machine."""
    return _state_dirs(str(p) for p in base.rglob("state.pt"))


def _state_dirs(paths) -> list[str]:
    return sorted(str(Path(p).parent) for p in paths if p.endswith("/state.pt"))


def test_s3_storage_holds_the_checkpoints_every_2_epochs_and_a_resume_continues_from_the_bucket(
    s3, tmp_path, ray_tmp
):
    uri = f"s3://bkt/ckpt?endpoint_override={s3}&scheme=http"
    out = tmp_path / "out"
    args = ["sweep", *TINY, "--epochs", "4", "--max-steps", "8", "--checkpoint-every", "2", "--storage", uri,
            "--out", str(out), "--name", "s3"]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator", *args],
                            env={**os.environ, "RAY_TMPDIR": ray_tmp},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    # killed once the checkpoint after epoch 2 is on record: the trial is then in its epoch 3 (or 4)
    sigkill_when(proc, out / "s3", lambda rows: any(r["checkpoint_epoch"] == 2 for r in rows),
                 "epoch 2 was checkpointed")  # fmt: skip
    epochs, trials = read_results(out / "s3")
    assert list(trials.status) == ["partial"] and trials.checkpoint.iloc[0].startswith("s3://bkt/ckpt/s3/")
    assert not (out / "s3" / ".tune").exists()  # Tune's storage is the bucket, the results stay here
    assert [f"s3://{p}" for p in _checkpoints(s3, "bkt/ckpt/s3")] == list(trials.checkpoint)  # one, kept
    first = epochs.sort_values("epoch")
    assert first.checkpoint_mb.notna().tolist() == [e == 2 for e in first.epoch]  # not after epoch 1 or 3

    # --storage given again: the same; else stored. A process of its own, as the first run (_checkpoints)
    result = subprocess.run([sys.executable, "-m", "orchestrator", *args, "--resume"],
                            env={**os.environ, "RAY_TMPDIR": ray_tmp},
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 trials complete, 1 to run, 1 continuing from their checkpoints" in result.stdout + result.stderr
    epochs, trials = read_results(out / "s3")
    second = trials[trials.attempt == 2].iloc[0]
    assert second.status == "ok" and second.restored_from_epoch == 2  # fetched from the bucket
    assert second.checkpoint.startswith("s3://bkt/ckpt/s3-resume-") and second.checkpoint_epoch == 4
    final = ok_epochs(epochs, trials)
    assert list(final.epoch) == [1, 2, 3, 4] and list(final.from_attempt) == [1, 1, 2, 2]  # epoch 3 re-run
    assert final.restored.fillna(False).tolist() == [False, False, True, False]
    assert final.checkpoint_mb.notna().tolist() == [False, True, False, True]  # after epochs 2 and 4 only
    assert (final.checkpoint_mb.dropna() > 0).all() and (final.checkpoint_s.dropna() > 0).all()
    assert len(_checkpoints(s3, "bkt/ckpt")) == 2  # the latest of each run: after epochs 2 and 4

    moved = [*args[: args.index("--storage")], "--storage", str(tmp_path), *args[args.index("--out") :]]
    other = CliRunner().invoke(app, [*moved, "--resume"])
    assert other.exit_code == 2 and f"storage: '{uri}' -> '{tmp_path}'" in other.output  # checkpoints stay


@pytest.fixture
def lab():
    with LabNet(token=None) as net:
        yield net


@pytest.mark.skipif(LabNet.unavailable() is not None, reason=str(LabNet.unavailable()))
def test_a_shared_directory_holds_every_hosts_checkpoints_without_the_relay(lab, tmp_path):
    shared = Path(tempfile.mkdtemp(prefix="bcshared", dir="/dev/shm"))  # hosts have their own /tmp, not this
    try:
        lab.host("head", cpus=0, head=True)
        lab.host("w1", cpus=1)
        lab.host("w2", cpus=1)
        lab.driver_node()
        lab.wait_nodes(4)
        yaml = lab.cluster_file(tmp_path)
        out = tmp_path / "out"
        run = subprocess.run(
            [sys.executable, "-m", "orchestrator", "sweep", *TINY, "--cpus-per-trial", "1", "--repeats", "2",
             "--epochs", "3", "--max-steps", "5", "--checkpoint-every", "2", "--storage", f"file://{shared}",
             "--cluster", str(yaml), "--out", str(out), "--name", "nfs"],
            env={**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, **lab.env},
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        said = "checkpoints: after every 2 epochs since the last one, and after the last epoch; the latest"
        assert f"{said} kept per trial, in file://{shared}" in run.stdout
        epochs, trials = read_results(out / "nfs")
        assert (trials.status == "ok").all() and set(trials.host) == {"w1", "w2"}
        # each host wrote its trial's checkpoint into the shared directory itself: no relay on the driver
        assert not (out / "nfs" / ".tune").exists()
        assert sorted(trials.checkpoint) == _local_checkpoints(shared / "nfs")
        assert all(Path(c).is_relative_to(shared) for c in trials.checkpoint)
        assert (trials.checkpoint_epoch == 3).all()
        taken = epochs.sort_values(["trial", "epoch"]).checkpoint_mb.notna().tolist()
        assert taken == [False, True, True] * 2  # after epoch 2, and after the last
    finally:
        shutil.rmtree(shared, ignore_errors=True)
