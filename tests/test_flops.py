"""trainables.flops against FLOPs worked out by hand from the layer shapes.

.venv/bin/pytest -q tests/test_flops.py
"""

from __future__ import annotations

import pytest

from trainables.flops import forward_flops_per_image, train_flops_per_image
from trainables.models import UnknownModel


def conv_flops(c_in: int, c_out: int, side: int, k: int = 3) -> int:
    """2 FLOPs per multiply-add; a k x k conv with padding keeps the side x side output."""
    return 2 * k * k * c_in * c_out * side * side


def linear_flops(n_in: int, n_out: int) -> int:
    return 2 * n_in * n_out


# simple_cnn: three stages of two 3x3 convs at 32, 16 and 8 pixels (32, 64, 128 channels), then 2048->128->10
SIMPLE_CONVS = [(3, 32, 32), (32, 32, 32), (32, 64, 16), (64, 64, 16), (64, 128, 8), (128, 128, 8)]
SIMPLE_FORWARD = sum(conv_flops(*c) for c in SIMPLE_CONVS) + linear_flops(2048, 128) + linear_flops(128, 10)


def test_simple_cnn_forward_matches_the_layer_shapes():
    assert SIMPLE_FORWARD == pytest.approx(77.8e6, rel=0.01)  # the hand sum itself: ~0.078 GFLOP
    assert forward_flops_per_image("simple_cnn") == SIMPLE_FORWARD


def test_simple_cnn_training_is_three_forwards_minus_the_first_input_gradient():
    # backward = gradient of the input + gradient of the weights, each as costly as the forward; the
    # first conv needs no input gradient (the image does not require one)
    by_hand = 3 * SIMPLE_FORWARD - conv_flops(*SIMPLE_CONVS[0])
    assert train_flops_per_image("simple_cnn") == by_hand
    assert 2.9 < train_flops_per_image("simple_cnn") / SIMPLE_FORWARD <= 3.0


def test_resnet18_at_32_pixels():
    # torchvision's resnet18 is 1.81 G multiply-adds at 224 px; at 32 px every feature map is 7x7 times
    # smaller (112->16 after the stem, 7->1 in the last stage), so ~1.81e9 / 49 = 37M multiply-adds,
    # i.e. ~0.074 GFLOP forward (the 10-class head is negligible)
    forward = forward_flops_per_image("resnet18")
    assert forward == pytest.approx(2 * 1.81e9 / 49, rel=0.01)
    # training: 3x forward minus the input gradient of the 7x7 stride-2 stem (3 -> 64 channels, 16x16 out)
    stem = conv_flops(3, 64, 16, k=7)
    assert train_flops_per_image("resnet18") == 3 * forward - stem
    assert train_flops_per_image("resnet18") / forward == pytest.approx(3.0, rel=0.07)


def test_flops_scale_with_image_area_and_classes():
    # at 224 px every resnet18 feature map has 49x the pixels; only the 512 -> 10 head stays the same
    head = linear_flops(512, 10)
    at_224 = forward_flops_per_image("resnet18", image_size=224)
    assert at_224 - head == 49 * (forward_flops_per_image("resnet18") - head)
    # simple_cnn's head 128 -> num_classes grows by 2 * 128 * 90 forward FLOPs from 10 to 100 classes
    assert forward_flops_per_image("simple_cnn", num_classes=100) - SIMPLE_FORWARD == linear_flops(128, 90)


def test_unknown_model_is_refused():
    with pytest.raises(UnknownModel):
        train_flops_per_image("resnet_nope")
