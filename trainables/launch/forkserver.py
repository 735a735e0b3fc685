"""A fork server for trial processes: torch imported once, each trial a fork of a clean process.

    child = spawn(env=..., cwd=..., cpus=..., niceness=..., seed=..., fds=(stdin_r, result_w, 1, 2))
    child.pid, child.poll(), child.wait(), child.kill()     # as subprocess.Popen's

Why: a fresh `python -m trainables.launch.child` per trial spends ~4 s of a ~10 s trial start on the
2-core dev host starting Python and importing torch, torchvision and the trainables (issue 16). The
server is started once per Ray worker (a plain `python -m trainables.launch.forkserver SOCKET`, never the
stdlib's multiprocessing forkserver, which re-runs Ray's default_worker as __mp_main__ inside a
worker), imports those modules, and then only waits on an AF_UNIX socket. It never runs a torch op
and never creates a CUDA context, and it stays single-threaded (one selector loop), so a fork of it
is as clean as a fresh interpreter that has imported torch.

Per trial the supervisor connects, sends one JSON request (the trial's environment, working
directory, CPU affinity, niceness and seed) with the trial's stdin, result fd, stdout and stderr as
SCM_RIGHTS file descriptors (socket.send_fds), and the server forks. The child puts those fds on 0,
1, 2 and the result fd, replaces its environment, resets signal handlers, pins its cores, takes the
niceness, reseeds `random`, numpy and torch from the trial's seed and runs trainables.launch.child's
main: the same JSON protocol as a fresh child. The server answers `{"pid": N}`, then
`{"returncode": R}` (Popen's convention: -signal when killed) once the child is reaped (a pidfd
in the selector).

Lifetime: the child gets PR_SET_PDEATHSIG from the server (forked on the server's only thread, so
the thread-exit caveat of PDEATHSIG does not apply). The supervisor's connection stays open for the
trial: when it closes before the child ended (the supervisor died or gave up) the server SIGKILLs
the child. The server itself exits when its parent (the Ray worker) is gone, polled each second; it
is not tied to the thread that started it, which for a Tune trial is a thread that ends per trial.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading

from trainables.launch.child import PARENT_ENV, RESULT_FD_ENV, ROOT

READY = b"ready\n"
CHILD_MAIN = "trainables.launch.child:main"  # what a forked trial process runs
_MAX_REQUEST = 1 << 20  # bytes of one JSON request (the environment is the bulk of it)
_FDS = 4  # stdin, result fd, stdout, stderr


class ForkServerError(RuntimeError):
    """The fork server could not be started or did not answer."""


# ---------------------------------------------------------------------------------------------------
# supervisor side


class ForkedChild:
    """A trial process forked by the server; the subset of subprocess.Popen that a ChildRunner uses."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self._conn = conn
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = None  # the write end of the child's stdin, as Popen's (ForkserverRunner sets it)
        self._buf = b""

    def _read_status(self, block: bool) -> None:
        if self.returncode is not None:
            return
        self._conn.setblocking(block)
        try:
            while b"\n" not in self._buf:
                try:
                    data = self._conn.recv(4096)
                except BlockingIOError:
                    return
                if not data:  # the server is gone: the child died with it (PDEATHSIG)
                    self.returncode = -signal.SIGKILL
                    self._close()
                    return
                self._buf += data
        finally:
            if self._conn.fileno() >= 0:
                self._conn.setblocking(True)
        line, _, self._buf = self._buf.partition(b"\n")
        self.returncode = int(json.loads(line)["returncode"])
        self._close()

    def _close(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.close()

    def poll(self) -> int | None:
        self._read_status(block=False)
        return self.returncode

    def wait(self) -> int:
        self._read_status(block=True)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)


