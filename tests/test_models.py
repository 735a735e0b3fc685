import pytest
import torch

from trainables.models import (
    PAPER_MODELS,
    UnknownModel,
    accepts_native_input,
    available_models,
    build_model,
    check_model_name,
    count_params,
    param_count,
)


def test_simple_cnn_is_about_half_a_million_parameters():
    # 3 stages of 2 conv(3x3, no bias)+BN: conv weights + BN (2 per channel), then 2048->128->10
    convs = [(3, 32), (32, 32), (32, 64), (64, 64), (64, 128), (128, 128)]
    by_hand = sum(9 * i * o + 2 * o for i, o in convs) + (2048 * 128 + 128) + (128 * 10 + 10)
    assert param_count("simple_cnn") == by_hand == count_params(build_model("simple_cnn"))
    assert 400_000 < by_hand < 700_000


def test_resnet18_with_10_classes():
    # torchvision's documented 11,689,512 for 1000 classes, minus 990 outputs of the 512-wide head
    assert param_count("resnet18") == 11_689_512 - 990 * 512 - 990


def test_meta_count_matches_a_real_build():
    assert param_count("resnet50") == count_params(build_model("resnet50"))


def test_models_run_on_native_32px_input():
    model = build_model("simple_cnn").eval()
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    assert accepts_native_input("resnet18")
    assert not accepts_native_input("vit_b_16")  # needs 224 px


def test_registry_lists_paper_models_first():
    names = available_models()
    assert names[:3] == PAPER_MODELS
    assert "mobilenet_v2" in names and "fasterrcnn_resnet50_fpn" not in names


def test_unknown_model_suggests_close_names():
    with pytest.raises(UnknownModel, match="did you mean resnet18"):
        check_model_name("resnet81")
