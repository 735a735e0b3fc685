"""Run one trial in a fresh child process, so that nothing of its supervisor shares the timed loop.

    from trainables.launch.isolated import run_isolated
    result = run_isolated(cfg, on_epoch)      # same contract as trainables.train.run_trial
    FreshRunner().run(cfg, on_epoch)          # the same, as a TrialRunner (trainables/launch/runner.py)

Why: measured on the H200 host, the same training loop ran 10-15% slower inside a Ray worker than
as a plain process (bench/fidelity_pairs.py, reports/h200/README.md). A Ray worker carries Ray's
core-worker threads, Tune's reporting thread and a large heap of imported modules (longer garbage
collections) into the process that launches the kernels; a launch-bound loop feels all of it. Ray's
trial therefore only supervises: it holds the resources, pins the cores (the child inherits the
affinity, CUDA_VISIBLE_DEVICES and the environment) and relays each epoch with `tune.report`.

Protocol (the child's side: trainables/launch/child.py): the parent writes one JSON line to the child's
stdin: `{"cfg": TrialConfig, "checkpoint_dir": path or null, "checkpoint_policy": CheckpointPolicy or
null, "restore_from": path or null}`; the child runs `run_trial` and writes one JSON object per line
to the file descriptor named in BENCHCTL_RESULT_FD: `{"phase": text}` before its first epoch's slow
steps, `{"info": {...}, "row": {...}}` per epoch, then `{"done": true}`, or `{"error": "<traceback>"}`
if the trial raised. After an epoch that wrote a checkpoint the child waits for a line on stdin: the
parent sends it once the checkpoint is handed on (Ray Tune persists it), so the copy never runs
beside a timed epoch. The child dies with its parent (PR_SET_PDEATHSIG), so a cancelled or killed Ray
trial leaves no training process behind. Nothing is pickled: JSON only.

Start methods (`StartMethod`, one ChildRunner each): `fresh` starts `python -m trainables.launch.child`
when the trial starts; `prestarted` (START_METHOD, the default) runs the trial in such a process started
before the trial asked for it, which has done its imports meanwhile (trainables/launch/prestart.py);
the plan then also carries the environment, CPU affinity and niceness a fresh child would have
inherited (`process`), which it takes on before the trial. `forkserver` forks the trial process from
a server that imported torch once (trainables/launch/forkserver.py), which saves the interpreter start
and the imports; the child then runs the same child main. Each way the child reports when its main
began and when its imports were done (`start_times`), so the rows can split a trial's start into
phases; a prestarted child's stamps are counted from when the trial asked for it, so its phases are
what the trial waited for.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from trainables.config import START_METHOD, CheckpointPolicy, StartMethod, TrialConfig
from trainables.launch import forkserver, prestart
from trainables.launch.child import IDLE_ENV, PARENT_ENV, RESULT_FD_ENV, ROOT


class TrialProcessError(RuntimeError):
    """The child failed; the message is its traceback, whose last line is the original 'Type: message'."""


class ChildRunner:
    """A TrialRunner (trainables/launch/runner.py) that runs the trial in a child process. The three
    ways differ only in how the child comes to be (`_start`) and what follows its end (`_finish`);
    the relay of its plan and epochs is this one `run`."""

    start_method: ClassVar[StartMethod]

    def _start(self, cfg: TrialConfig, env: dict) -> tuple[subprocess.Popen, int, dict | None]:
        """The child, the read end of its result pipe, and what it must take on before the trial (a
        prestarted child: what a fresh one inherits) or None. By default: a pipe, then `_spawn`."""
        read_fd, write_fd = os.pipe()
        env[RESULT_FD_ENV] = str(write_fd)
        try:
            proc = self._spawn(cfg, env, write_fd)
        finally:
            os.close(write_fd)  # the child holds the only write end: EOF on read means it is gone
        return proc, read_fd, None

    def _spawn(self, cfg: TrialConfig, env: dict, write_fd: int):
        raise NotImplementedError

    def _finish(self, env: dict) -> None:
        """The trial's process has ended (or was killed): nothing to do by default."""

    def run(
        self,
        cfg: TrialConfig,
        on_epoch: Callable[[dict, dict], None] | None = None,
        *,
        checkpoint_dir: Path | None = None,
        checkpoint_policy: CheckpointPolicy | None = None,
        restore_from: Path | None = None,
        on_phase: Callable[[str], None] | None = None,
    ) -> list[dict]:
        """Run `cfg` in a child process; call `on_epoch(info, row)` as its epochs arrive (and
        `on_phase` as it announces its slow start-up steps); return the rows. Arguments as
        trainables.train.run_trial; each epoch's info also carries `start_method` and the child's
        `start_times` (time.time() stamps: spawn, main, imports; none before the trial asked for the
        child), and `child_times`, the child's own main and imports stamps, which for a prestarted
        child say when it really imported."""
        env = {
            **os.environ,
            PARENT_ENV: str(os.getpid()),
            "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p),
        }
        env.pop(RESULT_FD_ENV, None)
        env.pop(IDLE_ENV, None)
        spawned = time.time()
        proc, read_fd, process = self._start(cfg, env)
        rows: list[dict] = []
        error = None
        try:
            plan = {
                "cfg": cfg.to_dict(),
                "checkpoint_dir": str(checkpoint_dir) if checkpoint_dir else None,
                "checkpoint_policy": checkpoint_policy.to_dict() if checkpoint_policy else None,
                "restore_from": str(restore_from) if restore_from else None,
                "process": process,
            }
            proc.stdin.write(json.dumps(plan).encode() + b"\n")
            proc.stdin.flush()
            with proc.stdin, os.fdopen(read_fd, "rb") as lines:
                for line in lines:
                    try:
                        msg = json.loads(line)
                    except json.JSONDecodeError:  # a line cut off by the child's death: see its exit code
                        break
                    if "error" in msg:
                        error = msg["error"]
                        continue
                    if msg.get("done"):  # not EOF: forked DataLoader workers may hold the pipe a moment
                        break
                    if "phase" in msg:
                        if on_phase is not None:
                            on_phase(msg["phase"])
                        continue
                    rows.append(msg["row"])
                    if on_epoch is not None:
                        info = {**msg["info"], "start_method": self.start_method.value}
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
            self._finish(env)
        if error is not None:
            raise TrialProcessError(error)
        if code != 0:
            how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            raise TrialProcessError(f"trial process for {cfg.trial_id} ended with {how} before finishing")
        return rows


