"""A plain PyTorch training loop: no Ray, no orchestrator, no benchctl timing code.

    python bench/plain_loop.py --model resnet18 --device gpu --batch-size 128 --pipeline loader \
        --workers 2 --threads 2 --epochs 3 --train-size 50000

It is the yardstick for fidelity (bench/fidelity.py): benchctl's steady-state images/s for a cell
must be within 0.97-1.03 of this loop's on the same machine. It shares benchctl's model and data
code on purpose (trainables.models, trainables.data: the same network, the same DataLoader and
transforms), so the ratio isolates what Ray, the orchestrator and the per-step timing marks add.
Each epoch is timed as a whole: synchronize, loop, synchronize. Prints one JSON line per epoch, with
the host's CPU load over it (trainables.energy.host_load, read outside the timed region), so a slow
epoch can be told apart from a host whose hypervisor took its CPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a bare checkout

from trainables.affinity import parse_cores  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--device", choices=("cpu", "gpu"), required=True)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--pipeline", choices=("loader", "resident"), default="loader")
    p.add_argument("--precision", choices=("fp32", "amp"), default="fp32")
    p.add_argument("--compile", choices=("off", "on"), default="off",
                   help="on: benchctl's compiled step (trainables.compiled.TrainStep), built before epoch 1")
    p.add_argument("--graphs", choices=("inductor", "step"), default="inductor",
                   help="compiled GPU step: Inductor's reduce-overhead graphs (benchctl's), or the whole "
                   "step as one CUDA graph (trainables.compiled.Graphs.step, not yet in benchctl's cells)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, required=True, help="torch intra-op threads")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--train-size", type=int, default=50_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cores", default=None, help="pin to these cores first, taskset-style (e.g. 0-3,8)")
    args = p.parse_args(argv)
    if args.cores:  # the cores a partitioned benchctl trial was pinned to: same cores, same conditions
        os.sched_setaffinity(0, parse_cores(args.cores))

    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # same as a benchctl cpu trial
    import torch

    from trainables.config import TrialConfig
    from trainables.data import make_source, synthetic_arrays
    from trainables.energy import host_load, read_cpu_times
    from trainables.models import build_model

    torch.set_num_threads(args.threads)
    device = torch.device("cuda", 0) if args.device == "gpu" else torch.device("cpu")
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    torch.manual_seed(args.seed)
    # TrialConfig only describes the data pipeline here; nothing of benchctl's trial loop runs.
    cfg = TrialConfig(
        model=args.model,
        device=args.device,
        batch_size=args.batch_size,
        pipeline=args.pipeline,
        workers=args.workers,
        train_size=args.train_size,
        test_size=1,
        seed=args.seed,
        precision=args.precision,
        compile=args.compile,
    )
    arrays = synthetic_arrays(args.train_size, 1, args.seed)
    model = build_model(args.model).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss()
    source = make_source(arrays, cfg, device, train=True)  # compiled: full batches only, as in benchctl
    from trainables.compiled import Graphs, TrainStep

    # benchctl's step (trainables.compiled): eager is the paper's loop, `on` the compiled one
    train_step = TrainStep(model, loss_fn, opt, cfg, device, graphs=Graphs(args.graphs))
    if train_step.compiled:
        print(json.dumps({"compile_s": train_step.warm_up(), **train_step.info()}), flush=True)

    for epoch in range(1, args.epochs + 1):
        model.train()
        images = 0
        if device.type == "cuda":
            torch.cuda.synchronize()
        load_start = read_cpu_times()
        t0 = time.perf_counter()
        for step, (x, y) in enumerate(source):
            if args.max_steps is not None and step >= args.max_steps:
                break
            train_step(x, y)
            images += len(y)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        busy, steal = host_load(load_start, read_cpu_times())
        row = {"epoch": epoch, "images": images, "seconds": seconds, "images_per_s": images / seconds}
        print(json.dumps({**row, "host_busy_pct": busy, "host_steal_pct": steal}), flush=True)


if __name__ == "__main__":
    main()
