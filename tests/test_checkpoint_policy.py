"""`--checkpoint-every N` / `--checkpoint-every-s S`: which epochs a trial checkpoints, decided in the
trial itself (trainables.config.CheckpointPolicy, applied by trainables.train.run_trial)."""

import pytest

from trainables.config import CheckpointPolicy, TrialConfig
from trainables.train import checkpoint_path, run_trial


def _due(policy: CheckpointPolicy, epochs: int, seconds_per_epoch: float = 1.0, start: int = 0) -> list[int]:
    """The epochs `policy` checkpoints in a run of `epochs` that starts after epoch `start`."""
    saved, saved_s, out = start, 0.0, []
    for epoch in range(start + 1, epochs + 1):
        now = (epoch - start) * seconds_per_epoch
        if policy.due(epoch, epochs, saved, now - saved_s):
            out.append(epoch)
            saved, saved_s = epoch, now
    return out


def test_every_n_epochs_counts_from_the_last_checkpoint_and_always_takes_the_last_epoch():
    assert _due(CheckpointPolicy(), 4) == [1, 2, 3, 4]  # the default: every epoch, as before
    assert _due(CheckpointPolicy(every_epochs=2), 4) == [2, 4]
    assert _due(CheckpointPolicy(every_epochs=3), 4) == [3, 4]
    assert _due(CheckpointPolicy(every_epochs=10), 4) == [4]
    # a retry restored from epoch 2 counts from there
    assert _due(CheckpointPolicy(every_epochs=3), 7, start=2) == [5, 7]


def test_every_s_checkpoints_once_that_much_time_has_passed():
    assert _due(CheckpointPolicy(every_epochs=None, every_s=25), 6, seconds_per_epoch=10) == [3, 6]
    assert _due(CheckpointPolicy(every_epochs=None, every_s=600), 6, seconds_per_epoch=10) == [6]
    # both rules: whichever comes first
    assert _due(CheckpointPolicy(every_epochs=4, every_s=25), 9, seconds_per_epoch=10) == [3, 6, 9]
    assert _due(CheckpointPolicy(every_epochs=2, every_s=1000), 5, seconds_per_epoch=10) == [2, 4, 5]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"every_epochs": 0}, "every_epochs: 0 is not allowed; must be at least 1"),
        ({"every_epochs": 1.5}, "every_epochs: 1.5 is not allowed; must be an integer"),
        ({"every_s": 0}, "every_s: 0 is not allowed; must be a number above 0"),
        ({"every_s": -3.0}, "every_s: -3.0 is not allowed"),
    ],
)
def test_a_policy_that_means_nothing_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CheckpointPolicy(**kwargs)


def test_checkpoint_every_2_over_4_epochs_checkpoints_after_epochs_2_and_4_only(tiny, tmp_path):
    cfg = TrialConfig(model="simple_cnn", epochs=4, max_steps=1, max_eval_steps=1, **tiny)
    rows = run_trial(cfg, checkpoint_dir=tmp_path, checkpoint_policy=CheckpointPolicy(every_epochs=2)).epochs
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4]
    taken = [r["epoch"] for r in rows if "checkpoint_mb" in r]
    assert taken == [2, 4]
    assert [("checkpoint_s" in r) for r in rows] == [False, True, False, True]
    assert all(r["checkpoint_mb"] > 0 and r["checkpoint_s"] > 0 for r in rows if r["epoch"] in taken)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-2", "epoch-4"]

    # a retry from the checkpoint after epoch 2 re-runs epochs 3 and 4, checkpointing only the last
    again = tmp_path / "again"
    rest = run_trial(cfg, checkpoint_dir=again, checkpoint_policy=CheckpointPolicy(every_epochs=2),
                     restore_from=checkpoint_path(tmp_path, 2)).epochs  # fmt: skip
    seen = [(r["epoch"], r["restored"], "checkpoint_mb" in r) for r in rest]
    assert seen == [(3, True, False), (4, False, True)]
    assert [p.name for p in again.iterdir()] == ["epoch-4"]
