"""FLOPs of one training image, counted by PyTorch's FlopCounterMode on the meta device.

    from trainables.flops import train_flops_per_image
    print(train_flops_per_image("resnet18") / 1e9)   # GFLOP per training image at 32x32

What is counted: FlopCounterMode counts the matrix products only (convolutions, linear layers, matmuls;
one multiply-add = 2 FLOPs), forward and backward. Batch norm, activations, pooling, the loss and the
optimizer step are not counted; they are a few percent of a CNN's arithmetic. The backward pass of a
layer costs about twice its forward (the gradient of the input and of the weights), except that the
first layer needs no input gradient, so a training image costs slightly less than 3x its forward.

The model is built and run on the meta device (shapes only: no memory, no arithmetic, milliseconds
even for large models), with a batch of BATCH images in training mode (batch norm refuses one image at
1x1 resolution) and the counts divided by BATCH. A model whose builder computes on real data (regnet)
is built and run on the CPU instead, which gives the same counts.
"""

from __future__ import annotations

import functools

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from trainables.config import IMAGE_SIZE, NUM_CLASSES
from trainables.models import build_model

BATCH = 2  # images per counted step; FLOPs are linear in the batch, so any batch >= 2 gives the same


def _build(model_name: str, num_classes: int) -> tuple[nn.Module, torch.device]:
    """The model on the meta device, or on the CPU when its builder needs real data."""
    try:
        with torch.device("meta"):
            return build_model(model_name, num_classes), torch.device("meta")
    except NotImplementedError:
        return build_model(model_name, num_classes), torch.device("cpu")


@functools.cache
def _count(model_name: str, num_classes: int, image_size: int) -> tuple[float, float]:
    """(forward, forward + backward) FLOPs per image; see the module docstring."""
    model, device = _build(model_name, num_classes)
    model.train()
    x = torch.zeros(BATCH, 3, image_size, image_size, device=device)
    y = torch.zeros(BATCH, dtype=torch.long, device=device)
    forward = FlopCounterMode(display=False)
    with forward:
        model(x)
    train = FlopCounterMode(display=False)
    with train:
        nn.functional.cross_entropy(model(x), y).backward()
    return forward.get_total_flops() / BATCH, train.get_total_flops() / BATCH


def forward_flops_per_image(
    model_name: str, num_classes: int = NUM_CLASSES, image_size: int = IMAGE_SIZE
) -> float:
    """FLOPs of the forward pass for one image (matrix products only, 2 FLOPs per multiply-add)."""
    return _count(model_name, num_classes, image_size)[0]


def train_flops_per_image(
    model_name: str, num_classes: int = NUM_CLASSES, image_size: int = IMAGE_SIZE
) -> float:
    """FLOPs to train on one image: forward + backward, matrix products only (2 FLOPs per multiply-add),
    about 3x forward_flops_per_image. Cached per (model_name, num_classes, image_size).

    Raises UnknownModel for an unknown name, and the model's own error (RuntimeError, ValueError, ...)
    when it cannot run on image_size x image_size input."""
    return _count(model_name, num_classes, image_size)[1]
