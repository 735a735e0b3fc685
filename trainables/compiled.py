"""The training step, eager or compiled (`--compile on`): what is compiled, how, and what it costs.

    step = TrainStep(model, loss_fn, cfg, device)    # raises CompileUnavailable up front
    info["compile_s"] = step.warm_up(optimizer)      # compiled only: outside every epoch
    loss = step(x, y)                                # forward + loss, under autocast for amp

Eager (`off`) is the paper's loop: `loss_fn(model(x), y)`, in autocast for amp. Compiled (`on`) runs the
same forward and loss through torch.compile, so its backward is compiled too (AOTAutograd); the
optimizer step, the data pipeline and the test pass stay eager in both, so the two differ only in how
the forward and backward run:

    GPU   mode "reduce-overhead": Inductor's Triton kernels replayed as CUDA graphs, so one launch
          replaces hundreds and the host's speed stops setting the step time. The model's weights and
          each batch are channels_last (NHWC), the layout cuDNN's tensor-core convolutions want; eager
          cells keep PyTorch's default NCHW, as the paper did. Needs Triton.
    CPU   Inductor's default mode: generated C++/OpenMP code, built by the host's C++ compiler.

Both compile for one static shape (dynamic=False): a second shape would compile again (and record
another CUDA graph), so compiled cells train on full batches only (TrialConfig.drop_last).

Compilation happens in `warm_up`, before epoch 1: COMPILE_WARMUP_STEPS training steps on a batch of
noise (CUDA graph trees run a step eagerly, then record, then replay), timed as `compile_s`. The model's
and the optimizer's state are put back afterwards, in place, so the trial trains from the same start as
its eager twin and no timed epoch contains compilation. Inductor caches what it builds on the node
(its cache directory, e.g. /tmp/torchinductor_$USER), so a later trial of the same model and shape
compiles faster: compile_s is what this trial paid, not a cold-cache constant.
"""

from __future__ import annotations

import contextlib
import copy
import time

import torch
from torch import nn

from trainables.config import IMAGE_SIZE, Compile, Precision, TrialConfig

COMPILE_WARMUP_STEPS = 3  # compile, then CUDA graph trees' warm-up run and recording, before epoch 1


class CompileUnavailable(RuntimeError):
    """`--compile on` cannot run in this process (no C++ compiler, no Triton); never falls back to eager."""


def check_compilable(cfg: TrialConfig, device: torch.device) -> None:
    """Fail up front, in one line naming what to install, when torch.compile cannot build code here."""
    if cfg.compile is Compile.off:
        return
    if device.type == "cuda":
        from torch.utils._triton import has_triton

        if not has_triton():
            raise CompileUnavailable(
                f"{cfg.trial_id}: --compile on needs Triton for GPU kernels (pip install triton), "
                "or run with --compile off"
            )
        return
    from torch._inductor import config as inductor_config
    from torch._inductor.cpp_builder import get_cpp_compiler

    try:
        get_cpp_compiler()
    except Exception:  # torch raises InvalidCxxCompiler; any failure to find one means the same here
        looked = ", ".join(str(c) for c in inductor_config.cpp.cxx if c)
        raise CompileUnavailable(
            f"{cfg.trial_id}: --compile on needs a C++ compiler for torch.compile's CPU backend and "
            f"found none (looked for {looked}; set CXX): install one (Debian: apt-get install g++), "
            "or run with --compile off"
        ) from None


def uses_channels_last(cfg: TrialConfig, device: torch.device) -> bool:
    return cfg.compile is Compile.on and device.type == "cuda"


class _Forward(nn.Module):
    """Forward and loss as one module, so torch.compile sees (and fuses) both."""

    def __init__(self, model: nn.Module, loss_fn: nn.Module, cfg: TrialConfig, channels_last: bool):
        super().__init__()
        self.model, self.loss_fn = model, loss_fn
        self.amp = cfg.precision is Precision.amp
        self.channels_last = channels_last

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        amp = torch.autocast(x.device.type, dtype=torch.bfloat16) if self.amp else contextlib.nullcontext()
        with amp:
            return self.loss_fn(self.model(x), y)


class TrainStep:
    """`step(x, y)` returns the batch's loss; see the module docstring for what `on` changes."""

    def __init__(self, model: nn.Module, loss_fn: nn.Module, cfg: TrialConfig, device: torch.device):
        check_compilable(cfg, device)
        self.cfg, self.device, self.model = cfg, device, model
        self.compiled = cfg.compile is Compile.on
        self.channels_last = uses_channels_last(cfg, device)
        self.graphs = self.compiled and device.type == "cuda"  # CUDA graphs (reduce-overhead)
        if self.channels_last:
            model.to(memory_format=torch.channels_last)
        forward = _Forward(model, loss_fn, cfg, self.channels_last)
        if self.compiled:
            mode = "reduce-overhead" if self.graphs else "default"
            forward = torch.compile(forward, mode=mode, dynamic=False)
        self._forward = forward
        self.cudagraph_skips: int | None = None  # set by warm_up: graphs Inductor declined to record

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.graphs:
            # a new training iteration: outputs of the last replay may be overwritten from here on
            torch.compiler.cudagraph_mark_step_begin()
        return self._forward(x, y)

    def info(self) -> dict:
        """What the trial's row records about how it trained."""
        return {
            "compile_mode": ("reduce-overhead" if self.graphs else "default") if self.compiled else None,
            "channels_last": self.channels_last,
            "last_batch": "dropped" if self.cfg.drop_last else "kept",
            "cudagraph_skips": self.cudagraph_skips,
        }

    def warm_up(self, optimizer: torch.optim.Optimizer) -> float:
        """Compile now (COMPILE_WARMUP_STEPS steps on noise), put model and optimizer back as they
        were, and return the wall seconds it took. Eager steps need none: 0.0 and nothing runs."""
        if not self.compiled:
            return 0.0
        model_state = copy.deepcopy(self.model.state_dict())
        optimizer_state = copy.deepcopy(optimizer.state_dict())
        noise = torch.Generator().manual_seed(0)  # its own generator: the trial's RNG streams are untouched
        bs = self.cfg.batch_size
        x = torch.randn(bs, 3, IMAGE_SIZE, IMAGE_SIZE, generator=noise).to(self.device)
        y = torch.zeros(bs, dtype=torch.long, device=self.device)  # a valid class for any class count
        self.model.train()
        _sync(self.device)
        started = time.perf_counter()
        for _ in range(COMPILE_WARMUP_STEPS):
            loss = self(x, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        _sync(self.device)
        seconds = time.perf_counter() - started
        if self.graphs:  # a skipped graph still trains, only slower: recorded, so the report can say so
            from torch._dynamo.utils import counters

            self.cudagraph_skips = int(counters["inductor"]["cudagraph_skips"])
        optimizer.zero_grad(set_to_none=True)
        self.model.load_state_dict(model_state)  # copies in place: CUDA graphs keep their weights' addresses
        optimizer.load_state_dict(optimizer_state)
        return seconds


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
