"""analysis/estimate.py: a planned sweep's duration, from earlier runs here, else FLOPs x a known rate.

.venv/bin/pytest -q tests/test_estimate.py
"""

from __future__ import annotations

import pytest

from orchestrator.analysis.estimate import (
    KNOWN_RATES,
    LONG_SWEEP_S,
    STARTUP_S,
    duration,
    epoch_images,
    estimate,
    long_sweep_note,
)
from orchestrator.analysis.flops_table import train_flops
from orchestrator.plan.matrix import expand, resolve_allotment
from orchestrator.plan.spec import SweepSpec
from orchestrator.results.files import write_json_atomic, write_rows

NODE = [{"host": "h", "node_id": "h", "resources": {"CPU": 2.0}}]
CPU = "Test CPU @ 1 GHz"


def _plans(**fields):
    spec = SweepSpec(name="n", devices=("cpu",), **fields)
    return expand(spec, resolve_allotment(spec, [2]))


def test_epoch_images_apply_the_step_caps():
    plan = _plans(models=("simple_cnn",), max_steps=3, max_eval_steps=1)[0]
    assert epoch_images(plan, (5000, 1000)) == (3 * 128, 512)
    plan = _plans(models=("simple_cnn",))[0]
    assert epoch_images(plan, (5000, 1000)) == (5000, 1000)


def test_without_runs_the_rate_is_a_known_one_nearest_in_cores_and_flops():
    plans = _plans(models=("resnet18", "resnet34"), epochs=4, train_size=5000, test_size=1000)
    est = estimate(plans, NODE, (5000, 1000), out=None, cpu_model=CPU, gpu_models=[])
    key = ("resnet18", "cpu", "loader", 2)  # measured on a 2-core host: the nearest core count
    r18 = next(r for r in KNOWN_RATES if (r.model, r.device, r.pipeline, r.cores) == key)
    rate = r18.images_per_s  # a 2-core cell
    t = est.trials["resnet18/cpu/bs128/loader/fp32/r0"]
    assert t.source == "FLOPs"
    assert t.epoch_s == pytest.approx(5000 / rate + 1000 / (3 * rate))
    assert t.total_s == pytest.approx(STARTUP_S + 4 * t.epoch_s)
    # resnet34 was never measured: resnet50's rate (the nearest in FLOPs) times their FLOPs ratio
    r50 = next(r for r in KNOWN_RATES if (r.model, r.device, r.pipeline) == ("resnet50", "cpu", "loader"))
    rate34 = r50.images_per_s * train_flops("resnet50") / train_flops("resnet34") * 2 / 15
    t34 = est.trials["resnet34/cpu/bs128/loader/fp32/r0"]
    assert t34.epoch_s == pytest.approx(5000 / rate34 + 1000 / (3 * rate34))
    # one node of 2 cores: the exclusive CPU cells run one after another
    assert est.total_s == pytest.approx(t.total_s + t34.total_s)
    assert "rough" in est.source_line() and est.matched == 0


def _epoch(model: str, epoch: int, ips: float, device_name: str = CPU, cpus: int = 2) -> dict:
    return {"sweep": "old", "trial": f"{model}/cpu/bs128/loader/fp32/r0", "attempt": 1, "model": model,
            "device": "cpu", "device_name": device_name, "batch_size": 128, "pipeline": "loader",
            "precision": "fp32", "compile": "off", "cpus_allotted": cpus, "epoch": epoch,
            "warmup": epoch == 1, "restored": False, "images_per_s": ips, "eval_images": 1000,
            "eval_s": 1.0}  # fmt: skip


def test_earlier_runs_on_this_cpu_come_first(tmp_path):
    old = tmp_path / "old"
    write_json_atomic({"spec": {}, "provenance": {}}, old / "spec.json")
    rows = [_epoch("simple_cnn", 1, 10.0), _epoch("simple_cnn", 2, 200.0), _epoch("simple_cnn", 3, 220.0)]
    rows += [_epoch("resnet18", 2, 999.0, device_name="Another CPU")]  # another host's CPU: not used
    write_rows(old, "epochs", "x", rows)
    plans = _plans(models=("simple_cnn", "resnet18"), epochs=4, train_size=5000, test_size=1000)
    est = estimate(plans, NODE, (5000, 1000), out=tmp_path, cpu_model=CPU, gpu_models=[])
    cnn = est.trials["simple_cnn/cpu/bs128/loader/fp32/r0"]
    assert cnn.source == "runs"
    assert cnn.epoch_s == pytest.approx(
        5000 / 210.0 + 1000 / 1000.0
    )  # median of the steady epochs; eval rate
    assert est.trials["resnet18/cpu/bs128/loader/fp32/r0"].source == "FLOPs"
    assert est.matched == 1 and est.source_line().startswith("1 of 2 trials from earlier runs here")


