"""The per-node data cache: built once, read back equal, keyed by the data set's identity, safe under
two processes at once, rebuilt when unreadable, never fatal; `benchctl cache list/clean`."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from orchestrator.cli import app
from trainables.config import TrialConfig
from trainables.data import dataset_identity, folder_arrays, load_arrays
from trainables.datacache import cached_arrays, entries, entry_path
from trainables.train import run_trial

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BENCHCTL_CACHE", str(root))
    return root


def _write_folder(root: Path, per_class: int = 3) -> Path:
    for split in ("train", "test"):
        for k, name in enumerate(("cat", "dog")):
            (root / split / name).mkdir(parents=True)
            for i in range(per_class):
                img = Image.new("RGB", (40, 36), color=(90 * k, 40 * i, 200))
                img.save(root / split / name / (f"{i}.jpg" if i % 2 else f"{i}.png"))
    return root


def _load(cfg: TrialConfig):
    info = {}
    arrays = load_arrays(cfg, info)
    return arrays, info


def _equal(a, b) -> bool:
    return a.num_classes == b.num_classes and all(
        torch.equal(getattr(a, n), getattr(b, n)) for n in ("train_x", "train_y", "test_x", "test_y")
    )


def test_folder_is_decoded_once_then_read_back_equal(tmp_path, cache):
    cfg = TrialConfig(model="simple_cnn", dataset=f"folder:{_write_folder(tmp_path / 'imgs')}")
    first, info1 = _load(cfg)
    second, info2 = _load(cfg)
    assert (info1["data_cache"], info2["data_cache"]) == ("miss", "hit")
    assert info1["data_s_load"] > 0 and info2["data_s_load"] > 0
    assert _equal(first, second) and _equal(second, folder_arrays(tmp_path / "imgs"))
    assert second.train_x.dtype == torch.uint8 and second.train_y.dtype == torch.int64
    assert [e.key for e in entries(cache)] == [dataset_identity(cfg)]


def test_trial_info_says_where_its_data_came_from(tiny):
    cfg = TrialConfig(model="simple_cnn", epochs=1, max_steps=1, max_eval_steps=1, **tiny)
    first, second = run_trial(cfg).info, run_trial(cfg).info
    assert (first["data_cache"], second["data_cache"]) == ("miss", "hit")
    assert first["data_s_load"] > 0 and second["data_s_load"] > 0


def test_changed_files_are_a_new_data_set(tmp_path):
    root = _write_folder(tmp_path / "imgs")
    cfg = TrialConfig(model="simple_cnn", dataset=f"folder:{root}")
    _load(cfg)
    st = (root / "train" / "cat" / "0.png").stat()
    os.utime(root / "train" / "cat" / "0.png", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched
    assert _load(cfg)[1]["data_cache"] == "miss"
    assert _load(cfg)[1]["data_cache"] == "hit"
    Image.new("RGB", (32, 32), color=(1, 2, 3)).save(root / "train" / "dog" / "new.png")  # added
    arrays, info = _load(cfg)
    assert info["data_cache"] == "miss" and len(arrays.train_y) == 7


def test_synthetic_key_is_sizes_and_seed_not_the_repeat():
    base = {"model": "simple_cnn", "train_size": 40, "test_size": 8}
    assert _load(TrialConfig(**base))[1]["data_cache"] == "miss"
    assert _load(TrialConfig(**base, repeat=1))[1]["data_cache"] == "hit"  # repeats train on one set
    assert _load(TrialConfig(**base, seed=1))[1]["data_cache"] == "miss"
    assert _load(TrialConfig(**{**base, "train_size": 41}))[1]["data_cache"] == "miss"


@pytest.mark.parametrize("damage", ["truncate", "garbage", "huge_header", "other_key"])
def test_unreadable_entry_is_rebuilt(tmp_path, capsys, damage):
    cfg = TrialConfig(model="simple_cnn", train_size=40, test_size=8)
    good, _ = _load(cfg)
    path = entry_path(dataset_identity(cfg))
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:-100])
    elif damage == "garbage":
        path.write_bytes(b"\0" * 1000)
    elif damage == "huge_header":  # a length field no file can hold: refused before it is read
        data = path.read_bytes()
        path.write_bytes(data[:16] + (2**62).to_bytes(8, "little") + data[24:])
    else:  # a whole entry, of another data set, under this one's name
        other = TrialConfig(model="simple_cnn", train_size=40, test_size=8, seed=5)
        _load(other)
        entry_path(dataset_identity(other)).replace(path)
    capsys.readouterr()
    rebuilt, info = _load(cfg)
    assert info["data_cache"] == "miss" and _equal(rebuilt, good)
    assert "is unreadable" in capsys.readouterr().err
    assert _load(cfg)[1]["data_cache"] == "hit"


def test_unusable_root_builds_without_the_cache(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("BENCHCTL_CACHE", str(blocker / "cache"))
    arrays, info = _load(TrialConfig(model="simple_cnn", train_size=40, test_size=8))
    assert info["data_cache"] == "off" and arrays.train_x.shape == (40, 3, 32, 32)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("benchctl: data cache: cannot use")


# ---- two processes at once -------------------------------------------------------------------

# Loads the folder data set through the cache; its build says when it started and waits for
# work/release, so the test controls when the first builder finishes.
_LOADER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import torch
    from trainables.config import TrialConfig
    from trainables.data import dataset_identity, folder_arrays
    from trainables.datacache import cached_arrays

    root, work, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

    def build():
        (work / f"{name}.building").touch()
        while not (work / "release").exists():
            time.sleep(0.02)
        return folder_arrays(root)

    cfg = TrialConfig(model="simple_cnn", dataset=f"folder:{root}")
    arrays, use = cached_arrays(dataset_identity(cfg), build)
    torch.save(dict(vars(arrays)), work / f"{name}.pt")
    print(use.value)
""")


