"""Data sets and input pipelines.

    from trainables.data import load_arrays, make_source
    arrays = load_arrays(cfg)                       # uint8 N x 3 x 32 x 32 + int64 labels
    for x, y in make_source(arrays, cfg, device, train=True): ...   # batches already on `device`

Data sets: `synthetic` (CIFAR-shaped, learnable, deterministic by seed), `cifar10` (torchvision,
downloaded into the data dir when online), `folder:PATH` (torchvision ImageFolder with train/ and
test/ subfolders, resized once to 32x32). A node builds each data set once: later trials read it
from its data cache (trainables/datacache.py).

Pipelines: `loader` is the paper's: per-sample random crop + flip + normalize in a torch
DataLoader with worker processes, batches copied to the device (pinned, non-blocking on CUDA).
`resident` keeps the whole uint8 data set on the trial's device and does the same augmentation
there, batched, so the host is out of the loop.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler
from torchvision.transforms import v2

from trainables.config import CROP_PADDING, EVAL_BATCH_SIZE, IMAGE_SIZE, NUM_CLASSES, Pipeline, TrialConfig
from trainables.datacache import Arrays, cached_arrays, fingerprint
from trainables.datacheck import DatasetUnavailable, dataset_sizes  # noqa: F401 (the error: re-exported)

# CIFAR-10's per-channel statistics; used for every data set so the pipelines cost the same.
MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


# ---- data sets ------------------------------------------------------------------------------


def synthetic_arrays(train_size: int, test_size: int, seed: int) -> Arrays:
    """A learnable CIFAR-shaped set, deterministic by seed. Each class has its own smooth colour
    pattern; each image is its class pattern plus a smooth random nuisance pattern of its own plus
    per-pixel noise. A model must learn the class patterns to beat 10%, and it does not saturate
    at once (simple_cnn: about 70% after 3 epochs of 4096 images)."""
    g = torch.Generator().manual_seed(seed)

    # Bicubic up-sampling of a 4x4 field is linear: one 16 x (32*32) matrix applied by matmul,
    # which is much faster than interpolating every image.
    basis = torch.eye(16).view(16, 1, 4, 4)
    upsample = F.interpolate(basis, size=(IMAGE_SIZE, IMAGE_SIZE), mode="bicubic", align_corners=False)
    upsample = upsample.view(16, IMAGE_SIZE * IMAGE_SIZE)

    def smooth(n: int) -> torch.Tensor:  # low-frequency colour fields
        coarse = torch.randn(n * 3, 16, generator=g)
        return (coarse @ upsample).view(n, 3, IMAGE_SIZE, IMAGE_SIZE)

    patterns = smooth(NUM_CLASSES)

    def draw(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.randint(0, NUM_CLASSES, (n,), generator=g)
        x = torch.empty(n, 3, IMAGE_SIZE, IMAGE_SIZE, dtype=torch.uint8)
        for start in range(0, n, 4096):  # chunks keep the float intermediate small
            yc = y[start : start + 4096]
            noise = torch.randn(len(yc), 3, IMAGE_SIZE, IMAGE_SIZE, generator=g)
            img = 127.5 + 30.0 * patterns[yc] + 40.0 * smooth(len(yc)) + 50.0 * noise  # grey levels
            x[start : start + 4096] = img.clamp_(0, 255).to(torch.uint8)
        return x, y

    train_x, train_y = draw(train_size)
    test_x, test_y = draw(test_size)
    return Arrays(train_x, train_y, test_x, test_y, NUM_CLASSES)


def cifar10_arrays(data_dir: Path) -> Arrays:
    import torchvision

    def split(train: bool):
        try:
            return torchvision.datasets.CIFAR10(str(data_dir), train=train, download=False)
        except RuntimeError:  # not there yet: download once (needs the network)
            try:
                return torchvision.datasets.CIFAR10(str(data_dir), train=train, download=True)
            except Exception as exc:  # URLError, OSError, checksum failures, ...
                raise DatasetUnavailable(
                    f"cifar10 is not in {data_dir} and could not be downloaded ({type(exc).__name__}); "
                    "put a copy there or pass --data-dir, or use --dataset synthetic"
                ) from None

    out = []
    for ds in (split(True), split(False)):
        out += [torch.from_numpy(ds.data).permute(0, 3, 1, 2).contiguous(), torch.tensor(ds.targets)]
    return Arrays(*out, num_classes=NUM_CLASSES)


def folder_arrays(root: Path) -> Arrays:
    from torchvision.datasets import ImageFolder

    to_tensor = v2.Compose([v2.ToImage(), v2.Resize((IMAGE_SIZE, IMAGE_SIZE), antialias=True)])
    train, test = (ImageFolder(str(root / s), transform=to_tensor) for s in ("train", "test"))
    if train.classes != test.classes:
        raise DatasetUnavailable(f"dataset folder {root}: train/ and test/ hold different class folders")

    def stack(ds) -> tuple[torch.Tensor, torch.Tensor]:
        xs, ys = zip(*((img[:3].expand(3, -1, -1), label) for img, label in ds), strict=True)
        return torch.stack(xs).contiguous(), torch.tensor(ys)

    return Arrays(*stack(train), *stack(test), num_classes=len(train.classes))


def check_available(cfg: TrialConfig) -> None:
    """Fail fast (DatasetUnavailable) when the trial's data set cannot be loaded here. cifar10 is
    downloaded into the data dir if missing; a folder is listed as ImageFolder lists it, none decoded
    (trainables/datacheck.py, which `sweep --dry-run` runs too)."""
    if cfg.dataset == "cifar10":
        cifar10_arrays(cfg.resolved_data_dir())
    else:
        dataset_sizes(cfg)


# Bump when synthetic_arrays draws other images, or folder_arrays decodes or resizes differently:
# each is part of its data sets' key in the data cache, so entries built by the old code go unused.
SYNTHETIC_VERSION = 1
DECODE_VERSION = 1


def _folder_root(cfg: TrialConfig) -> Path:
    return Path(cfg.dataset.removeprefix("folder:")).expanduser()


def dataset_identity(cfg: TrialConfig) -> dict:
    """What `cfg`'s arrays depend on: their key in the data cache (trainables/datacache.py). For
    files, their listing (paths, sizes, mtimes), so that a changed set is decoded again."""
    if cfg.dataset == "synthetic":
        return {
            "dataset": "synthetic",
            "generator": SYNTHETIC_VERSION,
            "torch": torch.__version__,  # its random streams and bicubic kernel make the images
            "train_size": cfg.train_size,
            "test_size": cfg.test_size,
            "seed": cfg.seed,
        }
    if cfg.dataset == "cifar10":
        from torchvision.datasets import CIFAR10

        files = cfg.resolved_data_dir().resolve() / CIFAR10.base_folder
        count, digest = fingerprint(files)
        return {"dataset": "cifar10", "path": str(files), "files": count, "fingerprint": digest}
    import PIL
    import torchvision

    root = _folder_root(cfg).resolve()
    count, digest = fingerprint(root / "train", root / "test")
    return {
        "dataset": "folder",
        "path": str(root),
        "files": count,
        "fingerprint": digest,
        "decoder": DECODE_VERSION,
        "torchvision": torchvision.__version__,  # the decoder and the resize kernel
        "pillow": PIL.__version__,
    }


def building_text(cfg: TrialConfig) -> str:
    """What building `cfg`'s data set does, as a trial's phase says it (not read from the cache)."""
    if cfg.dataset == "synthetic":
        return f"generating {cfg.train_size + cfg.test_size:,} synthetic images"
    if cfg.dataset == "cifar10":
        return f"reading CIFAR-10's files from {cfg.resolved_data_dir()}"
    return f"decoding the images of {_folder_root(cfg)}"


def load_arrays(
    cfg: TrialConfig, info: dict | None = None, on_phase: Callable[[str], None] | None = None
) -> Arrays:
    """The trial's data set, read from this node's data cache when a trial built it before. With
    `info`, notes there `data_cache` (hit, miss or off: datacache.CacheUse) and `data_s_load` (seconds,
    listing the files and any download included). `on_phase(text)` hears what it does, once it is
    known: reading from the cache, or building (building_text)."""
    say = on_phase or (lambda text: None)
    started = time.perf_counter()
    if cfg.dataset == "synthetic":
        build = functools.partial(synthetic_arrays, cfg.train_size, cfg.test_size, cfg.seed)
    elif cfg.dataset == "cifar10":
        from torchvision.datasets import CIFAR10

        if not (cfg.resolved_data_dir() / CIFAR10.base_folder).is_dir():
            say(f"downloading CIFAR-10 into {cfg.resolved_data_dir()}")
            check_available(cfg)  # download first: the key fingerprints the files the arrays come from
        build = functools.partial(cifar10_arrays, cfg.resolved_data_dir())
    else:
        say(f"listing the images of {_folder_root(cfg)}")
        check_available(cfg)  # the folder's layout, with a message saying what is missing
        build = functools.partial(folder_arrays, _folder_root(cfg))
    arrays, use = cached_arrays(dataset_identity(cfg), build, on_phase=say, building=building_text(cfg))
    if info is not None:
        info["data_cache"] = use.value
        info["data_s_load"] = time.perf_counter() - started
    return arrays


# ---- pipelines ------------------------------------------------------------------------------


class _ArrayDataset(Dataset):
    """Per-sample access to uint8 arrays with a per-sample transform (runs in DataLoader workers)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, transform) -> None:
        self.x, self.y, self.transform = x, y, transform

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        return self.transform(self.x[i]), self.y[i]


