import pytest
import torch
from PIL import Image

from trainables.config import TrialConfig
from trainables.data import (
    MEAN,
    STD,
    DatasetUnavailable,
    ResidentSource,
    check_available,
    cifar10_arrays,
    load_arrays,
    make_source,
    synthetic_arrays,
)

CPU = torch.device("cpu")


def test_synthetic_is_cifar_shaped_and_deterministic():
    a, b = synthetic_arrays(64, 32, seed=3), synthetic_arrays(64, 32, seed=3)
    assert a.train_x.shape == (64, 3, 32, 32) and a.train_x.dtype == torch.uint8
    assert a.test_x.shape == (32, 3, 32, 32) and a.train_y.dtype == torch.int64
    assert torch.equal(a.train_x, b.train_x) and torch.equal(a.test_y, b.test_y)
    assert not torch.equal(a.train_x, synthetic_arrays(64, 32, seed=4).train_x)
    assert set(a.train_y.tolist()) <= set(range(10))


def test_synthetic_classes_differ_in_their_mean_image():
    # the learnable signal: per-class mean images are far apart compared with same-class halves
    arr = synthetic_arrays(4000, 10, seed=0)
    x, y = arr.train_x.float(), arr.train_y
    means = torch.stack([x[y == c].mean(0) for c in range(10)])
    between = torch.cdist(means.flatten(1), means.flatten(1)).sum() / 90
    c0 = x[y == 0]
    within = (c0[::2].mean(0) - c0[1::2].mean(0)).norm()
    assert between > 3 * within


@pytest.mark.parametrize("pipeline", ["loader", "resident"])
def test_sources_yield_normalized_batches_of_the_right_size(pipeline):
    cfg = TrialConfig(
        model="simple_cnn", pipeline=pipeline, batch_size=16, workers=0, train_size=40, test_size=8
    )
    arrays = load_arrays(cfg)
    train = make_source(arrays, cfg, CPU, train=True)
    batches = list(train)
    assert len(train) == len(batches) == 3  # 16 + 16 + 8
    assert [len(y) for _, y in batches] == [16, 16, 8]
    x, _ = batches[0]
    assert x.dtype == torch.float32 and x.shape[1:] == (3, 32, 32)
    lowest = min((0 - m) / s for m, s in zip(MEAN, STD, strict=True))
    assert x.min() >= lowest - 1e-5  # padding and pixels normalized like torchvision does


def test_resident_augment_is_crop_and_flip_of_the_padded_image():
    cfg = TrialConfig(model="simple_cnn", pipeline="resident", train_size=8, test_size=8)
    src = ResidentSource(torch.zeros(8, 3, 32, 32, dtype=torch.uint8), torch.zeros(8), cfg, CPU, train=True)
    x = torch.arange(2 * 3 * 32 * 32, dtype=torch.float32).view(2, 3, 32, 32)
    out = src._augment(x)
    assert out.shape == x.shape
    for i in range(2):  # every output must be one of the 81 shifts (flipped or not) of its input
        padded = torch.nn.functional.pad(x[i], (4, 4, 4, 4))
        candidates = [padded[:, dy : dy + 32, dx : dx + 32] for dy in range(9) for dx in range(9)]
        candidates += [c.flip(2) for c in candidates]
        assert any(torch.equal(out[i], c) for c in candidates)


def _write_folder(root, classes=("cat", "dog"), per_class=3):
    for split in ("train", "test"):
        for k, name in enumerate(classes):
            (root / split / name).mkdir(parents=True)
            for i in range(per_class):
                Image.new("RGB", (40, 36), color=(40 * k, 10 * i, 200)).save(root / split / name / f"{i}.png")


def test_folder_dataset_is_resized_to_32px(tmp_path):
    _write_folder(tmp_path)
    arrays = load_arrays(TrialConfig(model="simple_cnn", dataset=f"folder:{tmp_path}"))
    assert arrays.train_x.shape == (6, 3, 32, 32) and arrays.num_classes == 2
    assert sorted(arrays.test_y.tolist()) == [0, 0, 0, 1, 1, 1]


def test_folder_without_test_split_is_refused(tmp_path):
    (tmp_path / "train" / "a").mkdir(parents=True)
    with pytest.raises(DatasetUnavailable, match="has no test/ subfolder"):
        check_available(TrialConfig(model="simple_cnn", dataset=f"folder:{tmp_path}"))


def test_cifar10_missing_offline_names_the_way_out(tmp_path):
    # This machine (and CI) cannot reach the download host, so the real download path fails here.
    with pytest.raises(DatasetUnavailable, match=r"--data-dir.*--dataset synthetic"):
        cifar10_arrays(tmp_path / "cifar")
