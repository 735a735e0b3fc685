"""Training FLOPs per 32x32 image of the models benchctl reports on, and the paper models' exact parameter
counts, as data: the report and `benchctl models` import no torch.

    from orchestrator.analysis.flops_table import train_flops
    train_flops("resnet18") / 1e9    # 0.217 GFLOP per training image

Each number is trainables.flops.train_flops_per_image(model) at the defaults (NUM_CLASSES = 10 classes,
IMAGE_SIZE = 32): forward + backward matrix products, 2 FLOPs per multiply-add. Counting them there
means importing torch and torchvision and tracing the model, ~3 s and ~700 MB of a report's peak memory,
for numbers that only change when a model's architecture does. tests/test_flops_table.py recounts every
entry with trainables.flops, so the table cannot drift from the counter. A model not in the table (any
other torchvision classifier) is still counted by trainables.flops, on demand: only such a report pays
for torch.
"""

from __future__ import annotations

TRAIN_FLOPS_PER_IMAGE = {  # model -> FLOPs of one training image (trainables.flops.train_flops_per_image)
    "simple_cnn": 231_611_904,
    "resnet18": 217_282_560,
    "resnet50": 495_771_648,
    "resnet34": 443_774_976,
    "resnet101": 950_329_344,
    "resnet152": 1_404_887_040,
    "wide_resnet50_2": 1_390_731_264,
    "resnext50_32x4d": 805_625_856,
    "mobilenet_v2": 250_526_208,
    "mobilenet_v3_small": 85_746_432,
    "mobilenet_v3_large": 256_352_256,
    "efficientnet_b0": 660_460_416,
    "densenet121": 342_159_360,
    "convnext_tiny": 1_581_096_960,
    "regnet_y_400mf": 101_968_992,
    "shufflenet_v2_x1_0": 34_783_200,
    "squeezenet1_0": 50_120_832,
    "vgg11": 1_630_519_296,
    "vgg16": 2_593_112_064,
}

# The paper's three models: exact parameters as benchctl trains them (NUM_CLASSES = 10 outputs), each
# trainables.models.param_count(model); all three run on native 32x32 input. `benchctl models` prints these
# without importing torch (6 s on a 2-core host); tests/test_flops_table.py recounts them with torch.
PAPER_PARAMS = {"simple_cnn": 551_018, "resnet18": 11_181_642, "resnet50": 23_528_522}


def train_flops(model: str) -> float:
    """FLOPs to train on one 32x32 image of `model`: the table's number, else trainables.flops' count
    (which imports torch; raises as train_flops_per_image does for an unknown or untraceable model)."""
    if model in TRAIN_FLOPS_PER_IMAGE:
        return float(TRAIN_FLOPS_PER_IMAGE[model])
    from trainables.flops import train_flops_per_image  # torch: only for a model outside the table

    return train_flops_per_image(model)
