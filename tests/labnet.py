"""A lab of separate hosts on one machine, for tests: network namespaces on a bridge, one Ray node each.

    with LabNet(token="s3cret") as lab:            # needs root and iproute2; else LabNet.unavailable()
        lab.host("head", cpus=0, head=True)        # 10.231.N.10, `ray start --head` in its namespace
        lab.host("w1", cpus=2)                     # 10.231.N.11, joins the head
        lab.driver_node()                          # a 0-CPU node in the root namespace for the driver
        yaml_path = lab.cluster_file(tmp_path)     # Ray's on-prem YAML naming the head
        lab.kill_host("w1")                        # SIGKILL every process of that host
        subprocess.run(cmd, env={**os.environ, **lab.env})   # a driver holding the lab's token

Ray 2.60 turns token authentication on by itself for a head started where ~/.ray/auth_token exists,
and then refuses nodes that don't send it. So every process of the lab gets an explicit
RAY_AUTH_MODE (and the token, when there is one) instead of depending on the tester's home.

Each host has its own network namespace (its own address; traffic only on the bridge) and its own
/tmp (a tmpfs mounted in the namespace's mount namespace), so Ray's session files are not shared
between hosts, as on real machines. Everything is torn down on exit, also when a test fails:
processes are killed by PID (those in the namespaces, and the root node's, found by its RAY_TMPDIR).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from procutil import pids_with_env

RAY = str(Path(sys.executable).with_name("ray"))
PORT = 6379  # the head's GCS port, as in cluster/lab.yaml


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


class LabNet:
    def __init__(self, token: str | None = None) -> None:
        self.env = (
            {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token} if token else {"RAY_AUTH_MODE": "disabled"}
        )
        tag = uuid.uuid4().hex[:5]
        self.tag = tag
        self.subnet = f"10.231.{int(tag, 16) % 250 + 1}"
        self.bridge = f"bcbr{tag}"
        self.hosts: dict[str, dict] = {}
        self.mountpoints: set[str] = set()  # empty dirs under /run left by exec_argv
        self.procs: list[subprocess.Popen] = []
        self.root_tmp: str | None = None
        self.head_ip: str | None = None
        self.logs = Path(tempfile.mkdtemp(prefix=f"bclab{tag}", dir="/tmp"))

    @staticmethod
    def unavailable() -> str | None:
        """Why this machine cannot build the lab (None: it can)."""
        if os.geteuid() != 0:
            return "network namespaces need root"
        if shutil.which("ip") is None:
            return "iproute2 (`ip`) is not installed"
        probe = f"bcprobe{uuid.uuid4().hex[:5]}"
        made = _ip("netns", "add", probe, check=False)
        if made.returncode != 0:
            return f"`ip netns add` refused here: {made.stderr.strip()}"
        _ip("netns", "del", probe, check=False)
        return None

    def __enter__(self) -> LabNet:
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def ip_of(self, name: str) -> str:
        return self.hosts[name]["ip"]

    def _netns(self, name: str) -> str:
        return f"bc{self.tag}{name}"

    def host(self, name: str, cpus: int, head: bool = False, env: dict | None = None, gpus: int = 0) -> str:
        """Create a host namespace and start a Ray node in it; returns its address. `gpus` are GPUs in
        Ray's books only (this machine has none): Ray hands them out and sets CUDA_VISIBLE_DEVICES."""
        ns, ip = self.bare_host(name)
        if head:
            self.head_ip = ip
            role = ["--head", f"--port={PORT}", "--include-dashboard=false"]
        else:
            role = [f"--address={self.head_ip}:{PORT}"]
        ray = [RAY, "start", *role, f"--node-ip-address={ip}", f"--num-cpus={cpus}", f"--num-gpus={gpus}"]
        ray.append("--block")
        self._spawn(self.exec_argv(name, " ".join(ray)), name, env)
        return ip

    def _kept_under_tmp(self) -> list[Path]:
        """The checkout and its venv, where they lie under /tmp (a CI clone may): they must stay
        visible on every host, as an NFS-mounted home would be."""
        root = Path(__file__).resolve().parents[1]
        paths = {root, Path(sys.prefix).resolve()}
        under = [q for q in paths if q.is_relative_to("/tmp")]
        return sorted(q for q in under if not any(q != o and q.is_relative_to(o) for o in under))

    def exec_argv(self, name: str, command: str) -> list[str]:
        """argv that runs a shell command on host `name`: its namespace, its /tmp, its host name."""
        # a private /tmp per host (ip netns exec gives the command its own mount namespace) and its
        # own host name (a UTS namespace), so Ray and the trials' rows see separate machines; the
        # checkout is bind-mounted back if it lies under /tmp
        keep = [(q, f"/run/bclab{self.tag}-{i}") for i, q in enumerate(self._kept_under_tmp())]
        self.mountpoints.update(m for _, m in keep)
        before = "".join(f"mkdir -p {m} && mount --bind {q} {m} && " for q, m in keep)
        after = "".join(f"mkdir -p {q} && mount --move {m} {q} && " for q, m in keep)
        script = (
            f"{before}mount -t tmpfs tmpfs /tmp && {after}"
            f"exec unshare --uts sh -c 'hostname {name} && exec {command}'"
        )
        return ["ip", "netns", "exec", self.hosts[name]["ns"], "sh", "-c", script]

    def bare_host(self, name: str) -> tuple[str, str]:
        """A host namespace on the bridge with nothing started in it; returns (namespace, address)."""
        index = 10 + len(self.hosts)
        ns, ip = self._netns(name), f"{self.subnet}.{index}"
        veth, peer = f"bv{self.tag}{index}", f"bp{self.tag}{index}"
        _ip("netns", "add", ns)
        _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", ns)
        _ip("link", "set", veth, "master", self.bridge)
        _ip("link", "set", veth, "up")
        _ip("-n", ns, "addr", "add", f"{ip}/24", "dev", peer)
        _ip("-n", ns, "link", "set", peer, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        self.hosts[name] = {"ns": ns, "ip": ip, "veth": veth}
        return ns, ip

    def driver_node(self, env: dict | None = None) -> str:
        """A Ray node with no CPUs in the root namespace: Ray drivers must run on a node of the cluster."""
        self.root_tmp = tempfile.mkdtemp(prefix=f"bcr{self.tag}", dir="/tmp")
        ip = f"{self.subnet}.1"
        ray = [
            RAY,
            "start",
            f"--address={self.head_ip}:{PORT}",
            f"--node-ip-address={ip}",
            "--num-cpus=0",
            "--num-gpus=0",
            "--block",
        ]
        self._spawn(ray, "driver-node", {**(env or {}), "RAY_TMPDIR": self.root_tmp})
        return ip

    def _spawn(self, cmd: list[str], name: str, env: dict | None) -> None:
        log = open(self.logs / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        self.procs.append(
            subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env, **(env or {})},
                start_new_session=True,
            )
        )

    def wait_nodes(self, n: int, timeout_s: float = 90) -> None:
        """Wait until the head's GCS reports `n` alive nodes (asked from a fresh driver process)."""
        check = (
            "import ray\n"
            f"ray.init(address='{self.head_ip}:{PORT}', logging_level='ERROR', log_to_driver=False)\n"
            "print(sum(1 for n in ray.nodes() if n['Alive']))\n"
        )
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            r = subprocess.run(
                [sys.executable, "-c", check],
                capture_output=True,
                text=True,
                env={**os.environ, **self.env},
                timeout=60,
            )
            last = (r.stdout + r.stderr).strip()[-500:]
            if r.returncode == 0 and r.stdout.strip().splitlines()[-1:] == [str(n)]:
                return
            time.sleep(1)
        raise TimeoutError(f"lab: {n} nodes not up in {timeout_s} s; last check: {last}; logs in {self.logs}")

    def cluster_file(self, directory: Path) -> Path:
        """Ray's on-prem cluster-launcher YAML for this lab (what a lab writes as cluster/lab.yaml)."""
        workers = [h["ip"] for n, h in self.hosts.items() if h["ip"] != self.head_ip]
        path = directory / f"lab-{self.tag}.yaml"
        path.write_text(
            "cluster_name: testlab\n"
            "provider:\n"
            "  type: local\n"
            f"  head_ip: {self.head_ip}\n"
            f"  worker_ips: [{', '.join(workers)}]\n"
            "auth:\n"
            "  ssh_user: root\n"
            "head_start_ray_commands:\n"
            f"  - ray stop; ray start --head --port={PORT} --include-dashboard=false\n"
            "worker_start_ray_commands:\n"
            f"  - ray stop; ray start --address=$RAY_HEAD_IP:{PORT}\n"
        )
        return path

    def pids(self, name: str) -> list[int]:
        out = _ip("netns", "pids", self.hosts[name]["ns"], check=False).stdout.split()
        return [int(p) for p in out]

    def kill_host(self, name: str) -> int:
        """SIGKILL every process of one host (as if it lost power); returns how many."""
        pids = self.pids(name)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def close(self) -> None:
        for _ in range(2):  # a second pass for processes a dying raylet started meanwhile
            for name in list(self.hosts):
                self.kill_host(name)
            for pid in pids_with_env(self.root_tmp) if self.root_tmp else []:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.5)
        for proc in self.procs:
            proc.kill()
            proc.wait(timeout=10)
        for host in self.hosts.values():
            _ip("netns", "del", host["ns"], check=False)
            _ip("link", "del", host["veth"], check=False)
        _ip("link", "del", self.bridge, check=False)
        # the root namespace's `ray start` recorded the lab as "the current cluster" for later
        # ray.init() calls on this machine; forget it
        current = Path("/tmp/ray/ray_current_cluster")
        if current.is_file() and current.read_text().startswith(f"{self.subnet}."):
            current.unlink()
        if self.root_tmp:
            shutil.rmtree(self.root_tmp, ignore_errors=True)
        for mountpoint in self.mountpoints:
            try:
                os.rmdir(mountpoint)
            except OSError:
                pass
