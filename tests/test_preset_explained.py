"""`benchctl sweep --preset paper-explained`: every cell of the explained study (plan/study.py) as one sweep.

The fast tests plan it through the one planning path (planning.plan_sweep) on hand-made nodes, re-plan it
from its spec.json as a --resume does, and refuse options its cells set themselves through the real CLI.
The slow one runs its CPU half end to end on real Ray (tiny synthetic data, step caps) and reports it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.plan.planning import plan_sweep
from orchestrator.plan.presets import Preset, preset_fields
from orchestrator.plan.spec import SweepSpec, resume_fields
from orchestrator.plan.study import STUDY, WHAT_IF, kinds_of
from orchestrator.results.reader import read_kind
from orchestrator.results.sweepstate import ids_before_workers, planned_trials, progress, unfinished_trials
from trainables.config import PAPER_MODELS, Compile, Device, TrialConfig

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
GPU_NODE = [{"host": "h", "node_id": "n1", "alive": True, "resources": {"CPU": 16.0, "GPU": 1.0}}]


def explained(tmp_path, **given) -> SweepSpec:
    """A paper-explained spec as the CLI builds it: the preset's fields, overridden by those given."""
    fields = {**preset_fields(Preset.paper_explained, given=set(given)), **given}
    return SweepSpec(name="x", out=tmp_path, preset=Preset.paper_explained, **fields)


def cell_of(trial: TrialConfig) -> tuple:
    return (trial.device, trial.pipeline, trial.precision, trial.compile, trial.batch_size)


def expected_cell(c) -> tuple:
    return (c.device, c.pipeline, c.precision, c.compile, c.batch_size)


def test_it_plans_exactly_the_studys_cells_for_every_model(tmp_path):
    plans = plan_sweep(explained(tmp_path), GPU_NODE, echo=lambda _: None).plans
    assert len(plans) == len(STUDY) * len(PAPER_MODELS) == 24
    ids = [p.trial.trial_id for p in plans]
    assert len(set(ids)) == len(ids)  # the 2- and 8-worker GPU loader cells too
    for model in PAPER_MODELS:
        mine = [p.trial for p in plans if p.trial.model == model]
        got = sorted((*cell_of(t), t.workers if t.pipeline == "loader" else None) for t in mine)
        want = sorted((*expected_cell(c), c.workers) for c in STUDY)
        assert got == want
    what_if = [p for p in plans if kinds_of(p.trial) == WHAT_IF]
    assert len(what_if) == 3
    for p in what_if:
        assert p.trial.workers == 8 and p.trial.data_workers == 8 and p.resources == {"CPU": 9, "GPU": 1}
        assert p.trial.trial_id.endswith("/gpu/bs128/loader/fp32/w8/r0")
    paper_gpu = [p for p in plans if kinds_of(p.trial) == "paper" and p.trial.device is Device.gpu]
    assert {p.resources["CPU"] for p in paper_gpu} == {3}  # 1 + the paper's 2 workers
    assert {p.trial.trial_id for p in paper_gpu} == {f"{m}/gpu/bs128/loader/fp32/r0" for m in PAPER_MODELS}


def test_a_resume_replans_the_same_union_from_spec_json(tmp_path):
    planned = plan_sweep(explained(tmp_path, repeats=2), GPU_NODE, echo=lambda _: None)
    stored = json.loads(json.dumps(planned.spec.to_dict()))  # what spec.json holds
    assert stored["preset"] == "paper-explained" and stored["pipelines"] == ["loader", "resident"]
    again = SweepSpec(name="x", out=tmp_path, resume=True, **resume_fields(stored))
    replanned = plan_sweep(again, GPU_NODE, echo=lambda _: None).plans
    ids = [p.trial.trial_id for p in planned.plans]
    assert [p.trial.trial_id for p in replanned] == ids and len(ids) == 48
    assert [p.resources for p in replanned] == [p.resources for p in planned.plans]
    assert sorted(planned_trials(stored)) == sorted(ids)  # the report's and `ls`'s view of the plan
    left = plan_sweep(again, GPU_NODE, echo=lambda _: None, skip=set(ids[:5])).plans
    assert [p.trial.trial_id for p in left] == ids[5:]