def _per_sample_transform(train: bool):
    steps = [v2.RandomCrop(IMAGE_SIZE, padding=CROP_PADDING), v2.RandomHorizontalFlip()] if train else []
    return v2.Compose([*steps, v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])


class LoaderSource:
    """The paper's pipeline: a DataLoader doing per-sample transforms, then a copy to the device."""

    def __init__(self, x, y, cfg: TrialConfig, device: torch.device, train: bool) -> None:
        batch = cfg.batch_size if train else EVAL_BATCH_SIZE
        self.device = device
        dataset = _ArrayDataset(x, y, _per_sample_transform(train))
        # Two generators: the sampler's is the data order, drawn once per epoch, so its state after an
        # epoch is all a checkpoint needs to repeat the next one; the loader's seeds the worker
        # processes once, when they start (persistent workers), and would otherwise shift the order.
        self.order = torch.Generator().manual_seed(cfg.run_seed)
        self.loader = DataLoader(
            dataset,
            batch_size=batch,
            sampler=RandomSampler(dataset, generator=self.order) if train else None,
            num_workers=cfg.data_workers,
            pin_memory=device.type == "cuda",
            persistent_workers=cfg.data_workers > 0,  # worker start-up belongs to warm-up only
            drop_last=train and cfg.drop_last,
            generator=torch.Generator().manual_seed(cfg.run_seed + 1),
        )

    def __len__(self) -> int:
        return len(self.loader)

    def rng_state(self) -> torch.Tensor:
        return self.order.get_state()

    def set_rng_state(self, state: torch.Tensor) -> None:
        self.order.set_state(state)

    def __iter__(self):
        for xb, yb in self.loader:
            yield xb.to(self.device, non_blocking=True), yb.to(self.device, non_blocking=True)


