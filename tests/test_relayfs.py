"""The checkpoint relay (orchestrator/run/relayfs.py) streams: several 200 MB checkpoints going through it at
once, up and back down, leave the driver's and the store actor's memory where they were.

Files go through Tune's own transfer functions (ray.train's _upload_to_fs_path / _download_from_fs_path:
pyarrow copy_files with Tune's 64 MB chunks), run in Ray tasks as a trial would run them.
"""

import filecmp
import os
import shutil
import tempfile
import threading
import time

import pytest

from orchestrator.run.relayfs import (
    CHUNK,
    IN_FLIGHT,
    MAX_CONCURRENCY,
    start_store,
    storage_filesystem,
    upload_failures,
)

pytestmark = pytest.mark.slow  # starts Ray

MB = 1 << 20
FILE_MB = 200
SENDERS = 3  # checkpoints arriving at once


def memory_mb(pid: int) -> dict[str, float]:
    """A process's resident memory: all of it (VmRSS) and its private part (RssAnon). VmRSS also counts
    the pages of Ray's object store (shared memory) the process has touched, a high-water mark of the
    store's use that stays up after the objects are freed; RssAnon is what the process itself holds."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "RssAnon")}


class PeakMemory:
    """The highest memory_mb each of `pids` reaches while the block runs, sampled every 10 ms."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.base = {name: memory_mb(pid) for name, pid in pids.items()}
        self.peak = {name: dict(m) for name, m in self.base.items()}
        self._stop = threading.Event()

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            for name, pid in self.pids.items():
                for key, mb in memory_mb(pid).items():
                    self.peak[name][key] = max(self.peak[name][key], mb)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def growth(self, key: str) -> dict[str, float]:
        return {name: round(self.peak[name][key] - self.base[name][key], 1) for name in self.pids}


@pytest.fixture(scope="module")
def local_ray():
    import ray

    temp = tempfile.mkdtemp(prefix="bcrl", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             _temp_dir=temp, logging_level="ERROR", log_to_driver=False)  # fmt: skip
    yield ray
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


def write_checkpoint(directory, mb: int) -> None:
    """A checkpoint directory holding one `mb` MB file of incompressible, non-sparse bytes."""
    directory.mkdir(parents=True)
    block = os.urandom(MB)
    with open(directory / "state.pt", "wb") as f:
        for i in range(mb):
            f.write(block[i:] + block[:i])  # every MB differs from the last


