"""Live progress: the ETA estimator, the plain and terminal renderings, the phase board, a real sweep."""

import io
import pickle
import re
import sys
import time

import pytest
from rich.console import Console

from orchestrator.plan.matrix import expand, resolve_allotment
from orchestrator.plan.spec import SweepSpec
from orchestrator.run.eta import Pace, State, eta_s, format_eta
from orchestrator.run.phases import Board, phase_board, post_phase
from orchestrator.run.progress import Progress

CELL = "simple_cnn/cpu/bs32/loader/fp32"
R0, R1 = f"{CELL}/r0", f"{CELL}/r1"
ROW = {"epoch": 1, "images_per_s": 1234.4, "train_loss": 1.2345, "test_acc": 0.456}


# -- the ETA ---------------------------------------------------------------------------------------
def pace(state=State.pending, done=0, startups=(), steady=(), since_last=0.0, pool="cpu", **kw):
    groups, epochs = kw.get("groups", (CELL, "m/cpu")), kw.get("epochs", 10)
    return Pace(pool, groups, epochs, done, state, startups, steady, since_last)


def test_eta_of_a_training_trial_is_its_remaining_epochs_at_its_own_steady_pace():
    t = pace(State.training, done=3, startups=(40.0,), steady=(12.0, 10.0), since_last=5.0)
    assert eta_s([t]) == pytest.approx(7 * 11.0 - 5.0)
    # after one epoch only: its start-up interval is all it has to go by
    assert eta_s([pace(State.training, done=1, startups=(30.0,))]) == pytest.approx(9 * 30.0)


def test_eta_of_a_pending_trial_comes_from_the_most_alike_trials_else_is_unknown():
    finished = pace(State.finished, done=10, startups=(40.0,), steady=(10.0,) * 9)
    assert eta_s([finished, pace()]) == pytest.approx(40.0 + 9 * 10.0)
    # another cell of the same model and device is the fallback; another model is no evidence
    other_cell = pace(State.finished, done=10, startups=(20.0,), steady=(5.0,), groups=("x", "m/cpu"))
    assert eta_s([other_cell, pace()]) == pytest.approx(20.0 + 9 * 5.0)
    other_model = pace(State.finished, done=10, startups=(20.0,), steady=(5.0,), groups=("y", "n/cpu"))
    assert eta_s([other_model, pace()]) is None
    assert eta_s([pace(State.starting, since_last=3.0)]) is None  # its first epoch still to come
    assert eta_s([finished]) == 0.0


def test_eta_divides_a_pools_work_by_the_trials_it_runs_at_once():
    a = pace(State.training, done=5, startups=(10.0,), steady=(20.0,))  # 100 s left
    b = pace(State.training, done=5, startups=(10.0,), steady=(20.0,))
    assert eta_s([a, b]) == pytest.approx(100.0)  # side by side
    assert eta_s([a, b, pace(epochs=6)]) == pytest.approx((100 + 100 + 10 + 5 * 20) / 2)
    short = pace(State.training, done=9, startups=(10.0,), steady=(10.0,))  # 10 s left
    assert eta_s([a, short]) == pytest.approx(100.0)  # never less than the slowest running trial
    gpu = pace(State.training, done=9, startups=(1.0,), steady=(3.0,), pool="gpu", groups=("g",))
    assert eta_s([a, gpu]) == pytest.approx(100.0)  # pools run at the same time: the longer one


def test_eta_reads_as_seconds_minutes_or_hours():
    assert [format_eta(s) for s in (42, 240, 4 * 3600)] == ["42 s", "4 min", "4.0 h"]


# -- the driver's display, fed the calls Tune makes ------------------------------------------------
class TuneTrial:
    """What the callbacks read of Tune's Trial: its id, its config and where its error is."""

    def __init__(self, tune_id: str, plan, error: str | None = None):
        self.trial_id, self.config, self.error_file, self._error = tune_id, plan.tune_config(), None, error

    def get_error(self):
        return self._error


@pytest.fixture
def configs():
    spec = SweepSpec(models=("simple_cnn",), devices=("cpu",), batch_sizes=(32,), epochs=3, repeats=2)
    return expand(spec, resolve_allotment(spec, [2]))


