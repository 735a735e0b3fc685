"""trainables/launch/runner.py: the four ways a trial starts behind one TrialRunner.

The child runners' processes are tested in test_isolated.py, test_prestart.py and test_forkserver.py;
here: that the picker gives each way its runner, that every runner has the protocol's `run`, and that
the inline one keeps the contract (rows returned, each epoch relayed) in this very process.
"""

import inspect
from concurrent.futures import ThreadPoolExecutor

import pytest

from trainables.config import TrialConfig
from trainables.launch.isolated import ForkserverRunner, FreshRunner, PrestartedRunner, StartMethod
from trainables.launch.runner import InlineRunner, TrialRunner, trial_runner


@pytest.mark.parametrize(
    ("method", "kind"),
    [("fresh", FreshRunner), ("prestarted", PrestartedRunner), ("forkserver", ForkserverRunner)],
)
def test_each_start_method_has_its_runner_and_inline_wins_over_it(method, kind):
    runner = trial_runner(method)
    assert type(runner) is kind and runner.start_method is StartMethod(method)
    assert type(trial_runner(StartMethod(method), inline=True)) is InlineRunner


def test_every_runner_has_the_protocols_run():
    want = inspect.signature(TrialRunner.run)
    for kind in (InlineRunner, FreshRunner, PrestartedRunner, ForkserverRunner):
        got = inspect.signature(kind.run)
        assert list(got.parameters) == list(want.parameters), kind
        assert [p.kind for p in got.parameters.values()] == [p.kind for p in want.parameters.values()], kind


def test_the_inline_runner_returns_the_rows_it_relays(tiny):
    seen = []
    cfg = TrialConfig(model="simple_cnn", epochs=2, max_steps=2, **tiny)
    runner = trial_runner("fresh", inline=True)
    with ThreadPoolExecutor(1) as pool:  # its own thread: the niceness it may take stays there
        rows = pool.submit(runner.run, cfg, lambda info, row: seen.append((info, row))).result()
    assert [r["epoch"] for r in rows] == [1, 2] and [r for _, r in seen] == rows
    assert "start_method" not in seen[0][0]  # no child: the trials row records none, as before
