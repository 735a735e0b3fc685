"""The training step, eager or compiled (`--compile on`): what is compiled, how, and what it costs.

    step = TrainStep(model, loss_fn, optimizer, cfg, device)   # raises CompileUnavailable up front
    info["compile_s"] = step.warm_up()                          # compiled only: outside every epoch
    loss = step(x, y)                                           # one training step; returns its loss

A step is forward, loss, backward and the optimizer's update. Eager (`off`) is the paper's loop:
`loss_fn(model(x), y)` (in autocast for amp), `zero_grad`, `backward`, `step`. Compiled (`on`) runs the
same forward and loss through torch.compile, so its backward is compiled too (AOTAutograd); the data
pipeline and the test pass stay eager in both.

    GPU   Inductor's Triton kernels replayed as CUDA graphs. Graphs.inductor (what cells run): mode
          "reduce-overhead", Inductor's graphs of forward and backward, with the SGD update eager.
          Graphs.step (bench/plain_loop.py --graphs step only, not yet in cells): the whole step
          (forward, backward, update) captured once as one CUDA graph and replayed per batch, so no
          per-step Python is left but the data pipeline's (its gain: reports/h200-compile). The
          model's weights and each batch are channels_last (NHWC), the layout cuDNN's tensor-core
          convolutions want; eager cells keep PyTorch's default NCHW, as the paper did. Needs Triton.
    CPU   Inductor's default mode: generated C++/OpenMP code, built by the host's C++ compiler; the
          optimizer's update stays eager.

Both compile for one static shape (dynamic=False): a second shape would compile again (and capture
another graph), so compiled cells train on full batches only (TrialConfig.drop_last).

Compilation happens in `warm_up`, before epoch 1: COMPILE_WARMUP_STEPS training steps on a batch of
noise, then (GPU) the capture, timed together as `compile_s`. The model's and the optimizer's state are
then put back in place, so the trial trains from the same start as its eager twin, the graph keeps the
addresses it captured, and no timed epoch contains compilation. Inductor caches what it builds on the
node (its cache directory, e.g. /tmp/torchinductor_$USER), so a later trial of the same model and shape
compiles faster: compile_s is what this trial paid, not a cold-cache constant.
"""

from __future__ import annotations

import contextlib
import copy
import time
from enum import Enum

import torch
from torch import nn

from trainables.config import IMAGE_SIZE, Compile, Precision, TrialConfig

COMPILE_WARMUP_STEPS = 3  # compile and settle (cuDNN's algorithm search, Triton's tuning) before capture


