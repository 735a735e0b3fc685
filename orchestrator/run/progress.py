"""What the user sees while `benchctl sweep` runs: each running trial's epochs, phases and a sweep ETA.

On a terminal, a rich Live table redrawn in place (one row per running trial: epoch k/N, images/s,
train loss, test accuracy, its time left, what it is doing now) above a summary line whose elapsed
time ticks even while no result arrives; finished and failed trials leave a line above it. Within an
epoch, the notes a trial sends every few seconds (trainables/train.py) show that epoch's share done
(`1/10 42%`), its images/s so far and the time left. Anywhere else (CI, a log file, a pipe) the same
facts as plain lines, one per event (no notes), each epoch's line holding `epoch k/N`:

    benchctl: simple_cnn/cpu/bs128/loader/fp32/r0 epoch 3/10 · 1,234 img/s · loss 1.23 · acc 45.6%
      · 2/6 trials done · 1 running · 0 failed · ETA 4 min · 123 s

Phases ("decoding the images of PATH") and the notes come from the trials through orchestrator.run.phases;
the ETA from orchestrator.run.eta, a pure function of the epoch intervals and notes seen so far. Long
paths in phase texts are shortened to their tail (orchestrator.errors.short_path).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ray.tune import Callback

from orchestrator.errors import short_paths
from orchestrator.plan.trial_plan import TrialPlan
from orchestrator.run.eta import Pace, State, eta_s, format_eta, remaining_s
from orchestrator.run.phases import BOARD_NAME, phase_board, post_phase
from orchestrator.run.tune_glue import _last_error_line

__all__ = ["Progress", "post_phase"]  # post_phase (orchestrator.run.phases): the trial side, for tune_trial

POLL_S = 1.0  # at most one phase-board query per second; Tune steps every ~0.1 s
ETA_EVERY_S = 1.0  # a known ETA is recomputed at most this often (each takes every trial: O(trials))
FIRST_EPOCH_WAIT_S = 0.5  # before a trial's first epoch line, fetch its phases so they print first
REFRESH_PER_S = 2  # terminal redraws per second: enough for a ticking clock


@dataclass
class _Trial:
    """The driver's running record of one benchctl trial (all its attempts)."""

    trial_id: str
    pool: str
    groups: tuple[str, ...]
    epochs: int
    state: State = State.pending
    done: int = 0
    attempts: int = 0
    startups: list[float] = field(default_factory=list)
    steady: list[float] = field(default_factory=list)
    mark: float = 0.0  # monotonic time of the attempt's start or its last epoch
    started: float = 0.0  # monotonic time of the attempt's start
    row: dict = field(default_factory=dict)  # the last epoch's numbers
    phase: str | None = None
    note: dict | None = None  # the latest note from within the epoch in progress (trainables/train.py)
    noted: float = 0.0  # monotonic time that note arrived

    @classmethod
    def of(cls, plan: TrialPlan) -> _Trial:
        cfg, where = plan.trial, plan.where
        return cls(cfg.trial_id, where, (cfg.cell, f"{cfg.model}/{where}"), cfg.epochs)

    def pace(self, now: float) -> Pace:
        running = self.state in (State.starting, State.training)
        return Pace(
            self.pool,
            self.groups,
            self.epochs,
            self.done,
            self.state,
            tuple(self.startups),
            tuple(self.steady),
            now - self.mark if running else 0.0,
            self.in_epoch(now) if running else None,
        )

    def in_epoch(self, now: float) -> tuple[float, float] | None:
        """From the latest note: (seconds the epoch's training pass takes at its pace so far, seconds of
        it left now), or None without a note from within the epoch in progress."""
        note = self.note
        if not note or not note.get("steps") or not note.get("step") or note.get("seconds", 0) <= 0:
            return None
        per_pass = note["seconds"] * note["steps"] / note["step"]
        return per_pass, max(0.0, per_pass - note["seconds"] - (now - self.noted))

    def epoch_cell(self) -> str:
        """`k/N`: epochs done; within epoch k, from its latest note, `k/N 42%`."""
        note = self.note
        if note and note.get("steps"):
            return f"{note['epoch']}/{self.epochs} {note['step'] / note['steps']:.0%}"
        return f"{self.done}/{self.epochs}"

    def speed(self) -> float | None:
        """Images/s: of the epoch in progress so far (its latest note), else of the last epoch."""
        note = self.note
        if note and note.get("seconds", 0) > 0:
            return note["images"] / note["seconds"]
        return self.row.get("images_per_s")

    def doing(self) -> str:
        note = self.note
        if self.phase is None and note:
            return f"training epoch {note['epoch']}: {note['images']:,} images so far"
        return short_paths(self.phase or self.state.value)


def _metrics(row: dict) -> list[str]:
    parts = []
    if row.get("images_per_s") is not None:
        parts.append(f"{row['images_per_s']:,.0f} img/s")
    if row.get("train_loss") is not None:
        parts.append(f"loss {row['train_loss']:.3g}")
    if row.get("test_acc") is not None:
        parts.append(f"acc {row['test_acc']:.1%}")
    return parts