class ResidentSource:
    """The whole data set on the device; shuffling, crop, flip and normalize done there, batched."""

    def __init__(self, x, y, cfg: TrialConfig, device: torch.device, train: bool) -> None:
        self.x, self.y = x.to(device), y.to(device)
        self.batch = cfg.batch_size if train else EVAL_BATCH_SIZE
        self.train = train
        self.drop_last = train and cfg.drop_last
        self.mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
        self.gen = torch.Generator(device=device).manual_seed(cfg.run_seed)

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.y) // self.batch
        return -(-len(self.y) // self.batch)

    def rng_state(self) -> torch.Tensor:
        return self.gen.get_state()

    def set_rng_state(self, state: torch.Tensor) -> None:
        self.gen.set_state(state)

    def _augment(self, x: torch.Tensor) -> torch.Tensor:
        """Random 32x32 crop of the zero-padded image and a random horizontal flip, per sample."""
        n, c, h, w = x.shape
        p, dev = CROP_PADDING, x.device
        xp = F.pad(x, (p, p, p, p))
        dy = torch.randint(0, 2 * p + 1, (n,), device=dev, generator=self.gen)
        dx = torch.randint(0, 2 * p + 1, (n,), device=dev, generator=self.gen)
        rows = (torch.arange(h, device=dev)[None, :] + dy[:, None])[:, None, :, None]
        cols = (torch.arange(w, device=dev)[None, :] + dx[:, None])[:, None, None, :]
        out = xp[
            torch.arange(n, device=dev)[:, None, None, None],
            torch.arange(c, device=dev)[None, :, None, None],
            rows,
            cols,
        ]
        flip = torch.rand(n, device=dev, generator=self.gen) < 0.5
        return torch.where(flip[:, None, None, None], out.flip(3), out)

    def __iter__(self):
        n = len(self.y)
        order = torch.randperm(n, device=self.x.device, generator=self.gen) if self.train else None
        for start in range(0, len(self) * self.batch, self.batch):
            idx = order[start : start + self.batch] if self.train else slice(start, start + self.batch)
            xb = self.x[idx].float().div_(255)
            if self.train:
                xb = self._augment(xb)
            yield (xb - self.mean) / self.std, self.y[idx]


def make_source(arrays: Arrays, cfg: TrialConfig, device: torch.device, train: bool):
    x, y = (arrays.train_x, arrays.train_y) if train else (arrays.test_x, arrays.test_y)
    cls = LoaderSource if cfg.pipeline is Pipeline.loader else ResidentSource
    return cls(x, y, cfg, device, train)
