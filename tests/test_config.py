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
    one = TrialConfig(model="simple_cnn", cpus=1, workers=4)
    assert (one.torch_threads, one.data_workers) == (1, 0)  # a 1-core CPU cell loads in its own process


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 16])
@pytest.mark.parametrize("workers", [0, 1, 2, 4, 8])
def test_a_cpu_cell_never_runs_more_threads_and_workers_than_cores(cores, workers):
    """Issue 34 item 4: on 2 cores a CPU cell ran 1 thread + 2 workers, 3 busy processes on 2 cores."""
    for pipeline in ("loader", "resident"):
        cfg = TrialConfig(model="simple_cnn", device="cpu", cpus=cores, workers=workers, pipeline=pipeline)
        assert cfg.torch_threads >= 1 and cfg.torch_threads + cfg.data_workers <= cores
        assert cfg.torch_threads + cfg.data_workers == cores  # and none is left idle
        if pipeline == "loader":  # the workers asked for, as far as one core stays for the threads
            assert cfg.data_workers == min(workers, cores - 1)


def test_small_cpu_cells_take_the_split_measured_fastest():
    # reports/cpu-split: on 2 cores, simple_cnn loader ran fastest as 1 thread + 1 worker
    two = TrialConfig(model="simple_cnn", device="cpu", cpus=2, workers=2)
    assert (two.torch_threads, two.data_workers) == (1, 1)
    sixteen = TrialConfig(model="simple_cnn", device="cpu", cpus=16, workers=2)
    assert (sixteen.torch_threads, sixteen.data_workers) == (14, 2)  # large cells: as before


def test_a_gpu_cell_keeps_its_workers():
    gpu = TrialConfig(model="simple_cnn", device="gpu", cpus=3, workers=2)
    assert (gpu.torch_threads, gpu.data_workers) == (1, 2)


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
