"""trainables/launch/prestart.py: each trial in a fresh interpreter that was started before the trial asked.

Real processes throughout (no Ray here: run_isolated's contract). What a prestarted child is while it
waits, and what it has become once its trial runs, is read from /proc."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from procutil import children_of, gone

from trainables.config import StartMethod, TrialConfig
from trainables.launch import prestart
from trainables.launch.isolated import run_isolated
from trainables.priority import TRIAL_NICENESS

pytestmark = pytest.mark.slow  # trials trained in prestarted child processes

ROOT = Path(__file__).resolve().parents[1]
SCHED_OTHER, SCHED_IDLE = 0, 5
needs_cap = pytest.mark.skipif(
    not prestart.can_undo_idle(), reason="a spare waits under SCHED_IDLE only with CAP_SYS_NICE"
)


@pytest.fixture(autouse=True)
def _no_spare_left():
    prestart.drop()
    yield
    prestart.drop()


def _waiting_spare() -> int:
    """PID of the spare this process keeps (it is started on the prestart thread)."""
    with prestart._lock:
        assert prestart._spare is not None, "no spare is waiting"
        return prestart._spare.result().proc.pid


def _threads(pid: int) -> dict[int, dict]:
    """Per thread: scheduling policy, niceness and allowed CPUs, from /proc."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:  # a thread that just ended
            continue
        cpus = next(line.split()[1] for line in status.splitlines() if line.startswith("Cpus_allowed_list"))
        out[int(tid)] = {"policy": int(stat[38]), "nice": int(stat[16]), "cpus": cpus}
    return out


def test_a_prestarted_trial_gives_the_rows_a_fresh_one_gives_in_its_own_process(tiny):
    cfg = TrialConfig(model="simple_cnn", epochs=2, max_steps=2, **tiny)
    fresh = run_isolated(cfg, start_method=StartMethod.fresh)
    seen = []
    first = run_isolated(cfg, lambda i, r: seen.append(i), start_method=StartMethod.prestarted)
    assert [r["train_loss"] for r in first] == [r["train_loss"] for r in fresh]  # same seed, same run
    info = seen[0]
    assert info["start_method"] == "prestarted" and info["trial_process"] == "child"
    assert info["torch_threads"] == 2 and info["cuda_visible_devices"] == ""
    times = info["start_times"]
    assert times["spawn"] <= times["main"] <= times["imports"] <= info["first_step_at"]
    spare = _waiting_spare()
    asked_at, later = time.time(), []
    second = run_isolated(cfg, lambda i, r: later.append(i), start_method="prestarted")
    assert [r["train_loss"] for r in second] == [r["train_loss"] for r in fresh]
    own, counted = later[0]["child_times"], later[0]["start_times"]
    assert own["main"] < asked_at <= counted["main"]  # the spare began before; the phases count from the ask
    assert counted["imports"] == max(own["imports"], counted["spawn"])
    assert _waiting_spare() != spare  # the spare ran that trial and ended; the next one is another process
    with pytest.raises(ProcessLookupError):
        os.kill(spare, 0)


@needs_cap
def test_a_spare_waits_under_sched_idle_and_its_trial_runs_as_a_fresh_child_would(tiny):
    quick = TrialConfig(model="simple_cnn", epochs=1, max_steps=1, **tiny)
    run_isolated(quick, start_method="prestarted")
    spare = _waiting_spare()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_threads(spare)) < 2:  # its imports start OpenBLAS's pool
        time.sleep(0.1)
    waiting = _threads(spare)
    assert {t["policy"] for t in waiting.values()} == {SCHED_IDLE}

    long = TrialConfig(model="simple_cnn", epochs=2, max_steps=4, **tiny)
    seen, running = [], {}
    allowed = sorted(os.sched_getaffinity(0))

    def supervise():
        os.sched_setaffinity(0, allowed[:1])  # this thread's cores: what a fresh child would inherit
        run_isolated(long, lambda i, r: (seen.append(i), running.update(_threads(spare))),
                     start_method="prestarted")  # fmt: skip

    t = threading.Thread(target=supervise)
    t.start()
    t.join()
    assert seen and running, "the trial never reported"
    assert {t["policy"] for t in running.values()} == {SCHED_OTHER}
    assert {t["cpus"] for t in running.values()} == {str(allowed[0])}
    # a fresh child favours itself (CAP_SYS_NICE: down to TRIAL_NICENESS), every thread alike
    assert {t["nice"] for t in running.values()} == {seen[0]["niceness"]}
    assert seen[0]["niceness"] == min(TRIAL_NICENESS, os.getpriority(os.PRIO_PROCESS, 0))


def test_a_spare_started_under_another_environment_is_not_used(tiny, monkeypatch):
    cfg = TrialConfig(model="simple_cnn", epochs=1, max_steps=1, **tiny)
    run_isolated(cfg, start_method="prestarted")
    spare = _waiting_spare()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # read at import: the spare imported with the old value
    run_isolated(cfg, start_method="prestarted")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not gone(spare):
        time.sleep(0.1)
    assert gone(spare), "the stale spare was neither used nor ended"


def test_a_killed_supervisor_leaves_neither_trial_nor_spare_behind(tmp_path):
    code = textwrap.dedent(
        """
        import threading
        from trainables.config import TrialConfig
        from trainables.launch.isolated import run_isolated
        cfg = TrialConfig(model="simple_cnn", epochs=1, max_steps=1, batch_size=32, workers=0,
                          train_size=256, test_size=64, cpus=1)
        def run(c):  # as Tune runs trials: each in a thread of its own, which ends with the trial
            t = threading.Thread(target=run_isolated, args=(c,), kwargs={"start_method": "prestarted"})
            t.start()
            t.join()
        run(cfg)
        run(TrialConfig(**{**cfg.to_dict(), "epochs": 50, "max_steps": None, "train_size": 4096}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    supervisor = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tmp_path)
    children: list[int] = []
    # the second trial runs in the first trial's spare; with CAP_SYS_NICE the next spare waits beside it
    want = 2 if prestart.can_undo_idle() else 1
    try:
        deadline = time.monotonic() + 120
        while len(children) < want and time.monotonic() < deadline and supervisor.poll() is None:
            children = children_of(supervisor.pid)
            time.sleep(0.2)
        assert len(children) >= want, f"expected a running trial and a waiting spare, saw {children}"
        time.sleep(1.0)  # the first trial's thread has ended: a spare tied to it would be gone already
        assert not any(gone(c) for c in children)
        supervisor.send_signal(signal.SIGKILL)
        supervisor.wait()
        deadline = time.monotonic() + 15
        while not all(gone(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(gone(c) for c in children), "a child outlived its supervisor"
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
        for pid in children:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