def test_plain_lines_one_per_event_with_epoch_k_of_n_and_no_escape_codes(configs, capsys):
    progress = Progress(configs)
    first, second = TuneTrial("a", configs[0]), TuneTrial("b", configs[1], error="OSError: disk full")
    progress.on_trial_start(0, [], first)
    for epoch in (1, 2, 3):
        progress.on_trial_result(0, [], first, {**ROW, "epoch": epoch})
    progress.on_trial_complete(0, [], first)
    progress.on_trial_start(0, [], second)
    progress.on_trial_recover(0, [], second)
    progress.on_trial_start(0, [], second)
    progress.on_trial_error(0, [], second)
    progress.on_experiment_end([])
    out = capsys.readouterr().err
    assert "\x1b" not in out and "\r" not in out
    lines = out.splitlines()
    assert [ln.split(" · ")[0] for ln in lines] == [
        f"benchctl: {R0} started",
        f"benchctl: {R0} epoch 1/3",
        f"benchctl: {R0} epoch 2/3",
        f"benchctl: {R0} epoch 3/3",
        f"benchctl: {R0} done",
        f"benchctl: {R1} started",
        f"benchctl: {R1} failed, will retry: OSError: disk full",
        f"benchctl: {R1} started (attempt 2)",
        f"benchctl: {R1} failed: OSError: disk full",
        "benchctl: 1/2 trials done",
    ]
    assert lines[0].startswith(f"benchctl: {R0} started · 0/2 trials done · 1 running · 0 failed · ")
    assert " · 1,234 img/s · loss 1.23 · acc 45.6% · 0/2 trials done · 1 running" in lines[1]
    assert "ETA" not in lines[0]  # nothing timed yet: no ETA rather than an invented one
    assert "ETA" in lines[5]  # r1 is estimated from r0, the same cell
    assert lines[-1].startswith("benchctl: 1/2 trials done · 0 running · 1 failed · 1 retried · ")