def _start(work: Path, root: Path, name: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, str(work / "loader.py"), str(root), str(work), name],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)  # fmt: skip


def _wait_for(ready, what: str, procs, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert all(p.poll() is None for p in procs), f"a loader ended before {what}"
        assert time.monotonic() < deadline, f"not {what} within {timeout_s:.0f} s"
        time.sleep(0.05)


def _waits_on_a_lock(pid: int) -> bool:
    """The kernel lists `pid` as blocked on an flock (a `->` line of /proc/locks)."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1] == "->" and fields[2] == "FLOCK" and fields[5] == str(pid):
            return True
    return False


@pytest.fixture
def two_loaders(tmp_path):
    root, work = _write_folder(tmp_path / "imgs"), tmp_path / "work"
    work.mkdir()
    (work / "loader.py").write_text(_LOADER)
    procs = []

    def start(name: str) -> subprocess.Popen:
        procs.append(_start(work, root, name))
        return procs[-1]

    yield root, work, start
    for p in procs:
        p.kill()
        p.wait()


@pytest.mark.slow  # two loader processes build one entry
@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_second_process_waits_for_the_first_and_reads_its_entry(two_loaders):
    root, work, start = two_loaders
    first = start("a")
    _wait_for(lambda: (work / "a.building").exists(), "a built", [first])  # a holds the lock
    second = start("b")
    _wait_for(lambda: _waits_on_a_lock(second.pid), "b waited on the lock", [first, second])
    (work / "release").touch()
    assert [p.communicate(timeout=300)[0].strip() for p in (first, second)] == ["miss", "hit"]
    assert not (work / "b.building").exists()  # decoded once, by a
    a, b = (torch.load(work / f"{n}.pt") for n in ("a", "b"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a if k != "num_classes")
    assert torch.equal(a["train_x"], folder_arrays(root).train_x)


@pytest.mark.slow  # two loader processes, one killed
@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_a_builder_that_dies_blocks_nobody(two_loaders, cache):
    root, work, start = two_loaders
    first = start("a")
    _wait_for(lambda: (work / "a.building").exists(), "a built", [first])
    second = start("b")
    _wait_for(lambda: _waits_on_a_lock(second.pid), "b waited on the lock", [first, second])
    first.send_signal(signal.SIGKILL)  # no handler runs: only the kernel releases its lock
    first.wait()
    (work / "release").touch()
    assert second.communicate(timeout=300)[0].strip() == "miss"  # b built it after all
    assert torch.equal(torch.load(work / "b.pt")["train_x"], folder_arrays(root).train_x)
    assert [e.key["dataset"] for e in entries(cache)] == ["folder"]  # stored for the next trial


def test_cached_arrays_keeps_data_sets_apart(tmp_path):
    calls = []

    def build(seed):
        def run():
            calls.append(seed)
            return load_arrays(TrialConfig(model="simple_cnn", train_size=8, test_size=4, seed=seed))

        return run

    a, use_a = cached_arrays({"dataset": "test", "n": 1}, build(1))
    b, use_b = cached_arrays({"dataset": "test", "n": 2}, build(2))
    again, use_again = cached_arrays({"dataset": "test", "n": 1}, build(3))
    assert (use_a, use_b, use_again) == ("miss", "miss", "hit") and calls == [1, 2]
    assert _equal(a, again) and not _equal(a, b)


# ---- the command ------------------------------------------------------------------------------


def test_cache_list_and_clean(tmp_path, cache):
    empty = runner.invoke(app, ["cache", "list"])
    assert empty.exit_code == 0 and f"no cached data sets in {cache}" in empty.output
    _load(TrialConfig(model="simple_cnn", train_size=40, test_size=8))
    _load(TrialConfig(model="simple_cnn", dataset=f"folder:{_write_folder(tmp_path / 'imgs')}"))
    broken = entry_path({"dataset": "test"})
    broken.write_bytes(b"nothing")
    (cache / "notes.lock").write_text("not the cache's")  # a shared root: others' files stay
    listed = runner.invoke(app, ["cache", "list"])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.strip().splitlines()
    assert lines[0].startswith("3 cached data sets") and str(cache) in lines[0]
    synthetic = next(line for line in lines if line.startswith("synthetic-"))
    assert "MiB" in synthetic and "train_size=40 test_size=8 seed=0" in synthetic
    folder = next(line for line in lines if line.startswith("folder-"))
    assert f"path={(tmp_path / 'imgs').resolve()}" in folder and "files=12" in folder
    assert f"{broken.name}" in listed.output and "unreadable (not a benchctl arrays file)" in listed.output

    cleaned = runner.invoke(app, ["cache", "clean"])
    assert cleaned.exit_code == 0 and cleaned.output.startswith("removed 3 cached data sets (")
    assert [p.name for p in cache.iterdir()] == ["notes.lock"]  # its own lock files went too
    assert _load(TrialConfig(model="simple_cnn", train_size=40, test_size=8))[1]["data_cache"] == "miss"


def test_cache_commands_import_no_torch(cache):
    code = (
        "import sys; from orchestrator.commands import cache; from trainables import datacache\n"
        "datacache.entries(); datacache.clean()\n"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
