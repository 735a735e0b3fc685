"""trainables/launch/forkserver.py: trial processes forked from a server that imported torch once.

Real processes throughout: a real server, real forks, a real trial (no Ray here: run_isolated's
contract). The probe child (tests/fork_probe.py) reports the state a forked process starts in."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from procutil import children_of, gone

from trainables.config import StartMethod, TrialConfig
from trainables.launch.forkserver import ForkServer
from trainables.launch.isolated import TrialProcessError, run_isolated

pytestmark = pytest.mark.slow  # a real fork server and trials forked from it

ROOT = Path(__file__).resolve().parents[1]
PROBE = "tests.fork_probe:main"


@pytest.fixture(scope="module")
def server():
    s = ForkServer()
    yield s
    s.close()


def _probe(server, *, seed=1, env=None, cpus=None, stdin=b"", exit_code=0):
    """Fork the probe with these settings; return (its report, its exit code)."""
    stdin_r, stdin_w = os.pipe()
    res_r, res_w = os.pipe()
    env = {**os.environ, **(env or {}), "PROBE_EXIT": str(exit_code)}
    try:
        child = server.spawn(
            env=env, cwd=str(ROOT), cpus=cpus or sorted(os.sched_getaffinity(0)),
            niceness=os.getpriority(os.PRIO_PROCESS, 0), seed=seed, fds=(stdin_r, res_w, 1, 2), main=PROBE,
        )  # fmt: skip
    finally:
        os.close(stdin_r)
        os.close(res_w)
    os.write(stdin_w, stdin)
    os.close(stdin_w)
    with os.fdopen(res_r) as f:
        text = f.read()
    return json.loads(text), child.wait()


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def test_each_seed_gives_its_own_streams_and_the_same_seed_reproduces_them(server):
    a, _ = _probe(server, seed=11)
    b, _ = _probe(server, seed=12)
    again, _ = _probe(server, seed=11)
    keys = ("random", "numpy", "torch")
    assert all(a[k] != b[k] for k in keys)  # not the server's inherited state, twice
    assert [a[k] for k in keys] == [again[k] for k in keys]
    assert a["pid"] != again["pid"] and a["ppid"] == server.proc.pid


def test_the_child_has_the_requested_cores_environment_and_stdin(server):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores to tell affinities apart")
    first, second = sorted(os.sched_getaffinity(0))[:2]
    os.environ["BENCHCTL_ONLY_IN_SERVER"] = "1"  # set after the server started: a child still sees it
    try:
        one, _ = _probe(
            server, cpus=[first], env={"CUDA_VISIBLE_DEVICES": "", "BENCHCTL_X": "a"}, stdin=b"hi"
        )
        two, _ = _probe(server, cpus=[second], env={"BENCHCTL_X": "b"})
    finally:
        del os.environ["BENCHCTL_ONLY_IN_SERVER"]
    assert one["cpus"] == [first] and two["cpus"] == [second]
    assert one["env"]["BENCHCTL_X"] == "a" and two["env"]["BENCHCTL_X"] == "b"
    assert one["env"]["CUDA_VISIBLE_DEVICES"] == ""
    assert "BENCHCTL_ONLY_IN_SERVER" in one["env"]  # the environment is the request's, not the server's
    assert one["stdin"] == "hi" and one["cwd"] == str(ROOT)
    assert not one["cuda_initialized"]


def test_the_server_stays_single_threaded_and_never_touches_cuda(server):
    _probe(server)
    assert _threads(server.proc.pid) == 1  # a fork of a multi-threaded process could inherit held locks
    assert (
        "/libcuda.so" not in Path(f"/proc/{server.proc.pid}/maps").read_text()
    )  # the driver: cuInit loads it


def test_a_child_exit_code_reaches_the_supervisor(server):
    _, code = _probe(server, exit_code=3)
    assert code == 3


def test_a_forked_trial_gives_the_rows_a_fresh_one_gives(tiny):
    cfg = TrialConfig(model="simple_cnn", epochs=2, max_steps=2, **tiny)
    seen = []
    fresh = run_isolated(cfg, start_method=StartMethod.fresh)
    forked = run_isolated(cfg, lambda i, r: seen.append(i), start_method=StartMethod.forkserver)
    assert [r["epoch"] for r in forked] == [1, 2]
    assert [r["train_loss"] for r in forked] == [r["train_loss"] for r in fresh]  # same seed, same run
    info = seen[0]
    assert info["start_method"] == "forkserver" and info["trial_process"] == "child"
    assert info["torch_threads"] == 2 and info["cuda_visible_devices"] == ""
    times = info["start_times"]
    assert times["spawn"] <= times["main"] <= times["imports"] <= info["first_step_at"]


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="needs a machine without CUDA for the gpu trial to fail"
)
def test_a_failing_forked_trial_raises_with_its_own_last_line(tiny):
    with pytest.raises(TrialProcessError) as info:
        run_isolated(
            TrialConfig(model="simple_cnn", device="gpu", epochs=1, **tiny), start_method="forkserver"
        )
    assert str(info.value).splitlines()[-1].startswith("trainables.device.DeviceUnavailable: gpu trial")


def test_a_killed_supervisor_leaves_neither_trial_nor_server_behind(tmp_path):
    code = textwrap.dedent(
        """
        import threading
        from trainables.config import TrialConfig
        from trainables.launch.isolated import run_isolated
        cfg = TrialConfig(model="simple_cnn", epochs=50, batch_size=32, workers=0, train_size=4096,
                          test_size=64, cpus=1, max_steps=None)
        t = threading.Thread(target=run_isolated, args=(cfg,), kwargs={"start_method": "forkserver"})
        t.start()  # as Tune runs a trial: in a thread (PDEATHSIG would fire when a thread ends)
        t.join()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    supervisor = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tmp_path)
    server = trial = None
    try:
        deadline = time.monotonic() + 90
        while trial is None and time.monotonic() < deadline and supervisor.poll() is None:
            for s in children_of(supervisor.pid):
                if b"trainables.launch.forkserver" in Path(f"/proc/{s}/cmdline").read_bytes():
                    server = s
                    trial = next(iter(children_of(s)), None)
            time.sleep(0.2)
        assert trial is not None, "the forked trial never appeared"
        supervisor.send_signal(signal.SIGKILL)
        supervisor.wait()
        deadline = time.monotonic() + 15
        while not (gone(trial) and gone(server)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert gone(trial), "the forked trial outlived its supervisor"
        assert gone(server), "the fork server outlived its supervisor"
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
        for pid in (trial, server):
            if pid and not gone(pid):
                os.kill(pid, signal.SIGKILL)