def test_devices_keeps_that_devices_cells_and_says_what_it_left_out(tmp_path):
    said = []
    plans = plan_sweep(explained(tmp_path, devices=(Device.cpu,)), GPU_NODE, echo=said.append).plans
    cpu_cells = [c for c in STUDY if c.device is Device.cpu]
    assert len(plans) == len(cpu_cells) * 3 and {p.trial.device for p in plans} == {Device.cpu}
    assert sorted({cell_of(p.trial) for p in plans}) == sorted(expected_cell(c) for c in cpu_cells)
    assert any("the 4 gpu cells per model of --preset paper-explained are left out" in s for s in said)
    stored = explained(tmp_path, devices=(Device.cpu,)).to_dict()
    assert len(planned_trials(stored)) == len(plans)


@pytest.mark.parametrize("option", [["--workers", "8"], ["--gpu-cpus", "4"]])
def test_options_its_cells_set_are_refused_in_one_line(tmp_path, option):
    result = runner.invoke(
        app, ["sweep", "--preset", "paper-explained", "--devices", "cpu", *option, "--dry-run",
              "--dataset", "synthetic", "--out", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(f"benchctl: error: {option[0]}: --preset paper-explained")
    assert f"drop {option[0]}, or use --preset paper" in line


@pytest.mark.parametrize(
    "options", [["--batch-size", "64"], ["--precision", "amp", "--compile", "on"],
                ["--pipeline", "loader", "--precision", "amp"]]
)  # fmt: skip
def test_axis_values_that_keep_none_of_its_cells_are_refused_in_one_line(tmp_path, options):
    result = runner.invoke(
        app, ["sweep", "--preset", "paper-explained", "--devices", "cpu", *options, "--dry-run",
              "--dataset", "synthetic", "--out", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    flags = ", ".join(o for o in options if o.startswith("--"))
    assert "\n" not in line and line.startswith(f"benchctl: error: {flags}: keep none of the cells of ")
    assert "--preset paper-explained on --devices cpu" in line
    assert f"drop {flags}, or use --preset paper" in line


def test_an_axis_option_keeps_the_cells_with_its_values(tmp_path):
    """`--compile off` beside the preset keeps its eager cells (a small CPU machine skips compiling), and
    the sweep says which cells that leaves out; a stored spec re-plans the same trials (--resume)."""
    said: list[str] = []
    spec = explained(tmp_path, devices=(Device.cpu,), compiles=(Compile.off,), models=("simple_cnn",))
    plans = plan_sweep(spec, GPU_NODE, said.append).plans
    assert sorted(p.trial.trial_id for p in plans) == [
        "simple_cnn/cpu/bs128/loader/fp32/r0", "simple_cnn/cpu/bs128/resident/amp/r0",
        "simple_cnn/cpu/bs128/resident/fp32/r0",
    ]  # fmt: skip
    [line] = [s for s in said if "left out" in s]
    assert "5 of the 8 cells per model of --preset paper-explained are left out" in line
    assert "best cpu/bs128/resident/fp32/compiled" in line and "what-if gpu/bs128/loader(8 workers)" in line
    assert planned_trials(spec.to_dict()) == [p.trial.trial_id for p in plans]


def test_options_for_every_cell_apply_and_the_dry_run_lists_each_trials_kind(tmp_path):
    result = runner.invoke(
        app, ["sweep", "--preset", "paper-explained", "--devices", "cpu", "--models", "simple_cnn",
              "--repeats", "2", "--epochs", "3", "--dataset", "synthetic", "--dry-run",
              "--out", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = {r.split()[0]: r.split()[1] for r in result.stdout.splitlines() if r.startswith("simple")}
    assert rows == {
        f"simple_cnn/cpu/bs128/{cell}/r{r}": kind
        for cell, kind in (("loader/fp32", "paper"), ("resident/fp32", "device"), ("resident/amp", "best"),
                           ("resident/fp32/compiled", "best"))
        for r in (0, 1)
    }  # fmt: skip
    assert "dry run: 8 trials of 3 epochs" in result.stdout
    assert not (tmp_path / "x").exists()


def test_a_loader_cell_names_its_workers_only_where_they_are_not_the_default():
    assert TrialConfig(model="m", device="gpu").trial_id == "m/gpu/bs128/loader/fp32/r0"
    assert TrialConfig(model="m", device="gpu", workers=8).trial_id == "m/gpu/bs128/loader/fp32/w8/r0"
    assert TrialConfig(model="m", device="gpu", workers=8, pipeline="resident").trial_id == (
        "m/gpu/bs128/resident/fp32/r0"
    )


def test_a_sweep_stored_before_ids_named_workers_still_reads_as_complete():
    # the reference's what-if sweep ran `--workers 8 --gpu-cpus 9` when ids left workers out
    what_if = ROOT / "reports/h100-explained/results/h100-gpu-what-if"
    spec = json.loads((what_if / "spec.json").read_text())["spec"]
    assert planned_trials(spec) == ["simple_cnn/gpu/bs128/loader/fp32/w8/r0"]
    assert ids_before_workers(spec) == {"simple_cnn/gpu/bs128/loader/fp32/r0": planned_trials(spec)[0]}
    assert unfinished_trials(what_if, read_kind(what_if, "trials")) == []  # the report's view
    assert progress(what_if).done == frozenset(planned_trials(spec))  # a --resume's: nothing to run again


@pytest.mark.slow  # real Ray: the study's eager CPU cells end to end (3 of simple_cnn), then its report
def test_the_cpu_half_runs_in_one_sweep_and_the_report_names_its_cells(tmp_path, ray_tmp):
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["sweep", "--preset", "paper-explained", "--devices", "cpu", "--compile", "off", "--models",
              "simple_cnn", "--dataset", "synthetic", "--train-size", "256", "--test-size", "128",
              "--epochs", "2", "--max-steps", "2", "--max-eval-steps", "1", "--out", str(out),
              "--name", "cpu-half"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output + str(result.exception)
    trials = read_kind(out / "cpu-half", "trials")
    assert sorted(trials.trial) == sorted(
        f"simple_cnn/cpu/bs128/{c}/r0" for c in ("loader/fp32", "resident/fp32", "resident/amp")
    ) and (trials.status == "ok").all()  # fmt: skip

    report = runner.invoke(app, ["report", str(out / "cpu-half"), "--out", str(tmp_path / "rep")])
    assert report.exit_code == 0, report.output + str(report.exception)
    text = (tmp_path / "rep" / "report.md").read_text()
    measured = next(line for line in text.splitlines() if line.startswith("**Measured**"))
    for kind, cell in (("paper", "loader/fp32/eager"), ("device", "resident/fp32/eager"),
                       ("best", "resident/amp/eager")):  # fmt: skip
        # the cell's name carries this host's CPU class: simple_cnn/cpu:<model>-<cores>c/bs128/...
        assert re.search(rf"{kind} `simple_cnn/cpu[^/`]*/bs128/{re.escape(cell)} ", measured), measured
    missing = next(line for line in text.splitlines() if line.startswith("**Not measured**"))
    gpu_cells = (("paper", "loader(2 workers)/fp32/eager"), ("device", "resident/fp32/eager"),
                 ("best", "resident/amp/compiled"), ("what-if", "loader(8 workers)/fp32/eager"))  # fmt: skip
    for kind, cell in gpu_cells:
        assert f"{kind} `gpu/bs128/{cell}`" in missing, missing
    simple_cnn = missing.partition("resnet18:")[
        0
    ]  # of simple_cnn's cpu cells only the compiled one is missing
    assert "best `cpu/bs128/resident/fp32/compiled`" in simple_cnn and simple_cnn.count("`cpu/") == 1