class ForkServer:
    """One server process and its socket; `spawn` forks a trial process from it."""

    def __init__(self, env: dict | None = None) -> None:
        self._dir = tempfile.mkdtemp(prefix="benchctl-fork-")
        self.path = os.path.join(self._dir, "s")
        env = {**(env if env is not None else os.environ)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trainables.launch.forkserver", self.path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        ready = self.proc.stdout.readline()
        if ready != READY:
            self.close()
            raise ForkServerError(f"the fork server did not start (said {ready!r}, exit {self.proc.poll()})")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(
        self,
        *,
        env: dict,
        cwd: str,
        cpus: list[int],
        niceness: int,
        seed: int,
        fds: tuple[int, ...],
        main: str = CHILD_MAIN,
    ) -> ForkedChild:
        """Fork a trial process: `fds` are its stdin, result fd, stdout and stderr; `main` the
        "module:function" it runs once it is set up (trainables.launch.child's main)."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            request = dict(env=env, cwd=cwd, cpus=sorted(cpus), niceness=niceness, seed=seed, main=main)
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], list(fds))
            buf = b""
            while b"\n" not in buf:
                data = conn.recv(4096)
                if not data:
                    raise ForkServerError("the fork server closed the connection before forking")
                buf += data
        except BaseException:
            conn.close()
            raise
        line, _, rest = buf.partition(b"\n")
        answer = json.loads(line)
        if "error" in answer:
            conn.close()
            raise ForkServerError(f"the fork server could not fork the trial: {answer['error']}")
        child = ForkedChild(conn, int(answer["pid"]))
        child._buf = rest
        return child

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self._dir)


_server: ForkServer | None = None
_lock = threading.Lock()


def server() -> ForkServer:
    """This process's fork server, started on first use (and again if it died)."""
    global _server
    with _lock:
        if _server is None or not _server.alive():
            if _server is not None:
                _server.close()
            _server = ForkServer()
            atexit.register(_server.close)
        return _server


# ---------------------------------------------------------------------------------------------------
# server side


def _warm_imports() -> None:
    """What every trial imports, imported once here (no torch op runs: no thread pool, no CUDA)."""
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import torchvision  # noqa: F401

    import trainables.launch.child  # noqa: F401
    import trainables.train  # noqa: F401


def _reseed(seed: int) -> None:
    """Every fork starts from the server's RNG states: give each trial its own, from its seed."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _become_trial(request: dict, fds: list[int], server_pid: int) -> int:
    """In the forked child: become the trial process the request describes; return its exit code."""
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a fresh interpreter has it
    stdin, result, stdout, stderr = fds
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own, for its life
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ[RESULT_FD_ENV] = str(result)
    os.environ[PARENT_ENV] = str(server_pid)  # _die_with_parent: the server is the parent
    os.chdir(request["cwd"])
    if request["cpus"]:
        os.sched_setaffinity(0, request["cpus"])
    with contextlib.suppress(PermissionError):  # lower needs CAP_SYS_NICE; favour_this_process tries
        os.setpriority(os.PRIO_PROCESS, 0, request["niceness"])
    _reseed(int(request["seed"]))
    module, _, function = request.get("main", CHILD_MAIN).partition(":")
    try:
        getattr(importlib.import_module(module), function)()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def _serve(path: str) -> None:
    parent = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the sweep's driver, which ends Ray
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    _warm_imports()
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, ("accept",))
    children: dict[int, tuple[socket.socket, int]] = {}  # pid -> (its supervisor's connection, pidfd)
    try:
        while os.getppid() == parent:
            for key, _ in sel.select(timeout=1.0):
                what = key.data
                if what[0] == "accept":
                    conn, _ = listener.accept()
                    pid = _fork_one(conn, sel, children, listener)
                    if pid is None:
                        conn.close()
                elif what[0] == "conn":  # the supervisor sent nothing or went: kill its child if alive
                    pid = what[1]
                    if pid in children and not key.fileobj.recv(64):
                        sel.unregister(key.fileobj)
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                elif what[0] == "pidfd":
                    pid = what[1]
                    conn, pidfd = children.pop(pid)
                    sel.unregister(pidfd)
                    os.close(pidfd)
                    _, status = os.waitpid(pid, 0)
                    with contextlib.suppress(KeyError, ValueError):
                        sel.unregister(conn)
                    answer = {"returncode": os.waitstatus_to_exitcode(status)}
                    with contextlib.suppress(OSError):  # the supervisor may be gone
                        conn.sendall(json.dumps(answer).encode() + b"\n")
                    conn.close()
    finally:
        for pid in children:  # the server is leaving: no trial outlives it (PDEATHSIG would, too)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.unlink(path)


def _fork_one(conn, sel, children, listener) -> int | None:
    conn.settimeout(10)
    fds: list[int] = []
    try:
        buf = b""
        while not buf.endswith(b"\n"):
            msg, got, _, _ = socket.recv_fds(conn, _MAX_REQUEST, _FDS)
            fds += got
            if not msg:
                return None
            buf += msg
        request = json.loads(buf)
        if len(fds) != _FDS:
            raise ValueError(f"expected {_FDS} file descriptors, got {len(fds)}")
    except (OSError, ValueError) as exc:
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps({"error": repr(exc)}).encode() + b"\n")
        return None
    conn.settimeout(None)
    server_pid = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the trial process
        code = 1
        try:
            sel.close()
            listener.close()
            conn.close()
            for other_conn, pidfd in children.values():
                other_conn.close()
                os.close(pidfd)
            code = _become_trial(request, fds, server_pid)
        except BaseException:  # noqa: BLE001 - never return into the server's loop
            import traceback

            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    children[pid] = (conn, pidfd)
    sel.register(pidfd, selectors.EVENT_READ, ("pidfd", pid))
    sel.register(conn, selectors.EVENT_READ, ("conn", pid))
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pid


if __name__ == "__main__":
    _serve(sys.argv[1])
