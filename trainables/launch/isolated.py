"""Run one trial in a fresh child process, so that nothing of its supervisor shares the timed loop.

    from trainables.launch.isolated import run_isolated
    result = run_isolated(cfg, on_epoch)      # same contract as trainables.train.run_trial

Why: measured on the H200 host, the same training loop ran 10-15% slower inside a Ray worker than
as a plain process (bench/fidelity_pairs.py, reports/h200/README.md). A Ray worker carries Ray's
core-worker threads, Tune's reporting thread and a large heap of imported modules (longer garbage
collections) into the process that launches the kernels; a launch-bound loop feels all of it. Ray's
trial therefore only supervises: it holds the resources, pins the cores (the child inherits the
affinity, CUDA_VISIBLE_DEVICES and the environment) and relays each epoch with `tune.report`.

Protocol: the parent writes one JSON line to the child's stdin: `{"cfg": TrialConfig,
"checkpoint_dir": path or null, "restore_from": path or null}`; the child runs `run_trial` and writes
one JSON object per line to the file descriptor named in BENCHCTL_RESULT_FD: `{"phase": text}` before
its first epoch's slow steps, `{"info": {...}, "row": {...}}` per epoch, then `{"done": true}`, or
`{"error": "<traceback>"}` if the trial raised. After an epoch that wrote a checkpoint the child waits
for a line on stdin: the parent sends it once the checkpoint is handed on (Ray Tune persists it), so
the copy never runs beside a timed epoch. The child dies with its parent (PR_SET_PDEATHSIG),
so a cancelled or killed Ray trial leaves no training process behind. Nothing is pickled: JSON only.

Start methods (`StartMethod`): `fresh` starts `python -m trainables.launch.isolated` when the trial starts;
`prestarted` (START_METHOD, the default) runs the trial in such a process started before the trial asked
for it, which has done its imports meanwhile (trainables/launch/prestart.py); the plan then also carries
the environment, CPU affinity and niceness a fresh child would have inherited (`process`), which it
takes on before the trial. `forkserver` forks the trial process from a server that imported torch
once (trainables/launch/forkserver.py), which saves the interpreter start and the imports; the child then
runs the same `_child` main. Each way the child reports when its main began and when its imports
were done (`start_times`), so the rows can split a trial's start into phases; a prestarted child's
stamps are counted from when the trial asked for it, so its phases are what the trial waited for.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from trainables.config import START_METHOD, StartMethod, TrialConfig
from trainables.priority import favour_this_process

RESULT_FD_ENV = "BENCHCTL_RESULT_FD"
PARENT_ENV = "BENCHCTL_PARENT_PID"
IDLE_ENV = "BENCHCTL_IDLE_UNTIL_PLAN"  # "1": a prestarted child imports under SCHED_IDLE
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_ROOT = str(Path(__file__).resolve().parents[2])  # the directory that holds the trainables package


class TrialProcessError(RuntimeError):
    """The child failed; the message is its traceback, whose last line is the original 'Type: message'."""


def run_isolated(
    cfg: TrialConfig,
    on_epoch: Callable[[dict, dict], None] | None = None,
    *,
    checkpoint_dir: Path | None = None,
    restore_from: Path | None = None,
    on_phase: Callable[[str], None] | None = None,
    start_method: StartMethod = START_METHOD,
) -> list[dict]:
    """Run `cfg` in a child process; call `on_epoch(info, row)` as its epochs arrive (and `on_phase`
    as it announces its slow start-up steps); return the rows. Arguments as trainables.train.run_trial;
    each epoch's info also carries `start_method` and the child's `start_times` (time.time() stamps:
    spawn, main, imports; none before the trial asked for the child), and `child_times`, the child's
    own main and imports stamps, which for a prestarted child say when it really imported."""
    start_method = StartMethod(start_method)
    env = {
        **os.environ,
        PARENT_ENV: str(os.getpid()),
        "PYTHONPATH": os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p),
    }
    env.pop(RESULT_FD_ENV, None)
    env.pop(IDLE_ENV, None)
    spawned = time.time()
    process = None  # what a prestarted child takes on: a fresh child inherits it
    if start_method is StartMethod.prestarted:
        from trainables.launch import prestart

        child = prestart.take(_launch, env)
        proc, read_fd = child.proc, child.read_fd
        process = {
            "env": env,
            "cpus": sorted(os.sched_getaffinity(0)),
            "niceness": os.getpriority(os.PRIO_PROCESS, 0),  # this thread's: what a Popen child inherits
            "leave_idle": child.idle,
        }
    else:
        read_fd, write_fd = os.pipe()
        env[RESULT_FD_ENV] = str(write_fd)
        try:
            if start_method is StartMethod.forkserver:
                proc = _fork(cfg, env, write_fd)
            else:
                proc = _popen(env, write_fd)
        finally:
            os.close(write_fd)  # the child holds the only write end: EOF on read means it is gone
    rows: list[dict] = []
    error = None
    try:
        plan = {
            "cfg": cfg.to_dict(),
            "checkpoint_dir": str(checkpoint_dir) if checkpoint_dir else None,
            "restore_from": str(restore_from) if restore_from else None,
            "process": process,
        }
        proc.stdin.write(json.dumps(plan).encode() + b"\n")
        proc.stdin.flush()
        with proc.stdin, os.fdopen(read_fd, "rb") as lines:
            for line in lines:
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:  # a line cut off by the child's death: its exit code tells why
                    break
                if "error" in msg:
                    error = msg["error"]
                    continue
                if msg.get("done"):  # not EOF: forked DataLoader workers may hold the pipe a moment longer
                    break
                if "phase" in msg:
                    if on_phase is not None:
                        on_phase(msg["phase"])
                    continue
                rows.append(msg["row"])
                if on_epoch is not None:
                    info = {**msg["info"], "start_method": start_method.value}
                    own = info.get("start_times", {})
                    times = {k: max(v, spawned) for k, v in own.items()}
                    info["start_times"], info["child_times"] = {"spawn": spawned, **times}, own
                    on_epoch(info, msg["row"])
                if "checkpoint_mb" in msg["row"]:
                    with contextlib.suppress(BrokenPipeError):  # the child died: its exit code tells why
                        proc.stdin.write(b"ack\n")
                        proc.stdin.flush()
        code = proc.wait()
    finally:
        if proc.poll() is None:  # the parent is leaving early (an exception, Tune stopping the trial)
            proc.kill()
            proc.wait()
        if start_method is StartMethod.prestarted:
            prestart.done(_launch, env)
    if error is not None:
        raise TrialProcessError(error)
    if code != 0:
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        raise TrialProcessError(f"trial process for {cfg.trial_id} ended with {how} before finishing")
    return rows


def _popen(env: dict, write_fd: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "trainables.launch.isolated"],
        stdin=subprocess.PIPE,
        pass_fds=(write_fd,),
        env=env,
        cwd=_ROOT,
    )


def _launch(env: dict, idle: bool):
    """A prestarted child (trainables/launch/prestart.py's Launch): `python -m trainables.launch.isolated`,
    which imports and then waits for its plan on stdin, under SCHED_IDLE if `idle`."""
    from trainables.launch.prestart import Child

    read_fd, write_fd = os.pipe()
    try:
        proc = _popen({**env, RESULT_FD_ENV: str(write_fd), IDLE_ENV: "1" if idle else "0"}, write_fd)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    return Child(proc, read_fd, env, idle)


def _fork(cfg: TrialConfig, env: dict, write_fd: int):
    """The trial process, forked by this process's fork server; Popen-like (launch/forkserver.py)."""
    from trainables.launch import forkserver

    stdin_read, stdin_write = os.pipe()
    try:
        child = forkserver.server().spawn(
            env={k: v for k, v in env.items() if k != RESULT_FD_ENV},  # the server names the fd
            cwd=_ROOT,
            cpus=sorted(os.sched_getaffinity(0)),
            niceness=os.getpriority(os.PRIO_PROCESS, 0),  # this thread's: what a Popen child inherits
            seed=cfg.run_seed,
            fds=(stdin_read, write_fd, 1, 2),
        )
    except BaseException:
        os.close(stdin_write)
        raise
    finally:
        os.close(stdin_read)
    child.stdin = os.fdopen(stdin_write, "wb")
    return child


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent goes; exit now if it already went."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent still kills the child when it can
        pass
    if os.getppid() != int(os.environ.get(PARENT_ENV, os.getppid())):
        os._exit(1)


def _child() -> None:
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
        run_trial(
            cfg,
            epoch_done,
            checkpoint_dir=plan["checkpoint_dir"] and Path(plan["checkpoint_dir"]),
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
    _child()
