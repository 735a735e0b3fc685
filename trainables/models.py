"""Models by name: `simple_cnn` (ours), `resnet18`, `resnet50` and any torchvision classifier.

    python -c "from trainables.models import build_model; print(build_model('resnet18'))"
    benchctl models            # the registry with exact parameter counts

Every model gets NUM_CLASSES outputs and is fed native 32x32 images: torchvision's architectures
are used unchanged (no up-sampling, no stem surgery), as in the paper.
"""

from __future__ import annotations

import difflib
import warnings
from functools import cache

import torch
import torchvision
from torch import nn

from trainables.config import IMAGE_SIZE, NUM_CLASSES, PAPER_MODELS  # PAPER_MODELS: listed first by `models`


class SimpleCNN(nn.Module):
    """A plain VGG-style CNN of 0.55M parameters: the paper's "small model".

    Three stages of two 3x3 conv+BN+ReLU layers (32, 64, 128 channels), each stage followed by 2x2
    max-pooling (32 -> 16 -> 8 -> 4 pixels), then a 2048 -> 128 -> 10 classifier with dropout.
    """

    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        c_in = 3
        for c_out in (32, 64, 128):
            for _ in range(2):
                layers += [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]
                c_in = c_out
            layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(128 * 4 * 4, 128),
            nn.ReLU(),
            nn.Dropout(0.25),
            nn.Linear(128, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


@cache
def torchvision_classifiers() -> tuple[str, ...]:
    """Names of torchvision's classification models (not detection, video, ...)."""
    return tuple(torchvision.models.list_models(module=torchvision.models))


def available_models() -> tuple[str, ...]:
    rest = sorted(n for n in torchvision_classifiers() if n not in PAPER_MODELS)
    return PAPER_MODELS + tuple(rest)


class UnknownModel(ValueError):
    pass


def check_model_name(name: str) -> None:
    """Raise UnknownModel naming the closest registered names."""
    if name in PAPER_MODELS or name in torchvision_classifiers():
        return
    close = difflib.get_close_matches(name, available_models(), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `benchctl models --all` lists them"
    raise UnknownModel(f"unknown model {name!r}{hint}")


def build_model(name: str, num_classes: int = NUM_CLASSES) -> nn.Module:
    """A freshly initialised model (no pretrained weights: nothing is downloaded)."""
    check_model_name(name)
    if name == "simple_cnn":
        return SimpleCNN(num_classes)
    with warnings.catch_warnings():
        # googlenet/inception warn about a future change of their default init; not ours to act on
        warnings.simplefilter("ignore", FutureWarning)
        return torchvision.models.get_model(name, weights=None, num_classes=num_classes)


def _inspection_copy(name: str) -> tuple[nn.Module, torch.device]:
    """The model on the meta device (no memory, no init cost); a few builders compute on their
    arguments' data while building (regnet), so those fall back to a CPU build."""
    try:
        with torch.device("meta"):
            return build_model(name), torch.device("meta")
    except NotImplementedError:
        return build_model(name), torch.device("cpu")


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@cache
def param_count(name: str) -> int:
    """Exact parameter count of the model as benchctl trains it (NUM_CLASSES outputs)."""
    return count_params(_inspection_copy(name)[0])


@cache
def accepts_native_input(name: str) -> bool:
    """Whether the model runs on native 3x32x32 input (some need 75 px or 224 px)."""
    model, device = _inspection_copy(name)
    try:
        with torch.no_grad():
            model.eval()(torch.zeros(2, 3, IMAGE_SIZE, IMAGE_SIZE, device=device))
    except (RuntimeError, ValueError, AssertionError, NotImplementedError):
        return False
    return True
