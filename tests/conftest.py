"""Shared test settings: tiny data so real training runs take seconds on 2 CPU cores."""

import os

import pytest

# Ray and torch both start thread pools sized to the machine; keep tests predictable on 2 cores.
os.environ.setdefault("OMP_NUM_THREADS", "2")

TINY = {"train_size": 256, "test_size": 128, "batch_size": 32, "workers": 0, "cpus": 2}


@pytest.fixture
def tiny() -> dict:
    return dict(TINY)
