"""The trial's child process: its main, and the names the supervisor and the fork server share with it.

    python -m trainables.launch.child      # a fresh or prestarted child (trainables/launch/isolated.py)
    trainables.launch.child:main           # what a forked child runs (trainables/launch/forkserver.py)

The protocol is trainables/launch/isolated.py's: one JSON plan on stdin, one JSON object per line on
the file descriptor named in BENCHCTL_RESULT_FD. It lives in its own module, below both the supervisor
(isolated.py) and the fork server, so that each of them imports it and neither imports the other's
side: the fork server needs the child main and its environment names, not the supervisor.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from trainables.config import CheckpointPolicy, TrialConfig
from trainables.priority import favour_this_process

RESULT_FD_ENV = "BENCHCTL_RESULT_FD"
PARENT_ENV = "BENCHCTL_PARENT_PID"
IDLE_ENV = "BENCHCTL_IDLE_UNTIL_PLAN"  # "1": a prestarted child imports under SCHED_IDLE
ROOT = str(Path(__file__).resolve().parents[2])  # the directory that holds the trainables package
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent goes; exit now if it already went."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent still kills the child when it can
        pass
    if os.getppid() != int(os.environ.get(PARENT_ENV, os.getppid())):
        os._exit(1)


def main() -> None:
    main_at = time.time()
    _die_with_parent()
    favour_this_process()  # before torch is imported: every thread it starts inherits the niceness
    if os.environ.pop(IDLE_ENV, "0") == "1":  # a spare: import only on CPU time nobody else wants
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    out = os.fdopen(int(os.environ.pop(RESULT_FD_ENV)), "w", buffering=1)
    os.environ.pop(PARENT_ENV, None)

    def send(msg: dict) -> None:
        out.write(json.dumps(msg, default=str) + "\n")

    def epoch_done(info: dict, row: dict) -> None:
        times = {"main": main_at, "imports": imports_at}
        send({"info": {**info, "trial_process": "child", "start_times": times}, "row": row})
        if "checkpoint_mb" in row:
            sys.stdin.readline()  # the parent's go-ahead: its copy of the checkpoint is done

    try:
        from trainables.train import run_trial

        imports_at = time.time()
        plan = json.loads(sys.stdin.readline())
        if plan.get("process"):
            _take_on(plan["process"])
        cfg = TrialConfig.from_dict(plan["cfg"])
        policy = plan["checkpoint_policy"]
        run_trial(
            cfg,
            epoch_done,
            checkpoint_dir=plan["checkpoint_dir"] and Path(plan["checkpoint_dir"]),
            checkpoint_policy=CheckpointPolicy(**policy) if policy else None,
            restore_from=plan["restore_from"] and Path(plan["restore_from"]),
            on_phase=lambda text: send({"phase": text}),
        )
        send({"done": True})
    except BaseException:  # noqa: BLE001 - everything goes back to the parent, then a non-zero exit
        send({"error": traceback.format_exc().rstrip()})
        out.close()
        sys.exit(1)
    out.close()


def _take_on(process: dict) -> None:
    """A prestarted child becomes what a fresh one would have been from its start: the supervisor's
    environment, CPU affinity and niceness (then favour_this_process, as at a fresh start), on each
    of its threads (the imports started some: OpenBLAS's pool), and SCHED_OTHER again."""
    os.environ.clear()
    os.environ.update({k: v for k, v in process["env"].items() if k not in (RESULT_FD_ENV, PARENT_ENV)})
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    for tid in tids:
        if process["leave_idle"]:
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        os.sched_setaffinity(tid, process["cpus"])
    with contextlib.suppress(PermissionError):  # lowering needs CAP_SYS_NICE, as at a fresh start
        os.setpriority(os.PRIO_PROCESS, 0, process["niceness"])
    niceness = favour_this_process()
    for tid in tids:
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, tid, niceness)


if __name__ == "__main__":
    main()
