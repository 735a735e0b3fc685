"""Local Ray in a private network namespace: none of its ports is reachable from the machine's network.

Real sweeps in subprocesses; their Ray processes are found by a unique RAY_TMPDIR in their environment
and their listening sockets read with `ss -ltnp` in the machine's namespace.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest
from procutil import pids_with_env

from orchestrator.lab.netns import private_network

pytestmark = pytest.mark.slow  # real sweeps in network namespaces

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
SWEEP = ["sweep", "--models", "simple_cnn", "--devices", "cpu", "--epochs", "2", "--max-steps", "40",
         "--batch-size", "32", "--train-size", "2048", "--test-size", "128"]  # fmt: skip


def _outside_listeners(pids: set[int]) -> list[str]:
    """`addr:port (process)` of TCP listeners of those processes not bound to loopback."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        local = line.split()[3]
        if owners & pids and not local.startswith(("127.", "[::1]")):
            name = re.search(r'users:\(\("([^"]+)', line)
            found.append(f"{local} ({name.group(1) if name else '?'})")
    return found


def _listeners_during_a_sweep(tmp_path, *flags) -> tuple[list[str], str]:
    marker = tempfile.mkdtemp(prefix="bcns", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    cmd = [sys.executable, "-m", "orchestrator", *SWEEP, *flags, "--out", str(tmp_path), "--name", "n"]
    env = {**os.environ, "RAY_TMPDIR": marker}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:  # wait until the trial runs: every Ray process is up by then
            if "1 running" in line:
                break
        listeners = _outside_listeners(set(pids_with_env(marker)))
        stdout, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0, stdout
        return listeners, stdout
    finally:
        proc.kill()
        shutil.rmtree(marker, ignore_errors=True)


@pytest.mark.skipif(not AS_ROOT or shutil.which("ss") is None, reason="needs root (CAP_SYS_ADMIN) and ss")
def test_isolated_local_sweep_opens_no_port_outside_loopback(tmp_path):
    exposed, _ = _listeners_during_a_sweep(tmp_path / "open", "--no-network-isolation")
    assert exposed, (
        "without the namespace Ray 2.60 listens on all interfaces (else this check could not fail)"
    )
    isolated, stdout = _listeners_during_a_sweep(tmp_path / "iso")
    assert isolated == [] and "note:" not in stdout


@pytest.mark.skipif(not AS_ROOT, reason="needs root (CAP_SYS_ADMIN)")
def test_the_namespace_is_left_again_afterwards():
    before = os.readlink("/proc/thread-self/ns/net")
    with private_network() as why_not:
        assert why_not is None
        assert os.readlink("/proc/thread-self/ns/net") != before
        assert socket_names() == ["lo"]
    assert os.readlink("/proc/thread-self/ns/net") == before


def socket_names() -> list[str]:
    import socket

    return sorted(name for _, name in socket.if_nameindex())
