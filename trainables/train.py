"""The trial: train one model on one device for N epochs and time every epoch.

A plain function, usable without Ray:

    from trainables.config import TrialConfig
    from trainables.train import run_trial
    result = run_trial(TrialConfig(model="simple_cnn", epochs=2, max_steps=5, train_size=1024))
    print(result.epochs[-1]["epoch_s"], result.info["device_name"])

`orchestrator.run.tune_glue.tune_trial` wraps it for Ray Tune. Each epoch row holds:
epoch, warmup, restored, epoch_s, measured_s, data_s, compute_s, eval_s, steps, full_steps,
extrapolated, images, images_per_s, train_loss, test_acc, eval_images, eval_partial, checkpoint_s and
checkpoint_mb (when checkpointing), and where measurable
gpu_mem_peak_mb, gpu_energy_j, gpu_util_pct (GPU), cpu_energy_j (RAPL; whole CPU package),
host_busy_pct and host_steal_pct (all the host's CPUs over the timed pass; trainables.energy.host_load).

With `checkpoint_dir`, the state after an epoch goes to checkpoint_dir/epoch-K (trainables/checkpoint.py)
before `on_epoch` is called, outside every timed region: after every epoch, or after those that
`checkpoint_policy` (trainables.config.CheckpointPolicy) names, the last one always; an epoch without
one has no checkpoint_s and checkpoint_mb in its row. With `restore_from`, training continues after
the epoch that checkpoint was taken at, and that first epoch is warm-up again (`restored`: caches,
cuDNN autotuning and the loader's workers start cold).

Within an epoch's training pass, every note_every_s() (3 s), `on_phase` also gets a note, a dict:
`{"epoch": k, "step": s, "steps": n, "images": i, "seconds": t}`, the steps and images handed to the
device so far and the seconds since the pass began. It is counted on the host: no .item() and no
synchronization is added to the timed loop (on a GPU the device may still be working through the
last few steps handed to it), and it changes nothing of what `epoch_s` times but a clock read per step.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from trainables.checkpoint import load_state, restore, save_state
from trainables.compiled import TrainStep, check_compilable
from trainables.config import CheckpointPolicy, Precision, TrialConfig
from trainables.data import load_arrays, make_source
from trainables.device import prepare_device
from trainables.energy import EnergyMeter
from trainables.models import build_model, count_params
from trainables.timing import StepTimeline, extrapolate, timed

PROGRESS_S = 3.0  # seconds between the notes a trial sends within an epoch (BENCHCTL_PROGRESS_S overrides)


@dataclass
class TrialResult:
    info: dict  # where and on what it ran (strings), once per trial
    epochs: list[dict]  # one row of numbers per epoch


def _autocast(cfg: TrialConfig, device: torch.device):
    if cfg.precision is Precision.amp:
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _evaluate(model: nn.Module, source, max_steps: int, cfg: TrialConfig, device) -> tuple[float, int]:
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    seen = 0
    with torch.inference_mode(), _autocast(cfg, device):
        for step, (x, y) in enumerate(source):
            if step >= max_steps:
                break
            correct += (model(x).argmax(1) == y).sum()
            seen += len(y)
    return correct.item() / seen, seen


def checkpoint_path(checkpoint_dir: Path, epoch: int) -> Path:
    """Where run_trial writes the state after `epoch`."""
    return Path(checkpoint_dir) / f"epoch-{epoch}"


def note_every_s() -> float:
    """Seconds between a trial's notes within an epoch: $BENCHCTL_PROGRESS_S, else PROGRESS_S."""
    try:
        return max(0.01, float(os.environ.get("BENCHCTL_PROGRESS_S", PROGRESS_S)))
    except ValueError:
        return PROGRESS_S


