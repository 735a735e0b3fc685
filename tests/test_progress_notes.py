"""Progress within an epoch: a trial's notes (trainables/train.py), the ETA and table they feed
(orchestrator/run/eta.py, progress.py), the data phase said once the cache was looked at, and a real
sweep under a pseudo-terminal."""

import dataclasses
import io
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.plan.matrix import expand, resolve_allotment
from orchestrator.plan.spec import SweepSpec
from orchestrator.run.eta import Pace, State, eta_s, remaining_s
from orchestrator.run.phases import Board
from orchestrator.run.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
CELL = "simple_cnn/cpu/bs32/loader/fp32"
R0, R1 = f"{CELL}/r0", f"{CELL}/r1"
NOTE = {"epoch": 1, "step": 50, "steps": 100, "images": 1600, "seconds": 4.0}


# -- the trial side ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_trial_sends_notes_within_each_epoch_and_says_where_its_data_came_from(tiny, tmp_path, monkeypatch):
    from trainables.config import TrialConfig
    from trainables.train import run_trial

    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))  # an empty cache: the first trial generates
    monkeypatch.setenv("BENCHCTL_PROGRESS_S", "0.01")
    cfg = TrialConfig(model="simple_cnn", epochs=2, **{**tiny, "train_size": 512})
    said = []
    rows = run_trial(cfg, on_phase=said.append).epochs
    texts = [s for s in said if isinstance(s, str)]
    assert texts[0] == "generating 640 synthetic images" and "cache" not in " ".join(texts)
    notes = [s for s in said if isinstance(s, dict)]
    assert {n["epoch"] for n in notes} == {1, 2}, "a 16-step epoch of simple_cnn lasts longer than 0.01 s"
    for n in notes:
        assert 0 < n["step"] < n["steps"] == 16 and n["images"] == 32 * n["step"] and n["seconds"] > 0
    for epoch in (1, 2):
        steps = [n["step"] for n in notes if n["epoch"] == epoch]
        assert steps == sorted(steps)
    assert [r["images"] for r in rows] == [512, 512]  # the rows are what they were

    again = []
    run_trial(dataclasses.replace(cfg, epochs=1), on_phase=again.append)
    texts = [s for s in again if isinstance(s, str)]
    assert texts[0] == "reading the data set from this node's cache" and "generating" not in " ".join(texts)


def test_the_board_keeps_a_notes_numbers_only():
    board = Board()
    board.post("t", {**NOTE, "path": "/x" * 500}, 1.0)
    board.post("t", "building simple_cnn", 2.0)
    (_, _, note, _), (_, _, text, _) = board.since(0)
    assert note == NOTE and text == "building simple_cnn"


# -- the ETA -----------------------------------------------------------------------------------------
def pace(state=State.pending, done=0, in_epoch=None, groups=(CELL, "m/cpu"), epochs=3, **kw):
    return Pace("cpu", groups, epochs, done, state, kw.get("startups", ()), kw.get("steady", ()),
                kw.get("since_last", 0.0), in_epoch)  # fmt: skip


def test_a_trial_in_its_first_epoch_is_timed_by_its_notes():
    first = pace(State.starting, in_epoch=(8.0, 3.0))  # an 8 s pass, 3 s of it left
    assert remaining_s([first]) == [pytest.approx(3.0 + 2 * 8.0)]
    assert eta_s([first]) == pytest.approx(19.0)
    # a trial of the same cell not started yet goes at that pace too; another model does not
    assert remaining_s([first, pace()])[1] == pytest.approx(3 * 8.0)
    assert remaining_s([first, pace(groups=("x", "n/cpu"))])[1] is None
    # once it has epoch intervals, those are what count (they hold the test pass too)
    timed = pace(State.training, done=1, in_epoch=(8.0, 3.0), startups=(12.0,), since_last=5.0)
    assert remaining_s([timed]) == [pytest.approx(2 * 12.0 - 5.0)]


# -- the driver's display ----------------------------------------------------------------------------
class TuneTrial:
    def __init__(self, tune_id: str, plan):
        self.trial_id, self.config, self.error_file = tune_id, plan.tune_config(), None

    def get_error(self):
        return None


