"""orchestrator.flops_table against trainables.flops: the report's static FLOP counts are the counter's.

.venv/bin/pytest -q tests/test_flops_table.py
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from orchestrator.flops_table import TRAIN_FLOPS_PER_IMAGE, train_flops
from trainables.config import PAPER_MODELS


@pytest.mark.parametrize("model", sorted(TRAIN_FLOPS_PER_IMAGE))
def test_table_entry_is_what_trainables_flops_counts(model):
    from trainables.flops import train_flops_per_image  # torch: the test may, the report may not

    assert TRAIN_FLOPS_PER_IMAGE[model] == train_flops_per_image(model)


def test_the_paper_models_are_tabulated():
    assert set(PAPER_MODELS) <= set(TRAIN_FLOPS_PER_IMAGE)


def test_a_model_outside_the_table_is_counted():
    from trainables.flops import train_flops_per_image

    assert "mnasnet0_5" not in TRAIN_FLOPS_PER_IMAGE
    assert train_flops("mnasnet0_5") == train_flops_per_image("mnasnet0_5")


def test_the_report_imports_no_torch_torchvision_or_ray():
    """Building the report's modules (and the CLI's report command) must not import the training stack:
    importing torch alone cost ~3 s and ~700 MB of a 100k-row report."""
    code = (
        "import sys; import orchestrator.report, orchestrator.commands.report; "
        "print(sorted(m for m in ('torch', 'torchvision', 'ray') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
