"""Epoch checkpoints: a trial continued from one ends where the uninterrupted trial ends, and the
report reads one run per trial across the attempts that made it."""

import pandas as pd
import pytest

from orchestrator.analysis.stats import ok_epochs
from trainables.checkpoint import CheckpointMismatch, load_state
from trainables.config import TrialConfig
from trainables.train import checkpoint_path, run_trial


@pytest.mark.slow  # trains each run twice
@pytest.mark.parametrize("pipeline", ["loader", "resident"])
def test_a_run_continued_from_its_checkpoint_ends_as_the_uninterrupted_run(tiny, tmp_path, pipeline):
    cfg = TrialConfig(model="simple_cnn", epochs=3, pipeline=pipeline, **tiny)
    whole = run_trial(cfg).epochs

    first = run_trial(TrialConfig(**{**cfg.to_dict(), "epochs": 1}), checkpoint_dir=tmp_path).epochs
    assert [r["epoch"] for r in first] == [1] and first[0]["checkpoint_mb"] > 0
    rest = run_trial(cfg, restore_from=checkpoint_path(tmp_path, 1)).epochs

    assert [r["epoch"] for r in rest] == [2, 3]
    assert [(r["warmup"], r["restored"]) for r in rest] == [(True, True), (False, False)]
    for mine, theirs in zip(first + rest, whole, strict=True):  # same batches, same updates
        assert mine["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-5)
        assert mine["test_acc"] == pytest.approx(theirs["test_acc"], abs=1e-9)
    # Equal numbers say something only if the runs learn: the loss falls and some epoch beats chance
    # (0.1). Not the last epoch's accuracy alone: on 128 test images it swings by +-0.05 per epoch.
    assert whole[-1]["train_loss"] < whole[0]["train_loss"] - 0.1
    assert max(r["test_acc"] for r in whole) > 0.15


def test_a_checkpoint_of_another_trial_is_refused(tiny, tmp_path):
    run_trial(TrialConfig(model="simple_cnn", epochs=1, max_steps=1, **tiny), checkpoint_dir=tmp_path)
    other = TrialConfig(model="simple_cnn", epochs=2, repeat=1, **tiny)
    with pytest.raises(CheckpointMismatch, match="belongs to trial 'simple_cnn/cpu/bs32/loader/fp32/w0/r0'"):
        load_state(checkpoint_path(tmp_path, 1), other)


def _rows(attempt: int, epochs: range, trial: str = "t") -> list[dict]:
    return [
        {"sweep": "s", "trial": trial, "attempt": attempt, "epoch": e, "epoch_s": 10.0 * attempt + e}
        for e in epochs
    ]


def test_the_report_joins_a_cut_attempt_and_the_one_that_continued_it_into_one_run():
    epochs = pd.DataFrame(
        _rows(1, range(1, 4))  # cut during epoch 4
        + _rows(2, range(4, 7))  # continued from the checkpoint after epoch 3
        + _rows(1, range(1, 3), trial="u")  # cut, never finished
        + _rows(1, range(1, 3), trial="v") + _rows(2, range(1, 3), trial="v")  # restarted from scratch
    )
    trials = pd.DataFrame(
        [
            {"sweep": "s", "trial": "t", "attempt": 1, "status": "partial"},
            {"sweep": "s", "trial": "t", "attempt": 2, "status": "ok"},
            {"sweep": "s", "trial": "u", "attempt": 1, "status": "partial"},
            {"sweep": "s", "trial": "v", "attempt": 1, "status": "error"},
            {"sweep": "s", "trial": "v", "attempt": 2, "status": "ok"},
        ]
    )
    out = ok_epochs(epochs, trials)
    t = out[out.trial == "t"]
    assert list(t.epoch) == [1, 2, 3, 4, 5, 6] and set(t.attempt) == {2}  # one run
    assert list(t.from_attempt) == [1, 1, 1, 2, 2, 2]
    assert "u" not in set(out.trial)  # a partial trial is never taken for a finished one
    v = out[out.trial == "v"]
    assert list(v.from_attempt) == [2, 2] and list(v.epoch_s) == [21.0, 22.0]


def test_the_report_names_the_epochs_a_cut_trial_left_on_disk():
    """Epochs on disk count over all attempts: attempt 2 continued a cut trial from its checkpoint after
    epoch 5 and was cut again after epoch 8 (reports/h100-explained's GPU trial: "8 of 10", not "5")."""
    from orchestrator.analysis.stats import epochs_on_disk
    from orchestrator.report.model import ReportModel
    from orchestrator.report.sections import _cut_short

    epochs = pd.DataFrame(
        _rows(1, range(1, 6)) + _rows(2, range(6, 9))  # t: cut twice, continued from its checkpoint
        + _rows(1, range(1, 4), trial="r") + _rows(2, range(1, 3), trial="r")  # r: retried from epoch 1
    )  # fmt: skip
    trials = pd.DataFrame(
        [
            {"sweep": "s", "trial": "t", "attempt": 1, "status": "partial", "epochs_done": 5},
            {"sweep": "s", "trial": "t", "attempt": 2, "status": "partial", "epochs_done": 3},
            {"sweep": "s", "trial": "r", "attempt": 1, "status": "error", "epochs_done": 3},
            {"sweep": "s", "trial": "r", "attempt": 2, "status": "partial", "epochs_done": 2},
        ]
    ).assign(epochs_planned=10)
    cut = epochs_on_disk(epochs, trials, [("s", "t"), ("s", "r")])
    assert cut == {("s", "t"): (8, 10), ("s", "r"): (3, 10)}  # r's retry rewrote epochs 1-2: 3 distinct
    model = ReportModel.of_table(pd.DataFrame(), cut=cut)
    assert _cut_short(model, "s", "t") == " (8 of 10 epochs on disk, in no statistic)"
    assert _cut_short(model, "s", "other") == "" and _cut_short(model, "other", "t") == ""
