"""analysis.flops_table against trainables.flops: the report's static FLOP counts are the counter's.

.venv/bin/pytest -q tests/test_flops_table.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.analysis.flops_table import TRAIN_FLOPS_PER_IMAGE, train_flops
from trainables.config import PAPER_MODELS

ROOT = Path(__file__).resolve().parents[1]


# counting builds and runs each torchvision model (~0.5-2 s each): the paper's models in the fast tier
@pytest.mark.parametrize(
    "model",
    [
        pytest.param(m, marks=() if m in PAPER_MODELS else pytest.mark.slow)
        for m in sorted(TRAIN_FLOPS_PER_IMAGE)
    ],
)
def test_table_entry_is_what_trainables_flops_counts(model):
    from trainables.flops import train_flops_per_image  # torch: the test may, the report may not

    assert TRAIN_FLOPS_PER_IMAGE[model] == train_flops_per_image(model)


def test_the_paper_models_are_tabulated():
    assert set(PAPER_MODELS) <= set(TRAIN_FLOPS_PER_IMAGE)


def test_a_model_outside_the_table_is_counted():
    from trainables.flops import train_flops_per_image

    assert "mnasnet0_5" not in TRAIN_FLOPS_PER_IMAGE
    assert train_flops("mnasnet0_5") == train_flops_per_image("mnasnet0_5")


def test_the_report_imports_no_torch_torchvision_or_ray(tmp_path):
    """Building a report (of committed results: two sweeps, so their conditions are compared through the
    default spec) must not import the training stack: torch alone cost ~3 s and ~700 MB of a 100k-row
    report."""
    results = [str(ROOT / "reports/h200/results" / name) for name in ("ref-gpu-small", "ref-cpu-128")]
    code = (
        "import sys; from pathlib import Path; import orchestrator.commands.report; "
        "from orchestrator.report import build_report; "
        f"build_report([Path(p) for p in {results!r}], Path({str(tmp_path)!r}), pool=True); "
        "print(sorted(m for m in ('torch', 'torchvision', 'ray') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)  # fmt: skip
    assert out.stdout.strip() == "[]", out.stdout


def test_the_paper_models_parameter_counts_are_what_torch_counts():
    from orchestrator.analysis.flops_table import PAPER_PARAMS
    from trainables.models import accepts_native_input, param_count  # torch: the test may

    assert tuple(PAPER_PARAMS) == PAPER_MODELS
    for model, count in PAPER_PARAMS.items():
        assert param_count(model) == count, model
        assert accepts_native_input(model), model


def test_benchctl_models_imports_no_torch():
    """`benchctl models` lists the paper's models from the table: importing torch cost it 6 s on 2 cores."""
    code = (
        "import sys; from typer.testing import CliRunner; from orchestrator.cli import app; "
        "r = CliRunner().invoke(app, ['models']); assert r.exit_code == 0, r.output; print(r.output); "
        "print(sorted(m for m in ('torch', 'torchvision', 'ray') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert "resnet50                   23,528,522  yes" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