class FreshRunner(ChildRunner):
    """A new interpreter, started when the trial starts: `python -m trainables.launch.child`."""

    start_method = StartMethod.fresh

    def _spawn(self, cfg: TrialConfig, env: dict, write_fd: int) -> subprocess.Popen:
        return _popen(env, write_fd)


class PrestartedRunner(ChildRunner):
    """A new interpreter started before the trial asked for it (trainables/launch/prestart.py); it
    takes on the environment, CPU affinity and niceness a fresh child would have inherited."""

    start_method = StartMethod.prestarted

    def _start(self, cfg: TrialConfig, env: dict) -> tuple[subprocess.Popen, int, dict | None]:
        child = prestart.take(_launch, env)
        process = {
            "env": env,
            "cpus": sorted(os.sched_getaffinity(0)),
            "niceness": os.getpriority(os.PRIO_PROCESS, 0),  # this thread's: what a Popen child inherits
            "leave_idle": child.idle,
        }
        return child.proc, child.read_fd, process

    def _finish(self, env: dict) -> None:
        prestart.done(_launch, env)  # the next spare starts now, where none waits yet


class ForkserverRunner(ChildRunner):
    """A fork of this process's fork server, which imported torch once (launch/forkserver.py)."""

    start_method = StartMethod.forkserver

    def _spawn(self, cfg: TrialConfig, env: dict, write_fd: int):
        return _fork(cfg, env, write_fd)


CHILD_RUNNERS: dict[StartMethod, type[ChildRunner]] = {
    r.start_method: r for r in (FreshRunner, PrestartedRunner, ForkserverRunner)
}


def run_isolated(
    cfg: TrialConfig,
    on_epoch: Callable[[dict, dict], None] | None = None,
    *,
    checkpoint_dir: Path | None = None,
    checkpoint_policy: CheckpointPolicy | None = None,
    restore_from: Path | None = None,
    on_phase: Callable[[str], None] | None = None,
    start_method: StartMethod = START_METHOD,
) -> list[dict]:
    """Run `cfg` in a child process started the `start_method` way (ChildRunner.run says the rest)."""
    runner = CHILD_RUNNERS[StartMethod(start_method)]()
    return runner.run(
        cfg,
        on_epoch,
        checkpoint_dir=checkpoint_dir,
        checkpoint_policy=checkpoint_policy,
        restore_from=restore_from,
        on_phase=on_phase,
    )


def _popen(env: dict, write_fd: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "trainables.launch.child"],
        stdin=subprocess.PIPE,
        pass_fds=(write_fd,),
        env=env,
        cwd=ROOT,
    )


def _launch(env: dict, idle: bool):
    """A prestarted child (trainables/launch/prestart.py's Launch): `python -m trainables.launch.child`,
    which imports and then waits for its plan on stdin, under SCHED_IDLE if `idle`."""
    read_fd, write_fd = os.pipe()
    try:
        proc = _popen({**env, RESULT_FD_ENV: str(write_fd), IDLE_ENV: "1" if idle else "0"}, write_fd)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    return prestart.Child(proc, read_fd, env, idle)


def _fork(cfg: TrialConfig, env: dict, write_fd: int):
    """The trial process, forked by this process's fork server; Popen-like (launch/forkserver.py)."""
    stdin_read, stdin_write = os.pipe()
    try:
        child = forkserver.server().spawn(
            env={k: v for k, v in env.items() if k != RESULT_FD_ENV},  # the server names the fd
            cwd=ROOT,
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
