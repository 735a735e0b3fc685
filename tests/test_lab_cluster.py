"""Several real hosts on one machine: `benchctl sweep --cluster` across network namespaces.

Each host is a network namespace with its own address, /tmp and host name, running its own Ray
node (tests/labnet.py); the driver runs in the root namespace on a 0-CPU node, as a lab member's
workstation joined to the lab would. Needs root and iproute2; skipped with the reason otherwise.
"""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from labnet import LabNet
from procutil import sigkill_after_first_trial, trial_rows

from orchestrator.analysis.stats import ok_epochs
from orchestrator.results.reader import read_results

pytestmark = [
    pytest.mark.slow,  # Ray nodes in network namespaces
    pytest.mark.skipif(LabNet.unavailable() is not None, reason=str(LabNet.unavailable())),
]

TOKEN = "benchctl-test-token-7f3a"
SWEEP = [
    "sweep",
    "--models",
    "simple_cnn",
    "--devices",
    "cpu",
    "--batch-size",
    "32",
    "--train-size",
    "1024",
    "--test-size",
    "128",
    "--max-eval-steps",
    "1",
    "--cpus-per-trial",
    "1",
]


def _env(extra: dict) -> dict:
    """This process's environment without any RAY_ setting of the tester's, plus `extra`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, **extra}


def benchctl(args: list[str], env: dict, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=kw.pop("timeout", 300),
        **kw,
    )


def benchctl_started(args: list[str], env: dict, output: int | None = subprocess.PIPE) -> subprocess.Popen:
    """A benchctl driver running in the background (to be killed, or waited for)."""
    cmd = [sys.executable, "-m", "orchestrator", *args]
    return subprocess.Popen(cmd, env=_env(env), stdout=output, stderr=output, text=True)


@pytest.fixture
def lab():
    with LabNet(token=TOKEN) as net:
        yield net


def start_lab(lab: LabNet, w1_cpus: int, w2_cpus: int) -> None:
    """A coordinating head (no CPUs), two worker hosts, and the driver's 0-CPU node in the root namespace."""
    lab.host("head", cpus=0, head=True)
    lab.host("w1", cpus=w1_cpus)
    lab.host("w2", cpus=w2_cpus)
    lab.driver_node()
    lab.wait_nodes(4)