class Progress(Callback):
    """Tune callback: live table on a terminal, plain event lines elsewhere (see the module doc)."""

    def __init__(self, plans: Sequence[TrialPlan]) -> None:
        self._trials = {t.trial_id: t for t in map(_Trial.of, plans)}
        self._by_tune_id: dict[str, str] = {}  # Tune's trial id -> benchctl's
        self.total = len(self._trials)
        self.done = self.failed = self.retried = 0
        self._t0 = time.monotonic()
        self._eta: tuple[float | None, float] = (None, self._t0)  # the last ETA computed, and when
        self._seq = 0  # last phase post read from the board
        self._polled = float("-inf")
        self._closing = False
        self._unpicklable()

    def _unpicklable(self) -> None:
        # Live display, its lock and Ray handles: rebuilt on demand, never pickled with Tune's state
        self._lock = threading.Lock()
        self._live = None
        self._board = None
        self._pending = None

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_live", "_board", "_pending")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._unpicklable()

    @property
    def stream(self):  # looked up each time, so redirection (pytest, CliRunner) is honoured
        return sys.stderr

    @property
    def _tty(self) -> bool:
        return self.stream.isatty()

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Around `tuner.fit()`: the phase board exists and the display is on; on leaving (also by
        Ctrl-C, when Tune never calls on_experiment_end) the board is killed and the display ended."""
        with phase_board() as board:
            self._board = board
            try:
                self._start_live()
                yield
            finally:
                self._stop_live()
                self._board = self._pending = None

    # -- counts and lines --------------------------------------------------------------------------
    def count(self, state: State) -> int:
        return sum(t.state is state for t in self._trials.values())

    def eta(self) -> float | None:
        """The sweep's ETA. Each event line shows it, and computing it takes every trial, so a known ETA is
        recomputed at most every ETA_EVERY_S and counted down in between (1,000 trials: ~5,000 events
        would each have taken all 1,000); an unknown one is recomputed at once, so it shows when it can."""
        now = time.monotonic()
        cached, at = self._eta
        if cached is not None and now - at < ETA_EVERY_S:
            return max(0.0, cached - (now - at))
        self._eta = (eta_s([t.pace(now) for t in self._trials.values()]), now)
        return self._eta[0]

    def summary(self) -> str:
        running = self.count(State.starting) + self.count(State.training)
        noun = "trial" if self.total == 1 else "trials"  # "1/1 trial done", "1/2 trials done"
        parts = [f"{self.done}/{self.total} {noun} done", f"{running} running", f"{self.failed} failed"]
        if self.retried:
            parts.append(f"{self.retried} retried")
        eta = self.eta() if self.done + self.failed < self.total else None
        if eta is not None:
            parts.append(f"ETA {format_eta(eta)}")
        parts.append(f"{time.monotonic() - self._t0:.0f} s")
        return " · ".join(parts)

    def _event(self, trial: _Trial | str, what: str, live_too: bool = True) -> None:
        """One event: a plain line off a terminal; on one, a line above the table if `live_too`."""
        name = trial if isinstance(trial, str) else trial.trial_id
        line = f"benchctl: {name} {short_paths(what)} · {self.summary()}"
        if not self._tty:
            self.stream.write(line + "\n")
            self.stream.flush()
        else:
            self._start_live()  # normally already on (running()); the table shows what is not printed
            if self._live is not None:
                if live_too:  # soft_wrap: a long line is the terminal's to wrap, not cut in two by rich
                    self._live.console.print(line, highlight=False, markup=False, soft_wrap=True)
                self._live.refresh()  # the table shows the change now, not at the next tick
                return
            if live_too:  # the display has ended (an event after the experiment's end)
                self.stream.write(line + "\n")

    # -- the terminal's table ----------------------------------------------------------------------
    def renderable(self):
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        now = time.monotonic()
        with self._lock:
            trials = list(self._trials.values())
            left = dict(
                zip((t.trial_id for t in trials), remaining_s([t.pace(now) for t in trials]), strict=True)
            )
            active = [t for t in trials if t.state in (State.starting, State.training)]
            summary = Text(f"benchctl: {self.summary()}")
            if self._closing or not active:
                return summary
            rows = [
                (
                    t.trial_id,
                    t.epoch_cell(),
                    "—" if (speed := t.speed()) is None else f"{speed:,.0f}",
                    f"{t.row['train_loss']:.3g}" if "train_loss" in t.row else "—",
                    f"{t.row['test_acc']:.1%}" if "test_acc" in t.row else "—",
                    f"{now - t.started:.0f} s",
                    "—" if left[t.trial_id] is None else format_eta(left[t.trial_id]),
                    t.doing(),
                )
                for t in active
            ]
        table = Table(box=None, pad_edge=False, header_style="bold")
        # every column but the last keeps its full width; a narrow terminal cuts the phase text short
        for i, name in enumerate(("trial", "epoch", "img/s", "loss", "acc", "for", "left")):
            width = max(len(name), *(len(r[i]) for r in rows))
            table.add_column(name, justify="left" if i == 0 else "right", no_wrap=True, min_width=width)
        table.add_column("now")  # the column rich may narrow; its text stays on one line, cut with "…"
        for r in rows:
            table.add_row(*r[:-1], Text(r[-1], no_wrap=True, overflow="ellipsis"))
        return Group(table, summary)

    def _start_live(self) -> None:
        if self._live is None and self._tty and not self._closing:
            from rich.console import Console
            from rich.live import Live

            console = Console(file=self.stream)
            self._live = Live(
                get_renderable=self.renderable, console=console, refresh_per_second=REFRESH_PER_S
            )
            self._live.start()

    def _stop_live(self) -> None:
        self._closing = True  # the last frame left on screen is the summary line alone
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    # -- phases from the board ---------------------------------------------------------------------
    def _poll(self, wait_s: float = 0.0, force: bool = False) -> None:
        """Read new phase posts: at most one query in flight, issued at most every POLL_S."""
        import ray

        now = time.monotonic()
        if self._pending is None:
            if (now - self._polled < POLL_S and not force) or not ray.is_initialized():
                return
            self._polled = now
            if self._board is None:
                with contextlib.suppress(Exception):
                    self._board = ray.get_actor(BOARD_NAME)
            if self._board is None:
                return
            self._pending = self._board.since.remote(self._seq)
        ready, _ = ray.wait([self._pending], timeout=wait_s)
        if not ready:
            return
        ref, self._pending = self._pending, None
        try:
            posts = ray.get(ref)
        except Exception:  # noqa: BLE001 - the board died: look it up again on the next poll
            self._board = None
            return
        for seq, trial_id, text, _at in posts:
            self._seq = max(self._seq, seq)
            self.show_phase(trial_id, text)

    def show_phase(self, trial_id: str, text: str | dict) -> None:
        """A trial's phase (benchctl's trial id, or Tune's): its table row until its next epoch; or a
        note from within an epoch (a dict: show_note)."""
        trial = self._trials.get(self._by_tune_id.get(trial_id, trial_id))
        if isinstance(text, dict):
            if trial is not None:
                self.show_note(trial, text)
            return
        if trial is None:  # not a trial of this sweep's plan: still worth a line
            self._event(trial_id, text)
            return
        with self._lock:
            trial.phase, trial.note = text, None
        self._event(trial, text, live_too=False)

    def show_note(self, trial: _Trial, note: dict) -> None:
        """A note from within an epoch: the table's row shows that epoch's share, images/s and time left;
        off a terminal nothing is printed (one line per epoch there)."""
        with self._lock:
            if trial.state not in (State.starting, State.training) or note.get("epoch", 0) <= trial.done:
                return  # late: its epoch has ended, or its attempt has
            trial.note, trial.noted, trial.phase = note, time.monotonic(), None
        if self._tty and self._live is not None:
            self._live.refresh()

    # -- Tune's callbacks --------------------------------------------------------------------------
    def _trial(self, trial) -> _Trial:
        tid = self._by_tune_id.get(trial.trial_id)
        if tid is None:
            record = _Trial.of(TrialPlan.from_tune(trial.config))
            with self._lock:
                if record.trial_id not in self._trials:  # not planned: counted from now on
                    self._trials[record.trial_id] = record
                    self.total += 1
            tid = self._by_tune_id[trial.trial_id] = record.trial_id
        return self._trials[tid]

    def on_step_begin(self, iteration, trials, **info):
        self._poll()

    def on_trial_start(self, iteration, trials, trial, **info):
        t = self._trial(trial)
        with self._lock:
            t.state, t.phase, t.note = State.starting, None, None
            t.attempts += 1
            t.mark = t.started = time.monotonic()
        self._event(t, "started" if t.attempts == 1 else f"started (attempt {t.attempts})", live_too=False)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if "epoch" not in result:
            return
        t = self._trial(trial)
        if t.state is State.starting:
            self._poll(wait_s=FIRST_EPOCH_WAIT_S, force=True)  # its phases print before its epoch 1
        now = time.monotonic()
        with self._lock:
            (t.startups if t.state is State.starting else t.steady).append(now - t.mark)
            t.state, t.mark, t.phase, t.note = State.training, now, None, None
            t.done = int(result["epoch"])
            t.row = {k: result[k] for k in ("images_per_s", "train_loss", "test_acc") if k in result}
        self._event(t, " · ".join([f"epoch {t.done}/{t.epochs}", *_metrics(t.row)]), live_too=False)

    def _end(self, trial, state: State, what: str, counter: str) -> None:
        t = self._trial(trial)
        with self._lock:
            t.state, t.phase, t.note = state, None, None
            setattr(self, counter, getattr(self, counter) + 1)
        self._event(t, what)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._end(trial, State.finished, "done", "done")

    def on_trial_recover(self, iteration, trials, trial, **info):  # Tune starts it again later
        self._end(trial, State.pending, f"failed, will retry: {_last_error_line(trial)}", "retried")

    def on_trial_error(self, iteration, trials, trial, **info):
        self._end(trial, State.finished, f"failed: {_last_error_line(trial)}", "failed")

    def on_experiment_end(self, trials, **info):
        self._stop_live()
        if not self._tty:
            self.stream.write(f"benchctl: {self.summary()}\n")
            self.stream.flush()
