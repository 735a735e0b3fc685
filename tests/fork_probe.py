"""A child main for tests/test_forkserver.py: reports what a forked trial process starts with.

Run by the fork server in place of trainables.launch.child's main (ForkServer.spawn's `main`); it
writes one JSON object to the result fd and exits with $PROBE_EXIT (default 0)."""

import json
import os
import random


def main() -> None:
    import numpy as np
    import torch

    state = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "random": random.random(),
        "numpy": float(np.random.rand()),
        "torch": float(torch.rand(1)),
        "cpus": sorted(os.sched_getaffinity(0)),
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "niceness": os.getpriority(os.PRIO_PROCESS, 0),
        "cuda_initialized": torch.cuda.is_initialized(),
        "stdin": os.read(0, 100).decode(),
    }
    with os.fdopen(int(os.environ["BENCHCTL_RESULT_FD"]), "w") as out:
        out.write(json.dumps(state) + "\n")
    raise SystemExit(int(os.environ.get("PROBE_EXIT", "0")))