def run_trial(
    cfg: TrialConfig,
    on_epoch: Callable[[dict, dict], None] | None = None,
    *,
    checkpoint_dir: Path | None = None,
    checkpoint_policy: CheckpointPolicy | None = None,
    restore_from: Path | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> TrialResult:
    """Train and time `cfg`; `on_epoch(info, row)` is called after every epoch (Ray reports there),
    `on_phase(text)` before the slow steps that come before the first epoch, and `on_phase(note)`, a
    dict, every note_every_s() within an epoch's training pass (the module doc says what it holds)."""
    phase = on_phase or (lambda text: None)
    device, info = prepare_device(cfg)
    check_compilable(cfg, device)  # a missing compiler fails the trial now, not after loading its data
    torch.manual_seed(cfg.run_seed)
    # says "reading the data set from this node's cache" or "generating N synthetic images", once known
    arrays = load_arrays(cfg, info, on_phase=phase)  # notes info's data_cache (hit, miss, off), data_s_load
    phase(f"building {cfg.model}")
    model = build_model(cfg.model, arrays.num_classes).to(device)
    info["params"] = count_params(model)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
    )
    train_step = TrainStep(model, nn.CrossEntropyLoss(), optimizer, cfg, device)
    train_src = make_source(arrays, cfg, device, train=True)
    test_src = make_source(arrays, cfg, device, train=False)
    full_steps = len(train_src)
    steps = min(full_steps, cfg.max_steps or full_steps)
    eval_full = len(test_src)
    eval_steps = min(eval_full, cfg.max_eval_steps or eval_full)

    done = 0  # epochs already trained (by the attempt whose checkpoint this is)
    if restore_from is not None:
        state = load_state(restore_from, cfg)
        done = restore(state, model=model, optimizer=optimizer, source=train_src)
        del state
    info["restored_from_epoch"] = done
    if train_step.compiled:
        phase(f"compiling {cfg.model} ({train_step.info()['compile_mode']})")
    info["compile_s"] = train_step.warm_up() if train_step.compiled else None
    info.update(train_step.info())  # how it compiled, and what warm-up learnt (CUDA graphs skipped)

    meter = EnergyMeter(device)
    every = note_every_s()
    info["energy_notes"] = "; ".join(meter.notes) or None
    rows: list[dict] = []
    policy = checkpoint_policy or CheckpointPolicy()
    saved_epoch, saved_at = done, time.monotonic()  # the last checkpoint: the restored one, or the start
    for epoch in range(done + 1, cfg.epochs + 1):
        model.train()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        loss_sum = torch.zeros((), device=device)
        images = 0
        batches = iter(train_src)
        timeline = StepTimeline(device)
        meter.start()
        info.setdefault("first_step_at", time.time())  # the trial's start ends here (time.time(): wall)
        timeline.start()
        began = time.perf_counter()
        next_note = began + every
        for step in range(1, steps + 1):
            x, y = next(batches)
            timeline.input_ready()
            loss = train_step(x, y)  # forward, backward, update
            loss_sum += loss.detach() * len(y)
            timeline.step_done()
            images += len(y)
            # host-side counts and clock only: no .item(), no synchronize (a GPU runs its queue meanwhile)
            if (now := time.perf_counter()) >= next_note and step < steps:
                seconds = now - began
                phase({"epoch": epoch, "step": step, "steps": steps, "images": images, "seconds": seconds})
                next_note = now + every
        t = timeline.stop()
        energy = meter.stop()
        del batches  # a capped epoch leaves the loader mid-way; drop it before the test pass

        with timed(device) as eval_elapsed:
            test_acc, eval_images = _evaluate(model, test_src, eval_steps, cfg, device)

        scale = extrapolate(1.0, t.steps, full_steps)  # 1.0 unless the epoch was capped
        row = {
            "epoch": epoch,
            "warmup": epoch == done + 1,  # the first epoch of a process: from scratch or restored
            "restored": done > 0 and epoch == done + 1,
            "epoch_s": t.epoch_s * scale,
            "measured_s": t.epoch_s,
            "data_s": t.data_s * scale,
            "compute_s": t.compute_s * scale,
            "eval_s": eval_elapsed(),
            "steps": t.steps,
            "full_steps": full_steps,
            "extrapolated": t.steps < full_steps,
            "images": images,
            "images_per_s": images / t.epoch_s,
            "train_loss": loss_sum.item() / images,
            "test_acc": test_acc,
            "eval_images": eval_images,
            "eval_partial": eval_steps < eval_full,
        }
        if device.type == "cuda":
            row["gpu_mem_peak_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
        # energy of the measured window, scaled to the full epoch like epoch_s
        for key in ("gpu_energy_j", "cpu_energy_j"):
            if getattr(energy, key) is not None:
                row[key] = getattr(energy, key) * scale
        for key in ("gpu_util_pct", "host_busy_pct", "host_steal_pct"):
            if getattr(energy, key) is not None:
                row[key] = getattr(energy, key)
        since_s = time.monotonic() - saved_at
        if checkpoint_dir is not None and policy.due(epoch, cfg.epochs, saved_epoch, since_s):
            started = time.perf_counter()
            size = save_state(
                checkpoint_path(checkpoint_dir, epoch),
                epoch=epoch, cfg=cfg, model=model, optimizer=optimizer, source=train_src,
            )  # fmt: skip
            row["checkpoint_s"] = time.perf_counter() - started
            row["checkpoint_mb"] = size / 2**20
            saved_epoch, saved_at = epoch, time.monotonic()
        rows.append(row)
        if on_epoch is not None:
            on_epoch(info, row)
    return TrialResult(info=info, epochs=rows)
