"""trainables/launch/isolated.py: the trial's loop in a fresh child process (no Ray: the plain contract)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from trainables.config import TrialConfig
from trainables.launch.isolated import TrialProcessError, run_isolated

pytestmark = pytest.mark.slow  # trials trained in child processes

ROOT = Path(__file__).resolve().parents[1]


def _children_running_isolated(parent: int) -> list[int]:
    """PIDs whose parent is `parent` and whose command line runs trainables.launch.child."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and b"trainables.launch.child" in cmd:
            found.append(int(entry.name))
    return found


def test_the_child_runs_the_trial_and_relays_each_epoch_as_it_ends(tiny):
    seen = []
    rows = run_isolated(
        TrialConfig(model="simple_cnn", epochs=2, max_steps=2, **tiny),
        lambda i, r: seen.append((i, r)),
        start_method="fresh",
    )
    assert [r["epoch"] for r in rows] == [1, 2] and [r for _, r in seen] == rows
    assert [r["warmup"] for r in rows] == [True, False]
    info = seen[0][0]
    assert info["trial_process"] == "child" and info["params"] == 551018
    assert (
        info["torch_threads"] == 2 and info["cuda_visible_devices"] == ""
    )  # set in the child, for the child
    assert all(r["extrapolated"] and r["steps"] == 2 and r["images_per_s"] > 0 for r in rows)


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="needs a machine without CUDA for the gpu trial to fail"
)
def test_a_failing_trial_raises_with_the_childs_own_last_line(tiny):
    with pytest.raises(TrialProcessError) as info:
        run_isolated(TrialConfig(model="simple_cnn", device="gpu", epochs=1, **tiny), start_method="fresh")
    text = str(info.value)
    assert "Traceback (most recent call last)" in text and "prepare_device" in text
    # the last line is what the results' error column and the failure table show: the original one
    assert text.splitlines()[-1].startswith("trainables.device.DeviceUnavailable: gpu trial")


def test_the_child_dies_with_its_parent(tmp_path):
    # a parent process starts a long trial in a child, then is SIGKILLed: the child must not outlive it
    parent_code = textwrap.dedent(
        """
        from trainables.config import TrialConfig
        from trainables.launch.isolated import run_isolated
        run_isolated(TrialConfig(model="simple_cnn", epochs=50, batch_size=32, workers=0, train_size=4096,
                                 test_size=64, cpus=1, max_steps=None), start_method="fresh")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", parent_code], env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        children: list[int] = []
        while not children and time.monotonic() < deadline and parent.poll() is None:
            children = _children_running_isolated(parent.pid)
            time.sleep(0.2)
        assert children, "the trial's child process never appeared"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 15
        while any(Path(f"/proc/{c}").exists() for c in children) and time.monotonic() < deadline:
            for c in children:  # reap it if it became ours (it is re-parented to init or a subreaper)
                try:
                    os.waitpid(c, os.WNOHANG)
                except ChildProcessError:
                    pass
            time.sleep(0.2)
        alive = [c for c in children if Path(f"/proc/{c}").exists() and _state(c) != "Z"]
        assert not alive, f"the child outlived its parent: {alive}"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
