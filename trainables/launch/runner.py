"""One interface for the four ways a trial's training loop starts: `TrialRunner`.

    runner = trial_runner(StartMethod.prestarted)           # or inline=True: in this very process
    rows = runner.run(cfg, on_epoch, checkpoint_dir=..., checkpoint_policy=..., restore_from=...,
                      on_phase=...)

    inline        InlineRunner      trainables.train.run_trial in this process (the Ray worker); a
                                    `sleep:S` model's trainables.sleep.run_sleep_trial instead
    fresh         FreshRunner       a new interpreter per trial, started when the trial starts
    prestarted    PrestartedRunner  a new interpreter per trial, started before it asked (default)
    forkserver    ForkserverRunner  a fork of a per-process server that imported torch once

Why one protocol: the supervisor (orchestrator/run/tune_glue.py) picks a runner once and calls the
same `run` whatever it is, as TorchBench's WorkerBase lets a benchmark run in-process or in a
subprocess worker behind one interface. Every runner keeps run_trial's contract: `on_epoch(info, row)`
per epoch, `on_phase(text)` before slow start-up steps, the rows returned, a failure raised. The three
child runners live in trainables/launch/isolated.py, beside the process protocol they share.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from trainables.config import CheckpointPolicy, StartMethod, TrialConfig
from trainables.launch.isolated import CHILD_RUNNERS
from trainables.priority import favour_this_process
from trainables.sleep import is_sleep, run_sleep_trial


class TrialRunner(Protocol):
    """Runs one trial somewhere and relays its epochs; what `trial_runner` returns."""

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
        """Train `cfg`; call `on_epoch(info, row)` per epoch and `on_phase(text)` before slow
        start-up steps; return the epoch rows. Raises what the trial raised (a child's failure as
        trainables.launch.isolated.TrialProcessError)."""
        ...


class InlineRunner:
    """The loop in this process (`--trial-process inline`): no child, so torch is imported here, and
    this thread (with the torch threads and loader workers it starts) runs at the trial's priority."""

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
        favour_this_process()
        if is_sleep(cfg.model):  # trains nothing, imports no torch (trainables/sleep.py)
            return run_sleep_trial(cfg, on_epoch)
        from trainables.train import run_trial  # torch comes into this process only inline

        result = run_trial(
            cfg,
            on_epoch,
            checkpoint_dir=checkpoint_dir,
            checkpoint_policy=checkpoint_policy,
            restore_from=restore_from,
            on_phase=on_phase,
        )
        return result.epochs  # the rows, as a child runner returns them (info went with each epoch)


def trial_runner(start_method: StartMethod | str, *, inline: bool = False) -> TrialRunner:
    """The runner of a trial: inline, else a child started the `start_method` way."""
    if inline:
        return InlineRunner()
    return CHILD_RUNNERS[StartMethod(start_method)]()
