"""The compile axis (--compile off,on): compiled CPU trials, compile time apart, ids, resume, flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from orchestrator.analysis.compile_gain import compile_gain_table
from orchestrator.analysis.speedups import LAUNCH_BOUND_UTIL_PCT, launch_bound, speedup_table
from orchestrator.plan.matrix import expand, resolve_allotment
from orchestrator.plan.spec import SpecError, SweepSpec, spec_differences
from orchestrator.results.sweepstate import planned_trials
from trainables.config import Compile, TrialConfig

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(model="simple_cnn", device="cpu", epochs=2, train_size=100, test_size=40, batch_size=32,
            pipeline="resident", cpus=1)  # fmt: skip


@pytest.mark.slow  # torch.compile, then trains
def test_compiled_cpu_trial_trains_full_batches_and_keeps_compile_time_apart():
    from trainables.train import run_trial

    result = run_trial(TrialConfig(**TINY, compile="on"))
    info, rows = result.info, result.epochs
    assert info["compile_mode"] == "default" and info["last_batch"] == "dropped"
    assert info["compile_s"] > 0  # measured before epoch 1, on its own
    assert all("compile_s" not in r for r in rows)  # never inside an epoch row
    assert [r["full_steps"] for r in rows] == [3, 3]  # 100 // 32: the partial batch of 4 is left out
    assert all(r["images"] == 96 for r in rows)
    assert rows[1]["train_loss"] == rows[1]["train_loss"] and rows[1]["epoch_s"] > 0
    eager = run_trial(TrialConfig(**TINY)).epochs
    assert eager[0]["full_steps"] == 4 and run_trial.__name__  # eager keeps the last partial batch


@pytest.mark.slow  # a fresh Python that imports torch and the compiler
def test_missing_cpp_compiler_fails_up_front_in_one_line(tmp_path):
    code = (
        "from trainables.config import TrialConfig\nfrom trainables.train import run_trial\n"
        f"run_trial(TrialConfig(**{TINY!r}, compile='on'))\n"
    )
    env = {**os.environ, "CXX": str(tmp_path / "no-such-c++"), "PATH": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("trainables.compiled.CompileUnavailable: simple_cnn/cpu/bs32/resident/fp32/comp")
    assert "needs a C++ compiler" in last and "found none" in last
    assert "apt-get install g++" in last and "--compile off" in last


def test_trial_ids_and_planned_trials_tell_compiled_from_eager():
    spec = SweepSpec(name="c", models=("simple_cnn",), devices=("cpu",), compiles=("off", "on"))
    plans = expand(spec, resolve_allotment(spec, [4]))
    ids = sorted(p.trial.trial_id for p in plans)
    assert ids == ["simple_cnn/cpu/bs128/loader/fp32/compiled/r0", "simple_cnn/cpu/bs128/loader/fp32/r0"]
    assert {p.trial.compile for p in plans} == {Compile.off, Compile.on}
    assert sorted(planned_trials(spec.to_dict())) == ids
    old = {k: v for k, v in spec.to_dict().items() if k != "compiles"}  # a spec stored before the axis
    assert planned_trials(old) == ["simple_cnn/cpu/bs128/loader/fp32/r0"]
    with pytest.raises(SpecError, match="--compile"):
        SweepSpec(name="c", compiles=("fast",))


def test_resume_refuses_a_changed_compile_axis_and_reads_old_specs_as_eager():
    stored = SweepSpec(name="c", devices=("cpu",)).to_dict()
    assert spec_differences(stored, SweepSpec(name="c", devices=("cpu",))) == []
    changed = spec_differences(stored, SweepSpec(name="c", devices=("cpu",), compiles=("on",)))
    assert changed == ["compiles: ['off'] -> ['on']"]
    del stored["compiles"]
    assert spec_differences(stored, SweepSpec(name="c", devices=("cpu",))) == []


def _epochs(cells: dict) -> pd.DataFrame:
    rows = []
    for (model, device, compile_), (ips, util, share) in cells.items():
        for epoch in (1, 2, 3):
            rows.append({
                "sweep": "s", "trial": f"{model}/{device}/{compile_}", "attempt": 1, "cell": "c",
                "model": model, "params": 1000, "device": device, "device_name": device, "host": "h",
                "batch_size": 128, "pipeline": "resident", "precision": "fp32", "compile": compile_,
                "dataset": "synthetic", "repeat": 0, "seed": 0, "cpus_allotted": 2, "torch_threads": 2,
                "data_workers": 0, "epoch": epoch, "warmup": epoch == 1, "epoch_s": 1000 / ips,
                "measured_s": 1000 / ips, "data_s": share * 1000 / ips, "compute_s": (1 - share) * 1000 / ips,
                "eval_s": 0.1, "steps": 8, "full_steps": 8, "extrapolated": False, "images": 1000,
                "images_per_s": ips, "train_loss": 1.0, "test_acc": 0.5, "eval_images": 100,
                "eval_partial": False, "gpu_util_pct": util, "hw_class": "",
            })  # fmt: skip
    return pd.DataFrame(rows)


def test_launch_bound_flag_needs_low_utilization_and_little_data_wait():
    assert launch_bound(LAUNCH_BOUND_UTIL_PCT - 1, 0.05)
    assert not launch_bound(LAUNCH_BOUND_UTIL_PCT + 1, 0.05)  # the GPU is busy: it sets the speed
    assert not launch_bound(20.0, 0.5)  # waiting for input: input-bound, not launch-bound
    assert not launch_bound(float("nan"), 0.05) and not launch_bound(None, 0.05)
    epochs = _epochs({
        ("m", "cpu", "off"): (100.0, None, 0.0), ("m", "gpu", "off"): (1000.0, 30.0, 0.05),
        ("m", "cpu", "on"): (125.0, None, 0.0), ("m", "gpu", "on"): (2000.0, 90.0, 0.05),
    })  # fmt: skip
    table = speedup_table(epochs).set_index("compile")
    assert "launch-bound (gpu)" in table.at["off", "flags"]
    assert "launch-bound" not in (table.at["on", "flags"] or "")
    assert table.at["off", "speedup"] == pytest.approx(10.0)  # eager pairs with eager
    assert table.at["on", "speedup"] == pytest.approx(16.0)  # compiled with compiled


def test_compile_gain_and_payoff_from_hand_made_rows():
    epochs = _epochs({("m", "gpu", "off"): (1000.0, 30.0, 0.0), ("m", "gpu", "on"): (2000.0, 90.0, 0.0)})
    trials = pd.DataFrame([
        {"status": "ok", "model": "m", "device": "gpu", "batch_size": 128, "pipeline": "resident",
         "precision": "fp32", "compile": "on", "hw_class": "", "compile_s": 2.0},
        {"status": "ok", "model": "m", "device": "gpu", "batch_size": 128, "pipeline": "resident",
         "precision": "fp32", "compile": "off", "hw_class": "", "compile_s": None},
    ])  # fmt: skip
    gain = compile_gain_table(epochs, trials).iloc[0]
    assert gain["gain"] == pytest.approx(2.0) and gain["compile_s"] == pytest.approx(2.0)
    # 1000 images an epoch: eager 1.0 s, compiled 0.5 s, so 2 s of compiling pay off after 4 epochs
    assert gain["payoff_epochs"] == pytest.approx(4.0)
    slower = _epochs({("m", "gpu", "off"): (1000.0, 30.0, 0.0), ("m", "gpu", "on"): (900.0, 30.0, 0.0)})
    assert (
        compile_gain_table(slower, trials).iloc[0]["payoff_epochs"]
        != compile_gain_table(slower, trials).iloc[0]["payoff_epochs"]
    )  # NaN: compiling saved nothing, it never pays off
    assert json.dumps(list(compile_gain_table(epochs.iloc[:0], trials).columns))


@pytest.mark.parametrize("from_checkpoint", [False, True])
def test_warm_up_puts_model_and_optimizer_back_in_the_same_tensors(from_checkpoint):
    """A captured CUDA graph keeps the addresses it saw, so warm-up restores state in place; zeroed
    momentum (the buffers warm-up created) must train exactly as no momentum, on the steps that follow."""
    import torch

    from trainables.compiled import restore_in_place
    from trainables.models import build_model

    def fresh():
        torch.manual_seed(0)
        model = build_model("simple_cnn")
        return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)

    def train(model, opt, steps, seed):
        g = torch.Generator().manual_seed(seed)
        for _ in range(steps):
            x, y = torch.randn(8, 3, 32, 32, generator=g), torch.randint(0, 10, (8,), generator=g)
            torch.manual_seed(1)  # dropout's draws, the same on both sides
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    reference, ref_opt = fresh()
    model, opt = fresh()
    if from_checkpoint:  # a restored trial: momentum exists before warm-up, and must come back as it was
        train(reference, ref_opt, 2, seed=5)
        train(model, opt, 2, seed=5)
    model_state = {k: v.clone() for k, v in model.state_dict().items()}
    opt_state = __import__("copy").deepcopy(opt.state_dict())
    addresses = [p.data_ptr() for p in model.parameters()]
    train(model, opt, 3, seed=9)  # what warm-up does: steps on other data
    buffers = [opt.state[p]["momentum_buffer"].data_ptr() for p in model.parameters()]
    restore_in_place(model, opt, model_state, opt_state)
    assert [p.data_ptr() for p in model.parameters()] == addresses
    assert [opt.state[p]["momentum_buffer"].data_ptr() for p in model.parameters()] == buffers
    train(reference, ref_opt, 3, seed=7)
    train(model, opt, 3, seed=7)
    for a, b in zip(reference.state_dict().values(), model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
