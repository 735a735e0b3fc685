"""Shared test settings: tiny data so real training runs take seconds on 2 CPU cores; the test tiers.

Tiers: a test that starts Ray, a network namespace or a browser is `slow`, and so is one that trains for
real beyond a few steps or runs trials in child processes (the launchers: isolated, prestart, forkserver);
a parametrized check of seconds a case keeps one or a few cases in the fast tier (test_reference,
test_flops_table).
`pytest -m "not slow"` is the fast tier (under 4 minutes on 2 cores, for editing); plain `pytest`
(scripts/test.sh, CI) runs both. A test is slow by

- a module-level `pytestmark = pytest.mark.slow` (modules of real sweeps),
- `@pytest.mark.slow` on the test, or
- asking for one of SLOW_FIXTURES (fixtures that start Ray, a lab of namespaces, or Chromium): marked
  here, at collection, so a new test that uses them is slow without saying so.

In the fast tier, a test that starts Ray anyway fails (`_no_ray_in_the_fast_tier`), rather than slowing
the tier unnoticed.
"""

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

# Ray and torch both start thread pools sized to the machine; keep tests predictable on 2 cores.
os.environ.setdefault("OMP_NUM_THREADS", "2")
# Data sets trials build go to a cache of this session (inherited by Ray and trial processes), never ~/.cache.
os.environ["BENCHCTL_CACHE"] = tempfile.mkdtemp(prefix="benchctl-test-cache-")
atexit.register(shutil.rmtree, os.environ["BENCHCTL_CACHE"], True)

TINY = {"train_size": 256, "test_size": 128, "batch_size": 32, "workers": 0, "cpus": 2}


@pytest.fixture
def tiny() -> dict:
    return dict(TINY)


@pytest.fixture(autouse=True)
def _environment_restored():
    """A CPU trial run in the test process hides GPUs by setting CUDA_VISIBLE_DEVICES="" in os.environ
    (trainables/device.py); without this, that leaks into every later test's subprocesses (a lab host
    with GPUs in Ray's books then refuses to start)."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


# fixtures that start Ray (ray_tmp: a sweep's own RAY_TMPDIR; local_ray: ray.init), a lab of network
# namespaces (lab), or headless Chromium (chromium)
SLOW_FIXTURES = {"ray_tmp", "local_ray", "lab", "chromium"}
RAY_DAEMONS = {"raylet", "gcs_server"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def _fast_tier(config) -> bool:
    return "not slow" in " ".join((config.getoption("markexpr") or "").split())


def pytest_configure(config):
    if _fast_tier(config):
        # Ray (and every subprocess that starts it, unless a test says otherwise) puts its session
        # under $RAY_TMPDIR/ray: one of our own, short (Ray's socket paths must fit 107 bytes), so a
        # Ray start leaves a trace there even after the sweep removed its session
        os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="bcfast", dir="/tmp")
        atexit.register(shutil.rmtree, os.environ["RAY_TMPDIR"], True)


def _ray_daemons_below(pid: int) -> list[str]:
    """`name (pid)` of raylet/gcs_server processes descended from `pid`, from /proc."""
    children, names = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            end = stat.rindex(")")
            ppid = int(stat[end + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
            names[int(entry.name)] = stat[stat.index("(") + 1 : end]
    found, todo = [], list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        if names.get(child) in RAY_DAEMONS:
            found.append(f"{names[child]} ({child})")
        todo.extend(children.get(child, ()))
    return found


@pytest.fixture(autouse=True)
def _no_ray_in_the_fast_tier(request):
    """In the fast tier (-m "not slow"), fail a test that started Ray: it is slow and must say so."""
    if not _fast_tier(request.config):
        yield
        return
    ray_tmp = Path(os.environ["RAY_TMPDIR"])
    yield
    import sys

    started = []
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        started.append("ray.is_initialized() is true")
        ray.shutdown()
    if daemons := _ray_daemons_below(os.getpid()):
        started.append(f"Ray daemons are running below this pytest: {', '.join(daemons)}")
    if left := sorted(p.name for p in ray_tmp.iterdir()):
        started.append(f"$RAY_TMPDIR {ray_tmp} gained {left}")
        for p in ray_tmp.iterdir():
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
    if started:
        pytest.fail(
            f"{request.node.nodeid} started Ray in the fast tier ({'; '.join(started)}): mark it "
            "@pytest.mark.slow, or have it use a fixture of tests/conftest.py SLOW_FIXTURES",
            pytrace=False,
        )


@pytest.fixture
def chromium() -> str:
    """The headless Chromium binary (Debian's package); skips the test where it is not installed."""
    from procutil import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/install.sh installs it as root, with apt-get)")
    return CHROMIUM


@pytest.fixture
def ray_tmp():
    """A short folder for a test's Ray session (RAY_TMPDIR): Ray's socket paths must fit 107 bytes.
    Afterwards every process still carrying it in its environment is killed, and it is removed."""
    from procutil import pids_with_env

    path = tempfile.mkdtemp(prefix="bcray", dir="/tmp")
    yield path
    for pid in pids_with_env(path):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(path, ignore_errors=True)