def test_progress_pickles_without_its_display_or_ray_handles(configs, monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    progress = Progress(configs)
    progress.on_trial_start(0, [], TuneTrial("a", configs[0]))  # the live display is running now
    try:
        clone = pickle.loads(pickle.dumps(progress))
    finally:
        progress.on_experiment_end([])
    assert clone.total == 2 and clone.count(State.starting) == 1 and clone._live is None


def render(renderable) -> str:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    console.print(renderable)
    return console.file.getvalue()


def test_the_terminal_table_shows_each_running_trial_and_its_phase(configs):
    progress = Progress(configs)
    first, second = TuneTrial("a", configs[0]), TuneTrial("b", configs[1])
    progress.on_trial_start(0, [], first)
    progress.on_trial_result(0, [], first, {**ROW, "epoch": 2})
    progress.on_trial_start(0, [], second)
    progress.show_phase("b", "decoding 60,000 JPEGs from /data/cifar10")  # Tune's id is understood too
    text = render(progress.renderable())
    row0 = next(ln for ln in text.splitlines() if R0 in ln)
    for field in ("2/3", "1,234", "1.23", "45.6%", "training"):
        assert field in row0
    row1 = next(ln for ln in text.splitlines() if R1 in ln)
    assert "0/3" in row1 and "decoding 60,000 JPEGs from /data/cifar10" in row1
    assert "0/2 trials done · 2 running · 0 failed" in text and "ETA" in text
    progress.on_trial_result(0, [], second, {**ROW, "epoch": 1})  # the phase ends with the first epoch
    assert "decoding" not in render(progress.renderable())


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_display_redraws_and_leaves_finished_trials_and_a_summary(configs, monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    progress = Progress(configs)
    trial = TuneTrial("a", configs[0])
    progress.on_trial_start(0, [], trial)
    progress.on_trial_result(0, [], trial, ROW)
    progress.on_trial_complete(0, [], trial)
    progress.on_experiment_end([])
    drawn = sys.stderr.getvalue()
    assert "\x1b[2K\x1b[1A" in drawn  # redrawn in place by rich
    screen = [ln for ln in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn).splitlines() if ln.strip()]
    assert any(ln.startswith(f"benchctl: {R0} done · 1/2 trials done · 0 running") for ln in screen)
    assert screen[-1].startswith("benchctl: 1/2 trials done · 0 running")  # the last frame: no table


# -- phases: the board, and the trip from a Ray worker to the driver -------------------------------
def test_the_board_hands_out_posts_after_a_sequence_number():
    board = Board()
    board.post("t", "generating synthetic data", 1.0)
    board.post("t", "building model", 2.0)
    assert [p[2] for p in board.since(0)] == ["generating synthetic data", "building model"]
    assert [p[2] for p in board.since(1)] == ["building model"] and board.since(2) == []


def test_post_phase_outside_ray_is_a_no_op():
    import ray

    assert not ray.is_initialized()
    assert post_phase(R0, "building model") is None


@pytest.fixture
def local_ray():
    import ray

    ray.init(address="local", num_cpus=1, include_dashboard=False, _node_ip_address="127.0.0.1")
    yield ray
    ray.shutdown()


def test_a_phase_posted_in_a_ray_worker_reaches_the_drivers_progress(local_ray, configs, capsys):
    ray = local_ray

    @ray.remote(num_cpus=0)
    def trial_side(trial_id: str, text: str) -> str:
        post_phase(trial_id, text)  # never raises, board or not
        return "ran"

    assert ray.get(trial_side.remote(R0, "before any board")) == "ran"
    progress = Progress(configs)
    with progress.running():
        progress.on_trial_start(0, [], TuneTrial("a", configs[0]))
        ray.get(trial_side.remote(R0, "decoding 60,000 JPEGs from /data/cifar10"))
        seen, deadline = "", time.monotonic() + 60  # a bound against hanging, not a speed check
        while "decoding" not in seen and time.monotonic() < deadline:
            progress.on_step_begin(0, [])  # what Tune calls every ~0.1 s
            time.sleep(0.1)
            seen += capsys.readouterr().err
    assert f"benchctl: {R0} decoding 60,000 JPEGs from /data/cifar10 · 0/2 trials done · 1 running" in seen
    assert "before any board" not in seen
    assert ray.get(trial_side.remote(R0, "after the board is gone")) == "ran"


def test_the_board_takes_no_cpu_from_the_trials(local_ray):
    ray = local_ray
    with phase_board() as board:
        assert ray.get(board.since.remote(0)) == []
        assert ray.available_resources().get("CPU") == 1  # num_cpus=0: every core is left to trials


# -- a real sweep ----------------------------------------------------------------------------------
@pytest.mark.slow  # a real sweep: starts Ray
def test_a_real_sweep_prints_each_epoch_while_its_trial_runs(tmp_path, capsys):
    from orchestrator.run.sweep import run_sweep

    spec = SweepSpec(
        models=("simple_cnn",),
        devices=("cpu",),
        epochs=3,
        max_steps=2,
        train_size=256,
        test_size=128,
        batch_sizes=(32,),
        workers=0,
        max_eval_steps=1,
        out=tmp_path,
        name="live",
    )
    run_sweep(spec, echo=lambda _: None)
    err = capsys.readouterr().err
    assert "\x1b" not in err
    r0 = f"{CELL}/w0/r0"  # --workers 0: the trial id names them
    mine = [ln.split(" · ")[0] for ln in err.splitlines() if ln.startswith(f"benchctl: {r0} ")]
    events = [ln for ln in mine if " epoch " in ln or ln.endswith((" started", " done"))]
    expected = ("started", "epoch 1/3", "epoch 2/3", "epoch 3/3", "done")
    assert events == [f"benchctl: {r0} {e}" for e in expected]
    epoch_3 = next(ln for ln in err.splitlines() if f"{r0} epoch 3/3" in ln)
    assert " img/s · loss " in epoch_3 and " · acc " in epoch_3 and "0/1 trial done · 1 running" in epoch_3
    assert err.rstrip().splitlines()[-1].startswith("benchctl: 1/1 trial done · 0 running · 0 failed")