@pytest.fixture
def configs():
    spec = SweepSpec(models=("simple_cnn",), devices=("cpu",), batch_sizes=(32,), epochs=3, repeats=2)
    return expand(spec, resolve_allotment(spec, [2]))


def render(progress) -> str:
    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    console.print(progress.renderable())
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", console.file.getvalue())


def test_a_note_shows_the_epochs_share_speed_and_time_left_in_the_table(configs):
    progress = Progress(configs)
    trial = TuneTrial("a", configs[0])
    progress.on_trial_start(0, [], trial)
    progress.show_phase("a", "building simple_cnn")
    before = render(progress)
    assert "0/3" in before and "building simple_cnn" in before and "ETA" not in before
    progress.show_phase(R0, NOTE)
    text = render(progress)
    row = next(ln for ln in text.splitlines() if R0 in ln)
    assert "1/3 50%" in row and "400" in row  # 1,600 images in 4 s
    assert "training epoch 1: 1,600 images so far" in row and "building" not in row
    assert re.search(r"\b(1[0-9]|20) s\b.*training", row)  # left: ~4 s of the pass + 2 x 8 s
    assert "ETA" in text.splitlines()[-1]
    progress.on_trial_result(0, [], trial, {"epoch": 1, "images_per_s": 500.0})
    row = next(ln for ln in render(progress).splitlines() if R0 in ln)
    assert "1/3 " in row and "%" not in row and "500" in row  # the epoch's own numbers again
    progress.show_phase(R0, NOTE)  # a late note of epoch 1 (epoch 1 is over): ignored
    assert "%" not in next(ln for ln in render(progress).splitlines() if R0 in ln)


def test_off_a_terminal_notes_print_nothing_and_long_paths_are_cut(configs, capsys):
    progress = Progress(configs)
    progress.on_trial_start(0, [], TuneTrial("a", configs[0]))
    progress.show_phase(R0, NOTE)
    long = "/" + "/".join(["results", "x" * 40, ".tune", "y" * 120, "checkpoint_000003"])
    progress.show_phase(R0, f"fetching its checkpoint ({long})")
    lines = capsys.readouterr().err.splitlines()
    assert [ln.split(" · ")[0] for ln in lines[1:]] == [  # no line for the note; the path's tail
        f"benchctl: {R0} fetching its checkpoint (…/{'y' * 39}…/checkpoint_000003)"  # 60 characters
    ]


# -- a real sweep on a pseudo-terminal -----------------------------------------------------------------
SWEEP = """
from pathlib import Path
from orchestrator.plan.spec import SweepSpec
from orchestrator.run.sweep import run_sweep
spec = SweepSpec(models=("simple_cnn",), devices=("cpu",), epochs=2, train_size=4096, test_size=128,
                 batch_sizes=(32,), workers=0, max_eval_steps=1, out=Path({out!r}), name="pty")
run_sweep(spec, echo=print)
"""


@pytest.mark.slow
def test_a_real_sweep_on_a_terminal_shows_speed_and_eta_within_the_first_epoch(tmp_path):
    main, child = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCHCTL_PROGRESS_S": "0.3", "COLUMNS": "200",
           "LINES": "40", "TERM": "xterm"}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", SWEEP.format(out=str(tmp_path))], stdin=subprocess.DEVNULL,
                            stdout=child, stderr=child, env=env, cwd=ROOT, close_fds=True)  # fmt: skip
    os.close(child)
    out, deadline = b"", time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            if select.select([main], [], [], 1.0)[0]:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the child side closed: the sweep has ended
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(main)
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace"))
    assert proc.returncode == 0, screen[-3000:]
    # a frame drawn while epoch 1 ran: its share done, images/s so far and the time left
    mid = re.search(
        rf"{re.escape(CELL)}/w0/r0\s+1/2 +(\d+)%\s+([\d,]+)\s.*?\s(\d+ s|\d+ min)\s+training epoch 1", screen
    )
    assert mid, screen[-3000:]
    assert 0 < int(mid.group(1)) < 100 and int(mid.group(2).replace(",", "")) > 0
    assert re.search(r"ETA \d+", screen)
    assert "benchctl: 1/1 trial done · 0 running · 0 failed" in screen
