"""Shared test settings: tiny data so real training runs take seconds on 2 CPU cores."""

import atexit
import os
import shutil
import tempfile

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
