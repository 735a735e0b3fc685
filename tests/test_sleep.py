"""trainables.sleep: the `sleep:S` workload bench/scale_lab.py runs through a real sweep."""

import subprocess
import sys
from pathlib import Path

from orchestrator.plan.spec import SweepSpec
from orchestrator.results.files import to_table
from trainables.config import TrialConfig
from trainables.launch.runner import trial_runner
from trainables.sleep import MARKS_ENV

ROOT = Path(__file__).resolve().parents[1]


def test_a_sleep_trial_reports_every_epoch_and_imports_no_torch(tmp_path, monkeypatch):
    marks = tmp_path / "marks"
    monkeypatch.setenv(MARKS_ENV, str(marks))
    cfg = TrialConfig(model="sleep:0.05", epochs=3)
    seen = []
    rows = trial_runner("fresh", inline=True).run(cfg, lambda info, row: seen.append((info, row)))
    assert [r["epoch"] for r in rows] == [1, 2, 3] and [row for _, row in seen] == rows
    assert all(r["epoch_s"] >= 0.05 and r["images"] == 0 for r in rows)
    info = seen[0][0]
    assert info["params"] == 0 and info["device_name"] == "sleep (cpu)" and info["host"]
    trial, ended = marks.read_text().split()
    assert trial == cfg.trial_id and float(ended) > 0
    # its rows are ordinary epoch rows: the results writer's schema takes them as they are
    table = to_table([{"trial": cfg.trial_id, **r} for r in rows], "epochs")
    assert table.num_rows == 3 and table.column("epoch_s").null_count == 0


def test_an_inline_sleep_trial_imports_no_torch():
    code = (
        "import sys; from trainables.config import TrialConfig; from trainables.launch.runner import "
        "trial_runner; trial_runner('fresh', inline=True).run(TrialConfig(model='sleep:0', epochs=2)); "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


def test_a_sleep_sweep_is_a_spec_like_any_other():
    spec = SweepSpec(name="s", models=("sleep:0.9",), trial_process="inline", devices=("cpu",))
    assert spec.to_dict()["models"] == ["sleep:0.9"] and spec.start_method.value == "fresh"