def test_a_long_sweep_is_announced_with_how_to_shorten_it():
    plans = _plans(epochs=10)  # the old first example: 3 models x 50,000 images on 2 cores
    est = estimate(plans, NODE, (50_000, 10_000), out=None, cpu_model=CPU, gpu_models=[])
    assert est.total_s > LONG_SWEEP_S
    note = long_sweep_note(est)
    assert note.startswith(f"benchctl: note: this sweep is estimated to take ~{duration(est.total_s)}")
    assert "--epochs" in note and "--train-size" in note and "\n" not in note
    short = estimate(_plans(models=("simple_cnn",), epochs=2, max_steps=3), NODE, (5000, 1000), out=None,
                     cpu_model=CPU, gpu_models=[])  # fmt: skip
    assert long_sweep_note(short) is None


def test_duration_reads_at_an_estimate_s_precision():
    assert [duration(s) for s in (0.2, 45, 125, 3600, 5400, 7800)] == [
        "1 s",
        "45 s",
        "2 min",
        "60 min",
        "1 h 30 min",
        "2 h 10 min",
    ]


def test_sweep_says_up_front_when_it_is_long(capsys):
    from orchestrator.commands.sweep import _say_if_long

    _say_if_long(None, _plans(epochs=10), NODE, (50_000, 10_000))
    long = capsys.readouterr().out
    assert long.startswith("benchctl: note: this sweep is estimated to take ~") and long.count("\n") == 1
    _say_if_long(None, _plans(models=("simple_cnn",), epochs=2, max_steps=3), NODE, (5000, 1000))
    assert capsys.readouterr().out == ""


def test_the_readme_first_sweep_as_written_is_not_announced_as_long(tmp_path, monkeypatch, capsys):
    """The README's first sweep at its own sizes, judged as the sweep judges itself before its first trial
    (commands/sweep.py's _say_if_long) on the plans, nodes and sizes a dry run makes: no Ray, no training."""
    from test_first_sweep import README_SWEEP
    from typer.testing import CliRunner

    from orchestrator.cli import app
    from orchestrator.commands import sweep as command

    runs = []
    shown = command._estimate_dry_run
    monkeypatch.setattr(command, "_estimate_dry_run", lambda out, run: runs.append(run) or shown(out, run))
    result = CliRunner().invoke(app, [*README_SWEEP, "--dry-run", "--out", str(tmp_path), "--name", "first"])
    assert result.exit_code == 0, result.output + str(result.exception)
    (run,) = runs
    assert run.sizes == (5000, 1000) and {p.trial.epochs for p in run.planned.plans} == {4}
    capsys.readouterr()
    command._say_if_long(tmp_path, run.planned.plans, run.nodes, run.sizes)
    assert capsys.readouterr().out == ""  # not announced as long


@pytest.mark.slow
def test_a_real_sweep_estimates_before_its_first_trial(tmp_path, monkeypatch):
    """The note comes from the plans the sweep runs (run_sweep's on_plans), before any trial trains."""
    from typer.testing import CliRunner

    from orchestrator.analysis import estimate as module
    from orchestrator.cli import app
    from orchestrator.results.reader import read_results

    monkeypatch.setattr(module, "LONG_SWEEP_S", 0)  # any sweep is "long"
    args = ["sweep", "--models", "simple_cnn", "--devices", "cpu", "--epochs", "2", "--max-steps", "2",
            "--batch-size", "32", "--train-size", "256", "--test-size", "128", "--max-eval-steps", "1",
            "--out", str(tmp_path), "--name", "s"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    note = next(i for i, line in enumerate(lines) if "this sweep is estimated to take" in line)
    planned = next(i for i, line in enumerate(lines) if line.startswith("benchctl: 1 trial on"))
    ended = next(i for i, line in enumerate(lines) if line.startswith("benchctl: results in"))
    assert planned < note < ended  # said with the plan, before Tune runs the trial (run_sweep's on_plans)
    _, trials = read_results(tmp_path / "s")
    assert (trials.torch_threads + trials.data_workers <= trials.cpus_allotted).all()
