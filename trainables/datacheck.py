"""Is a trial's data set there? Answered without torch, so `sweep --dry-run` checks what a sweep checks.

    from trainables.datacheck import dataset_sizes, DatasetUnavailable
    dataset_sizes(cfg)            # (train images, test images); DatasetUnavailable says what is missing

A `folder:PATH` is listed the way torchvision's ImageFolder lists it (class folders sorted, files found
recursively, following links, kept by extension), none decoded: a missing folder, a missing train/ or
test/, a class folder without images, or train/ and test/ with different classes are refused here, before
Ray starts. cifar10 is looked for in the data dir (`cifar10_present`); fetching it is
trainables.data.check_available's job (a sweep downloads it, a dry run only says it would).
"""

from __future__ import annotations

import os
from pathlib import Path

from trainables.config import TrialConfig

# torchvision.datasets.folder.IMG_EXTENSIONS: the files ImageFolder loads
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
CIFAR10_SIZES = (50_000, 10_000)  # CIFAR-10's training and test images
_CIFAR10_FILES = (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch")


class DatasetUnavailable(RuntimeError):
    """The data set cannot be loaded here; the message says what to do."""


_LAYOUT = "it needs train/ and test/, each holding one folder of images per class"


def _split(root: Path, sub: str) -> dict[str, int]:
    """{class: image files} of root/sub as ImageFolder finds them; DatasetUnavailable where it would fail."""
    where = root / sub
    classes = sorted(e.name for e in os.scandir(where) if e.is_dir())
    if not classes:
        raise DatasetUnavailable(f"dataset folder {where} holds no class folders; {_LAYOUT}")
    counts = {}
    for name in classes:
        counts[name] = sum(
            f.lower().endswith(IMG_EXTENSIONS)
            for _, _, files in os.walk(where / name, followlinks=True)
            for f in files
        )
    empty = [c for c, n in counts.items() if not n]
    if empty:
        raise DatasetUnavailable(
            f"dataset folder {where}: no image files ({', '.join(IMG_EXTENSIONS)}) in class folder"
            f"{'s' * (len(empty) > 1)} {', '.join(empty[:5])}{' ...' * (len(empty) > 5)}"
        )
    return counts


def folder_sizes(root: Path) -> tuple[int, int]:
    """(train images, test images) of an ImageFolder pair root/train, root/test; DatasetUnavailable if
    the folder is missing or not laid out as benchctl reads it."""
    if not root.is_dir():
        raise DatasetUnavailable(
            f"dataset folder {root} does not exist; pass a folder holding train/ and test/, each with "
            "one folder of images per class"
        )
    for sub in ("train", "test"):
        if not (root / sub).is_dir():
            raise DatasetUnavailable(f"dataset folder {root} has no {sub}/ subfolder; {_LAYOUT}")
    train, test = _split(root, "train"), _split(root, "test")
    if list(train) != list(test):
        raise DatasetUnavailable(f"dataset folder {root}: train/ and test/ hold different class folders")
    return sum(train.values()), sum(test.values())


def cifar10_present(data_dir: Path) -> bool:
    """Whether torchvision's CIFAR-10 files are in `data_dir` (their checksums are checked on loading)."""
    base = Path(data_dir) / "cifar-10-batches-py"
    return all((base / name).is_file() for name in _CIFAR10_FILES)


def dataset_sizes(cfg: TrialConfig) -> tuple[int, int]:
    """(train images, test images) the trial's data set holds; DatasetUnavailable for a folder that is
    missing or malformed. cifar10 is CIFAR-10's sizes whether or not it is downloaded yet."""
    if cfg.dataset == "synthetic":
        return cfg.train_size, cfg.test_size
    if cfg.dataset == "cifar10":
        return CIFAR10_SIZES
    return folder_sizes(Path(cfg.dataset.removeprefix("folder:")).expanduser())
