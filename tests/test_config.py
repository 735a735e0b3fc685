import pytest

from trainables.config import Device, Pipeline, Precision, TrialConfig, default_data_dir


def test_strings_become_enums_and_round_trip():
    cfg = TrialConfig(model="resnet18", device="gpu", pipeline="resident", precision="amp")
    assert cfg.device is Device.gpu and cfg.pipeline is Pipeline.resident and cfg.precision is Precision.amp
    assert TrialConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.to_dict()["device"] == "gpu"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("epochs", 0, "epochs: 0 is not allowed; must be at least 1"),
        ("batch_size", -4, "batch_size: -4 is not allowed; must be at least 1"),
        ("batch_size", 1.5, "batch_size: 1.5 is not allowed; must be an integer"),
        ("workers", -1, "workers: -1 is not allowed; must be at least 0"),
        ("max_steps", 0, "max_steps: 0 is not allowed; must be at least 1"),
        ("device", "tpu", "device: 'tpu' is not allowed; must be one of cpu, gpu"),
        (
            "dataset",
            "imagenet",
            "dataset: 'imagenet' is not allowed; must be synthetic, cifar10 or folder:PATH",
        ),
        ("lr", -0.1, "lr: -0.1 is not allowed; must be a number, at least 0"),
    ],
)
def test_bad_values_name_field_and_rule(field, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TrialConfig(model="simple_cnn", **{field: value})


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="unknown trial config keys: colour"):
        TrialConfig.from_dict({"model": "simple_cnn", "colour": "red"})


def test_threads_fit_the_allotment_with_workers():
    loader = TrialConfig(model="simple_cnn", cpus=8, workers=3)
    assert (loader.data_workers, loader.torch_threads) == (3, 5)
    resident = TrialConfig(model="simple_cnn", cpus=8, workers=3, pipeline="resident")
    assert (resident.data_workers, resident.torch_threads) == (0, 8)
    assert TrialConfig(model="simple_cnn", cpus=1, workers=4).torch_threads == 1


def test_cell_and_trial_ids():
    cfg = TrialConfig(model="resnet50", device="gpu", batch_size=512, repeat=2)
    assert cfg.cell == "resnet50/gpu/bs512/loader/fp32"
    assert cfg.trial_id == "resnet50/gpu/bs512/loader/fp32/r2"


def test_data_dir_default_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHCTL_DATA", str(tmp_path))
    assert default_data_dir() == tmp_path
    monkeypatch.delenv("BENCHCTL_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_data_dir() == tmp_path / "benchctl" / "data"