def test_sweep_spreads_over_hosts_and_the_driver_writes_every_row(lab, tmp_path):
    start_lab(lab, w1_cpus=2, w2_cpus=1)
    yaml = lab.cluster_file(tmp_path)
    out = tmp_path / "out"  # under /tmp: the worker hosts' /tmp is their own: only the driver writes here

    run = benchctl([*SWEEP, "--epochs", "2", "--max-steps", "20", "--repeats", "4", "--cluster", str(yaml),
                    "--out", str(out), "--name", "lab"], lab.env)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "w1 (2 CPUs)" in run.stdout and "w2 (1 CPU)" in run.stdout
    assert "warning" not in run.stdout + run.stderr  # the cluster requires a token: nothing to warn about
    epochs, trials = read_results(out / "lab")
    assert (trials.status == "ok").all() and len(trials) == 4
    assert set(trials.host) == {"w1", "w2"}  # more than one host ran cells; no trial on the 0-CPU nodes
    assert len(epochs) == 4 * 2 and not epochs.duplicated(["trial", "epoch"]).any()
    assert (trials.placement == "exclusive").all() and (trials.cpu_share == 1).all()
    # two trials shared w1 (2 CPUs) at some point: recorded on both rows
    on_w1 = trials[trials.host == "w1"]
    assert on_w1.overlapped_with.notna().any()

    status = benchctl(["cluster", "status", "--cluster", str(yaml)], lab.env)
    assert status.returncode == 0, status.stderr
    assert "4 of 4 nodes alive; token authentication required" in status.stdout
    rows = {line.split()[0]: line.split() for line in status.stdout.splitlines()[2:]}
    assert rows["head"][2] == "head" and rows["w1"][3] == "2" and rows["w2"][3] == "1"

    # a driver without the lab's token is refused in one line, before anything is written
    no_token = benchctl(
        [*SWEEP, "--cluster", str(yaml), "--out", str(out), "--name", "nt"], {"HOME": str(tmp_path)}
    )
    assert no_token.returncode == 2
    line = no_token.stderr.strip()
    assert "requires token authentication" in line and "RAY_AUTH_MODE=token" in line and "\n" not in line
    assert not (out / "nt").exists()

    # a driver on a machine that is not a Ray node of the lab gets told how to join, not a core dump
    lab.bare_host("laptop")
    shared = lab.cluster_file(Path("/dev/shm"))  # the laptop's /tmp is its own; /dev/shm is not remounted
    cmd = f"{sys.executable} -m orchestrator {' '.join(SWEEP)} --cluster {shared} --out /tmp/o --name nn"
    try:
        outside = subprocess.run(
            lab.exec_argv("laptop", cmd),
            env={**os.environ, **lab.env},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shared.unlink()
    assert outside.returncode == 2, outside.stderr[-2000:]
    assert "is not a node of the cluster" in outside.stderr and "ray start --address=" in outside.stderr


def test_a_worker_host_dying_after_epoch_2_is_retried_elsewhere_from_its_checkpoint(lab, tmp_path):
    start_lab(lab, w1_cpus=1, w2_cpus=1)
    yaml = lab.cluster_file(tmp_path)
    out = tmp_path / "out"
    args = [*SWEEP, "--epochs", "5", "--max-steps", "25", "--repeats", "2", "--max-failures", "2",
            "--cluster", str(yaml), "--out", str(out), "--name", "kill"]  # fmt: skip
    proc = benchctl_started(args, lab.env)
    try:
        deadline = time.monotonic() + 180
        # the driver names the checkpoint once the trial's node has persisted it on the driver's disk
        while not any(r["host"] == "w2" and (r["checkpoint_epoch"] or 0) >= 2 for r in trial_rows(out / "kill")):  # noqa: E501
            assert proc.poll() is None and time.monotonic() < deadline, "no trial on w2 reached epoch 2"
            time.sleep(0.1)
        assert lab.kill_host("w2") > 0
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0, stdout + stderr
    epochs, trials = read_results(out / "kill")
    failed = trials[trials.status == "error"]
    assert len(failed) == 1 and failed.error.notna().all() and failed.host.iloc[0] == "w2"
    cut_at = int(failed.checkpoint_epoch.iloc[0])
    assert 2 <= cut_at < 5
    ok = trials[trials.status == "ok"]
    assert sorted(ok.trial) == sorted(set(trials.trial)) and len(ok) == 2  # one good attempt per cell
    retry = ok[ok.trial == failed.trial.iloc[0]].iloc[0]
    assert retry.host == "w1" and retry.restored_from_epoch == cut_at  # continued, on the surviving host
    # its checkpoint went w2 -> the driver's disk -> w1 through Ray (orchestrator/run/relayfs.py)
    final = ok_epochs(epochs, trials)
    assert len(final) == 2 * 5 and not final.duplicated(["trial", "epoch"]).any()
    mine = final[final.trial == retry.trial].sort_values("epoch")
    assert list(mine.from_attempt) == [failed.attempt.iloc[0]] * cut_at + [retry.attempt] * (5 - cut_at)
    assert mine.restored.fillna(False).tolist() == [False] * cut_at + [True] + [False] * (4 - cut_at)


def test_driver_killed_then_resume_completes_the_set_and_an_open_cluster_is_flagged(tmp_path):
    with LabNet(token=None) as lab:  # a lab without token authentication
        lab.host("head", cpus=0, head=True)
        lab.host("w1", cpus=2)
        lab.driver_node()
        lab.wait_nodes(3)
        yaml = lab.cluster_file(tmp_path)
        out = tmp_path / "out"
        args = [*SWEEP, "--epochs", "2", "--max-steps", "15", "--repeats", "4", "--cluster", str(yaml),
                "--out", str(out), "--name", "res"]  # fmt: skip
        proc = benchctl_started(args, lab.env, output=subprocess.DEVNULL)
        sigkill_after_first_trial(proc, out / "res")
        _, before = read_results(out / "res")
        done = int((before.status == "ok").sum())
        assert 1 <= done < 4

        resumed = benchctl([*args, "--resume"], lab.env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert f"{done} trial{'s' * (done != 1)} complete, {4 - done} to run" in resumed.stdout
        assert resumed.stdout.count("does not require token authentication") == 1  # warned once
        epochs, trials = read_results(out / "res")
        assert sorted(trials[trials.status == "ok"].trial) == [
            f"simple_cnn/cpu/bs32/loader/fp32/r{r}" for r in range(4)
        ]
        final = ok_epochs(epochs, trials)
        assert len(final) == 4 * 2 and not final.duplicated(["trial", "epoch"]).any()

        status = benchctl(["cluster", "status", "--cluster", str(yaml)], lab.env)
        assert status.returncode == 0 and "token authentication NOT required" in status.stdout
        assert "does not require token authentication" in status.stderr


def test_every_host_runs_cells_with_its_own_cores_and_per_class_pins_classes(lab, tmp_path):
    start_lab(lab, w1_cpus=2, w2_cpus=1)  # same CPU model, different core counts: two CPU classes
    yaml = lab.cluster_file(tmp_path)
    out = tmp_path / "out"
    args = SWEEP[: SWEEP.index("--cpus-per-trial")]  # each host, or each class, sizes its own cells

    # by default (issue 35): the 1-CPU host works too, with its one core, while the 2-CPU host does
    run = benchctl([*args, "--epochs", "1", "--max-steps", "2", "--repeats", "2", "--cluster", str(yaml),
                    "--out", str(out), "--name", "het"], lab.env)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "cpu cells sized to their nodes: 1 on 2-CPU node (1), 1 on 1-CPU node (1)" in run.stdout
    _, trials = read_results(out / "het")
    assert len(trials) == 2 and (trials.status == "ok").all()
    assert dict(zip(trials.host, trials.cpus_allotted, strict=True)) == {"w1": 2, "w2": 1}
    assert {h: c[-2:] for h, c in zip(trials.host, trials.hw_class, strict=True)} == {"w1": "2c", "w2": "1c"}
    w1, w2 = (trials[trials.host == h].iloc[0] for h in ("w1", "w2"))
    assert w1.started_at <= w2.ended_at and w2.started_at <= w1.ended_at  # both hosts busy at once

    run = benchctl([*args, "--epochs", "2", "--max-steps", "3", "--per-class", "--cluster", str(yaml),
                    "--out", str(out), "--name", "pc"], lab.env)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "hardware classes: cpu:" in run.stdout
    _, trials = read_results(out / "pc")
    assert len(trials) == 2 and (trials.status == "ok").all()
    where = dict(zip(trials.hw_class.str.rsplit("-", n=1).str[-1], trials.host, strict=True))
    assert where == {"2c": "w1", "1c": "w2"}  # pinned: the 2-core class ran on w1, the 1-core one on w2
    assert sorted(trials.cpus_allotted) == [1, 2]  # each class uses every core it has


def test_gpu_trials_side_by_side_get_one_different_gpu_each(lab, tmp_path):
    # Issue 7's scheduling half, on CPU: a host with 2 GPUs in Ray's books only (no CUDA here). Both GPU
    # cells fit on it at once, so Tune starts them side by side; each then fails its device check, whose
    # error names the CUDA_VISIBLE_DEVICES Ray gave it. They must hold one GPU each, and different ones.
    lab.host("head", cpus=0, head=True)
    lab.host("gpu2", cpus=6, gpus=2)
    lab.driver_node()
    lab.wait_nodes(3)
    yaml = lab.cluster_file(tmp_path)
    out = tmp_path / "out"
    args = ["sweep", "--models", "simple_cnn", "--devices", "gpu", "--pipeline", "loader,resident",
            "--batch-size", "32", "--train-size", "1024", "--test-size", "128", "--epochs", "1",
            "--max-failures", "0", "--placement", "partitioned", "--cluster", str(yaml), "--out", str(out),
            "--name", "x2"]  # fmt: skip
    run = benchctl(args, lab.env)
    assert run.returncode != 0 and "2 failed" in run.stdout + run.stderr, run.stdout + run.stderr
    _, trials = read_results(out / "x2")
    assert len(trials) == 2 and (trials.status == "error").all()
    visible = sorted(re.search(r"CUDA_VISIBLE_DEVICES=(\S+?)\)", e).group(1) for e in trials.error)
    assert visible == ["0", "1"], list(trials.error)  # one GPU each, not the same one
    assert all("on gpu2" in e for e in trials.error)
    # side by side: each attempt started before the other ended
    a, b = trials.itertuples()
    assert a.started_at <= b.ended_at and b.started_at <= a.ended_at
