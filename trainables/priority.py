"""Keep Ray's daemons out of the timed loop by priority, not by an idle core.

    niceness = favour_this_process()      # in the trial process, before torch starts its threads
    done = calm(pids)                      # driver of a local sweep: the Ray daemons it started

A CPU cell uses every core of its node (orchestrator/plan/matrix.py). What else runs there is light:
measured on the 2-core dev host, Ray's daemons (GCS, raylet, monitor, log monitor, dashboard and
runtime-env agents) took about 2% of one core together while idle, far from the 50% of the host that
a core kept idle for them cost. They still wake up now and then, and a torch thread they preempt
holds up the others at the next barrier, so the trial process gets the better priority:

- With CAP_SYS_NICE (root), the trial process sets its niceness to TRIAL_NICENESS (-5), below the
  daemons' and the driver's 0. Niceness is per thread on Linux and inherited by threads and
  processes created later, so this runs before torch starts its intra-op pool and the DataLoader
  forks its workers.
- Without it a process may only raise its niceness, so the trial keeps what it inherited (a local
  sweep's workers run at 0: orchestrator/lab/cluster.py), and a local sweep raises the daemons it
  started, every thread of each by PID, to DAEMON_NICENESS (10). Never the raylet: Ray starts each
  worker at the raylet's niceness plus RAY_worker_niceness (measured: raylet at 10 gave workers 10,
  13 with RAY_worker_niceness=3), so a calmer raylet would calm the trials too.

Every trial row records the niceness its loop ran at (`niceness`); spec.json's provenance records
what was done to the daemons (`ray_daemons`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TRIAL_NICENESS = -5  # better than Ray's daemons and the driver (0), without CAP_SYS_NICE unreachable
DAEMON_NICENESS = 10  # worse than a trial at 0, the best an unprivileged trial can keep


def favour_this_process(target: int = TRIAL_NICENESS) -> int:
    """Lower this thread's niceness to `target` when allowed (never raise it); return the niceness
    it runs at now. Threads and processes it starts afterwards inherit the value."""
    now = os.getpriority(os.PRIO_PROCESS, 0)
    if now > target:
        with contextlib.suppress(PermissionError):  # no CAP_SYS_NICE: keep the inherited niceness
            os.setpriority(os.PRIO_PROCESS, 0, target)
    return os.getpriority(os.PRIO_PROCESS, 0)


def calm(pids: list[int], niceness: int = DAEMON_NICENESS) -> list[int]:
    """Raise every thread of each process in `pids` to at least `niceness` (a process may always make
    its own processes nicer; the value is only ever raised). Returns the PIDs whose threads were all
    set; a process that is gone or not ours is left out."""
    done = []
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir(Path("/proc") / str(pid) / "task")]
            for tid in tids:  # setpriority(PRIO_PROCESS, pid) would reach the main thread only
                with contextlib.suppress(ProcessLookupError):  # a thread that just ended
                    if os.getpriority(os.PRIO_PROCESS, tid) < niceness:
                        os.setpriority(os.PRIO_PROCESS, tid, niceness)
        except (FileNotFoundError, PermissionError):  # the process is gone, or not ours
            continue
        done.append(pid)
    return done
