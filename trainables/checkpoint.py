"""Epoch checkpoints: what a trial needs to continue at its next epoch as if it had never been cut.

    from trainables.checkpoint import save_state, load_state
    nbytes = save_state(directory, epoch=3, cfg=cfg, model=model, optimizer=opt, source=train_src)
    state = load_state(directory, cfg)          # {"epoch": 3, "model": ..., ...}; checked against cfg

One file, `state.pt`, in a directory that Ray Tune persists as the trial's Checkpoint after each epoch
(orchestrator/run/tune_glue.py). It holds the model's and the optimizer's state, the epoch it was taken
after, torch's global RNG streams (CPU and, on a GPU trial, CUDA: the loader's per-sample augmentation
in the training process draws from them) and the training source's own generator (data order and
the resident pipeline's augmentation). Restored into the same TrialConfig, the next epoch sees the
same batches in the same order. With DataLoader worker processes, the workers' augmentation streams
are re-seeded from the source's generator when they start (they live in processes that die with the
trial), so a resumed run draws different, equally distributed crops and flips; with `workers=0` or
the resident pipeline it repeats the uninterrupted run exactly.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import torch

from trainables.config import TrialConfig

STATE_FILE = "state.pt"
FORMAT = 1  # bumped when the file's keys change; an unknown format is refused, not half-loaded


class CheckpointMismatch(RuntimeError):
    """The checkpoint belongs to another trial or another benchctl; the message says which."""


def save_state(directory: Path, *, epoch: int, cfg: TrialConfig, model, optimizer, source) -> int:
    """Write the state after `epoch` to directory/state.pt (atomically); return its size in bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    state = {
        "format": FORMAT,
        "trial_id": cfg.trial_id,
        "epoch": epoch,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
        "source_rng": source.rng_state(),
    }
    path = directory / STATE_FILE
    tmp = path.with_name(f".{STATE_FILE}.tmp")
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:
        tmp.unlink(missing_ok=True)
        # torch.save says only "file write failed" when the disk is full: say it as ENOSPC, so that the
        # sweep stops in one line naming this node's path (orchestrator/run/diskspace.py)
        need = sum(t.numel() * t.element_size() for t in _tensors(state))
        if shutil.disk_usage(directory).free < need:
            message = f"No space left on device for a {need / 2**20:.1f} MB checkpoint"
            raise OSError(errno.ENOSPC, message, str(path)) from exc
        raise
    return path.stat().st_size


def _tensors(obj):
    """Every tensor in a nest of dicts, lists and tuples (a state dict, an optimizer's state)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _tensors(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _tensors(value)


def load_state(directory: Path, cfg: TrialConfig) -> dict:
    """The state in directory/state.pt, on the CPU; refused unless it was saved by the same trial."""
    state = torch.load(Path(directory) / STATE_FILE, map_location="cpu", weights_only=True)
    if state.get("format") != FORMAT:
        raise CheckpointMismatch(
            f"checkpoint {directory} has format {state.get('format')!r}, this benchctl reads {FORMAT}; "
            "run the trial again without it"
        )
    if state.get("trial_id") != cfg.trial_id:
        raise CheckpointMismatch(
            f"checkpoint {directory} belongs to trial {state.get('trial_id')!r}, not {cfg.trial_id!r}"
        )
    return state


def restore(state: dict, *, model, optimizer, source) -> int:
    """Put `state` back into the live objects; return the epoch it was taken after."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    if state["cuda_rng"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    source.set_rng_state(state["source_rng"])
    return int(state["epoch"])