class Graphs(str, Enum):
    """What a compiled GPU step replays as CUDA graphs."""

    inductor = "inductor"  # forward and backward, by Inductor's mode "reduce-overhead": what cells run
    step = "step"  # forward, backward and the optimizer's update: one graph, captured by TrainStep


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
    """`step(x, y)` trains on one batch and returns its loss; the module docstring says what `on` changes."""

    def __init__(
        self,
        model: nn.Module,
        loss_fn: nn.Module,
        optimizer: torch.optim.Optimizer,
        cfg: TrialConfig,
        device: torch.device,
        graphs: Graphs = Graphs.inductor,
    ):
        check_compilable(cfg, device)
        self.cfg, self.device, self.model, self.optimizer = cfg, device, model, optimizer
        self.compiled = cfg.compile is Compile.on
        self.channels_last = uses_channels_last(cfg, device)
        self.graphs = graphs if self.compiled and device.type == "cuda" else None
        if self.channels_last:
            model.to(memory_format=torch.channels_last)
        forward = _Forward(model, loss_fn, cfg, self.channels_last)
        if self.compiled:
            mode = "reduce-overhead" if self.graphs is Graphs.inductor else "default"
            forward = torch.compile(forward, mode=mode, dynamic=False)
        self._forward = forward
        self._graph: torch.cuda.CUDAGraph | None = None  # Graphs.step, once warm_up has captured it
        self.cudagraph_skips: int | None = None  # set by warm_up: graphs Inductor declined to record

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self._graph is not None:
            self._x.copy_(x)
            self._y.copy_(y)
            self._graph.replay()
            return self._loss  # overwritten by the next replay, which the stream orders after its readers
        return self._eager_step(x, y)

    def _eager_step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.graphs is Graphs.inductor:
            # a new training iteration: outputs of the last replay may be overwritten from here on
            torch.compiler.cudagraph_mark_step_begin()
        loss = self._forward(x, y)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return loss

    @property
    def compile_mode(self) -> str | None:
        if not self.compiled:
            return None
        return {None: "default", Graphs.inductor: "reduce-overhead", Graphs.step: "step-graph"}[self.graphs]

    def info(self) -> dict:
        """What the trial's row records about how it trained."""
        return {
            "compile_mode": self.compile_mode,
            "channels_last": self.channels_last,
            "last_batch": "dropped" if self.cfg.drop_last else "kept",
            "cudagraph_skips": self.cudagraph_skips,
        }

    def warm_up(self) -> float:
        """Compile now (COMPILE_WARMUP_STEPS steps on noise; on the GPU, capture the step's graph), put
        model and optimizer back as they were, and return the wall seconds it took. Eager steps need
        none: 0.0 and nothing runs."""
        if not self.compiled:
            return 0.0
        model_state = copy.deepcopy(self.model.state_dict())
        optimizer_state = copy.deepcopy(self.optimizer.state_dict())
        noise = torch.Generator().manual_seed(0)  # its own generator: the trial's RNG streams are untouched
        bs = self.cfg.batch_size
        x = torch.randn(bs, 3, IMAGE_SIZE, IMAGE_SIZE, generator=noise).to(self.device)
        y = torch.zeros(bs, dtype=torch.long, device=self.device)  # a valid class for any class count
        self.model.train()
        _sync(self.device)
        started = time.perf_counter()
        if self.graphs is Graphs.step:
            self._capture(x, y)
        else:
            for _ in range(COMPILE_WARMUP_STEPS):
                self._eager_step(x, y)
        _sync(self.device)
        seconds = time.perf_counter() - started
        if self.graphs is Graphs.inductor:  # a skipped graph still trains, only slower: recorded
            from torch._dynamo.utils import counters

            self.cudagraph_skips = int(counters["inductor"]["cudagraph_skips"])
        elif self.graphs is Graphs.step:
            self.cudagraph_skips = 0  # captured whole, or warm_up raised: nothing runs outside the graph
        restore_in_place(self.model, self.optimizer, model_state, optimizer_state)
        return seconds

    def _capture(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """The whole step as one CUDA graph, after warm-up steps on a side stream (PyTorch's recipe for
        whole-network capture): inputs and loss live at fixed addresses, and the gradients the captured
        backward writes are the ones the captured update reads, so no zero_grad runs between replays."""
        self._x, self._y = x.clone(), y.clone()
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(COMPILE_WARMUP_STEPS):
                self._eager_step(self._x, self._y)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)  # the captured backward allocates the grads it reuses
        with torch.cuda.graph(graph):
            loss = self._forward(self._x, self._y)
            loss.backward()
            self.optimizer.step()
        self._loss, self._graph = loss.detach(), graph


def restore_in_place(
    model: nn.Module, optimizer: torch.optim.Optimizer, model_state: dict, optimizer_state: dict
) -> None:
    """Put back the state warm-up started from, writing into the tensors that exist now: a captured
    graph reads and writes those addresses. Optimizer state that warm-up created (SGD's momentum
    buffers of a fresh run) is zeroed, which for SGD is the same update as having none: the first
    step's buffer is then momentum * 0 + grad, what SGD starts a missing buffer at."""
    model.load_state_dict(model_state)  # copies into the existing parameters and buffers
    saved = optimizer_state["state"]
    params = [p for group in optimizer.param_groups for p in group["params"]]
    with torch.no_grad():
        for index, param in enumerate(params):
            for key, live in optimizer.state.get(param, {}).items():
                if not isinstance(live, torch.Tensor):
                    continue
                before = saved.get(index, {}).get(key)
                if before is None:
                    live.zero_()
                else:
                    live.copy_(before)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
