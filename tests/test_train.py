import pytest
import torch

from trainables.config import TrialConfig
from trainables.device import DeviceUnavailable, cpu_model
from trainables.train import run_trial


@pytest.mark.slow  # trains a model for real (seconds to minutes on 2 cores)
def test_trial_without_ray_reports_consistent_epochs(tiny):
    seen = []
    result = run_trial(
        TrialConfig(model="simple_cnn", epochs=2, **tiny), on_epoch=lambda i, r: seen.append(r)
    )
    assert seen == result.epochs and [r["epoch"] for r in seen] == [1, 2]
    assert [r["warmup"] for r in seen] == [True, False]
    for row in seen:
        assert 0 < row["data_s"] + row["compute_s"] <= row["epoch_s"]
        assert row["eval_s"] > 0 and row["images"] == 256 and row["steps"] == row["full_steps"] == 8
        assert not row["extrapolated"] and not row["eval_partial"]
        assert row["images_per_s"] == pytest.approx(row["images"] / row["measured_s"])
        assert 0 <= row["test_acc"] <= 1 and row["train_loss"] > 0
    info = result.info
    assert info["device_name"] == cpu_model() and info["params"] == 551018
    assert info["cuda_visible_devices"] == "" and info["gpus_visible"] == 0  # GPUs hidden from a cpu trial
    assert info["torch_threads"] == torch.get_num_threads() == 2


def test_capped_epoch_is_extrapolated_and_marked(tiny):
    rows = run_trial(TrialConfig(model="simple_cnn", epochs=1, max_steps=2, max_eval_steps=1, **tiny)).epochs
    row = rows[0]
    assert row["steps"] == 2 and row["full_steps"] == 8 and row["extrapolated"]
    assert row["epoch_s"] == pytest.approx(row["measured_s"] * 8 / 2)
    assert row["images"] == 64
    assert row["eval_images"] == 128 and not row["eval_partial"]  # one eval batch of 512 covers 128


@pytest.mark.slow  # trains to beat chance: minutes on 2 cores
def test_learnable_synthetic_beats_chance():
    cfg = TrialConfig(
        model="simple_cnn",
        pipeline="resident",
        epochs=3,
        batch_size=64,
        train_size=2048,
        test_size=512,
        cpus=2,
    )
    accuracy = run_trial(cfg).epochs[-1]["test_acc"]
    assert accuracy > 0.3  # chance is 0.1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU refusal")
def test_gpu_trial_without_cuda_fails_loudly(tiny):
    with pytest.raises(DeviceUnavailable, match="gpu trial .* got no CUDA device"):
        run_trial(TrialConfig(model="simple_cnn", device="gpu", **tiny))


def test_amp_runs_on_cpu(tiny):
    rows = run_trial(TrialConfig(model="simple_cnn", precision="amp", epochs=1, max_steps=2, **tiny)).epochs
    assert rows[0]["train_loss"] > 0