def test_several_200mb_checkpoints_stream_through_with_flat_driver_and_relay_memory(local_ray, tmp_path):
    ray = local_ray
    source = tmp_path / "local" / "checkpoint_000001"
    write_checkpoint(source, FILE_MB)
    store = start_store("benchctl-store-rss")
    fs = storage_filesystem("benchctl-store-rss")
    actor_pid = ray.get(store.__ray_call__.remote(lambda self: os.getpid()))
    storage = tmp_path / "results" / ".tune"

    @ray.remote(num_cpus=0)
    def upload(i: int, local=source) -> None:
        from ray.train._internal.storage import _upload_to_fs_path

        _upload_to_fs_path(str(local), fs, str(storage / f"trial{i}" / "checkpoint_000001"))

    @ray.remote(num_cpus=0)
    def download(i: int) -> str:
        from ray.train._internal.storage import _download_from_fs_path

        local = tmp_path / f"restore{i}"
        _download_from_fs_path(fs, str(storage / f"trial{i}" / "checkpoint_000001"), str(local))
        return str(local / "state.pt")

    small = tmp_path / "local" / "small"
    write_checkpoint(small, 10 * CHUNK // MB)
    # warm-up, unmeasured: the worker processes start and import, the relay's threads take their first
    # chunks (their malloc arenas and Ray's object store pages are touched once)
    ray.get([upload.remote(-1 - i, small) for i in range(SENDERS)])
    pids = {"driver": os.getpid(), "relay": actor_pid}
    started = time.monotonic()
    with PeakMemory(pids) as up:
        ray.get([upload.remote(i) for i in range(SENDERS)])
    up_s = time.monotonic() - started
    started = time.monotonic()
    with PeakMemory(pids) as down:
        fetched = ray.get([download.remote(i) for i in range(SENDERS)])
    down_s = time.monotonic() - started
    for key in ("RssAnon", "VmRSS"):
        print(f"{SENDERS} x {FILE_MB} MB up {up_s:.1f} s, down {down_s:.1f} s; {key} growth, "
              f"up {up.growth(key)}, down {down.growth(key)}")  # fmt: skip

    for i, path in enumerate(fetched):  # every byte arrived, at storage and back
        assert filecmp.cmp(source / "state.pt", storage / f"trial{i}" / "checkpoint_000001" / "state.pt",
                           shallow=False)  # fmt: skip
        assert filecmp.cmp(source / "state.pt", path, shallow=False)
    assert not list(storage.rglob("*.relay"))  # no temporary file left behind
    # A whole file in the driver or the relay (before chunks: +400 MB of the relay's private memory for
    # these three) would show in its private memory; chunks leave it flat. The store answers
    # MAX_CONCURRENCY calls of CHUNK bytes at a time, which bounds what it holds to far less than a file.
    # (VmRSS, printed above, also counts the pages of Ray's shared object store the relay has touched:
    # a high-water mark of the store's use, not memory the relay holds.)
    assert MAX_CONCURRENCY * CHUNK < 50 * MB and IN_FLIGHT * CHUNK < FILE_MB * MB / 5
    for phase in (up, down):
        for name, grown in phase.growth("RssAnon").items():
            assert grown < 50, f"{name}'s private memory grew {grown} MB moving {SENDERS} x {FILE_MB} MB"


def test_a_full_disk_under_the_relay_raises_enospc_naming_the_file_and_leaves_nothing(local_ray, tmp_path):
    from procutil import small_disk

    from orchestrator.run.diskspace import full_path, is_disk_full

    ray = local_ray
    source = tmp_path / "checkpoint_000002"
    write_checkpoint(source, 3 * CHUNK // MB)  # three chunks; the disk holds one
    store = start_store("benchctl-store-full")  # noqa: F841 - the actor lives as long as its handle
    fs = storage_filesystem("benchctl-store-full")

    @ray.remote(num_cpus=0)
    def upload(dest: str) -> str:
        from ray.train._internal.storage import _upload_to_fs_path

        try:
            _upload_to_fs_path(str(source), fs, dest)
        except OSError as exc:  # what the trial sees: the store's own error, not Ray's wrapper
            return f"{type(exc).__name__}: {exc}"
        return "written"

    with small_disk(tmp_path / "disk", f"{CHUNK + 4096}") as disk:
        dest = disk / "trial" / "checkpoint_000002"
        outcome = ray.get(upload.remote(str(dest)))
        assert not list(disk.rglob("*.relay")) and not (dest / "state.pt").exists()  # nothing half-written
        # pyarrow's copy_files drops an error raised as a file closes, and a file's last chunks land only
        # then: the store keeps every failure, and the driver asks it after each checkpoint
        (path, number, message), *_ = upload_failures("benchctl-store-full")
        assert path == str(dest / "state.pt") and is_disk_full(f"[Errno {number}] {message}")
        if outcome != "written":  # raised while writing: the error names the file the sweep's line names
            assert is_disk_full(outcome) and full_path(outcome, tmp_path) == str(dest / "state.pt")

    # the driver asks the store after each checkpoint, and stops before a row names the lost checkpoint
    from procutil import trial_rows
    from test_results_writer import _Checkpoint, _result, _Trial

    from orchestrator.plan.trial_plan import TrialPlan
    from orchestrator.run.diskspace import DiskFull
    from orchestrator.run.tune_glue import ResultsWriter
    from trainables.config import TrialConfig

    plan = TrialPlan(TrialConfig(model="simple_cnn", epochs=2), sweep="s", store="benchctl-store-full")
    writer, trial = ResultsWriter(tmp_path / "results", {}), _Trial("t1", plan)
    writer.on_trial_start(0, [], trial)
    writer.on_trial_result(0, [], trial, _result(1, host="w1"))
    with pytest.raises(DiskFull) as stop:
        writer.on_checkpoint(0, [], trial, _Checkpoint(dest))
    assert stop.value.path == str(dest / "state.pt") and stop.value.exit_code == 2
    assert [r["checkpoint"] for r in trial_rows(tmp_path / "results")] == [None]

