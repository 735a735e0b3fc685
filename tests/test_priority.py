"""The trial's priority over Ray's daemons (trainables/priority.py), on real processes and threads."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from trainables.priority import DAEMON_NICENESS, TRIAL_NICENESS, calm, favour_this_process

AS_ROOT = os.geteuid() == 0
FAVOUR = "from trainables.priority import favour_this_process as f; print(f())"


def _niceness_after_favour(**popen) -> int:
    out = subprocess.run([sys.executable, "-c", FAVOUR], capture_output=True, text=True, check=True, **popen)
    return int(out.stdout)


@pytest.mark.skipif(not AS_ROOT, reason="needs CAP_SYS_NICE (root)")
def test_with_cap_sys_nice_the_trial_runs_below_the_daemons():
    assert _niceness_after_favour() == TRIAL_NICENESS


def test_without_cap_sys_nice_the_trial_keeps_its_niceness_and_does_not_fail():
    # as root: a forked copy of this process drops to an unprivileged user first, as a lab user's trial
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            if AS_ROOT:
                os.setuid(65534)
            os.write(write, str(favour_this_process()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        got = f.read()
    os.waitpid(pid, 0)
    assert got == str(os.getpriority(os.PRIO_PROCESS, 0))


@pytest.mark.skipif(not AS_ROOT, reason="needs CAP_SYS_NICE (root) to start below the target")
def test_favour_leaves_a_process_already_below_the_target_where_it_is():
    below = TRIAL_NICENESS - 1
    assert _niceness_after_favour(preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, below)) == below


SPIN = """
import os, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
late = threading.Thread(target=lambda: (os.nice(15), time.sleep(60)), daemon=True)  # already nicer
late.start()
print("ready", flush=True)
time.sleep(60)
"""


def test_calm_renices_every_thread_of_a_process_and_never_lowers_one():
    proc = subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.2)  # the late thread's os.nice has run
        assert calm([proc.pid]) == [proc.pid]
        tids = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task")]
        nice = sorted(os.getpriority(os.PRIO_PROCESS, t) for t in tids)
        assert len(tids) == 3 and nice == [DAEMON_NICENESS, DAEMON_NICENESS, 15]
    finally:
        proc.kill()
        proc.wait()
    assert calm([proc.pid]) == []  # gone: left out, no error
