"""How long a planned sweep will take, before it runs: each trial's duration and the sweep's, with the source.

    est = estimate(plans, nodes, sizes=(50_000, 10_000), out=Path("results"))
    est.trials["simple_cnn/cpu/bs128/loader/fp32/r0"].total_s     # seconds, start-up included
    est.total_s, est.source_line()                                 # the sweep, and where the rates came from

A trial's rate (training images/s) comes from, in this order:

1. this machine's earlier runs: every sweep under `--out`, epoch rows of the same cell (its values of every
   axis, plan/axes.py) run on this host's CPU model (cpu) or GPU model (gpu), those with the same
   core count first; the median images/s of their steady epochs, and of their test passes;
2. else KNOWN_RATES: images/s measured in the committed reports, scaled to the model by its training FLOPs
   (analysis/flops_table.py) when the model was not measured, and for a CPU cell linearly by its cores. That
   is a rough estimate (a 2-core host and a 16-core Xeon differ in more than cores), and says so.

A trial takes STARTUP_S + its epochs x (training images / rate + test images / (EVAL_SPEEDUP x rate)); the
sweep, per pool of alike trials (device), their total over the trials a pool runs side by side, the pools one
after another (in the default `exclusive` placement a CPU cell holds the node, so nothing runs beside it).
Nothing here trains, imports torch or starts Ray.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from orchestrator.analysis.flops_table import train_flops
from orchestrator.plan.axes import AXES, Kind
from orchestrator.plan.matrix import _fits
from orchestrator.plan.trial_plan import TrialPlan
from trainables.config import EVAL_BATCH_SIZE, Device

LONG_SWEEP_S = 15 * 60  # a sweep estimated longer than this is announced up front, with how to shorten it


@dataclass(frozen=True)
class Rate:
    """Training images/s measured for one cell on one machine (a committed report's number)."""

    model: str
    device: str  # cpu | gpu
    pipeline: str
    batch_size: int
    images_per_s: float
    cores: int  # a CPU cell's torch threads + DataLoader workers (gpu: unused)
    where: str  # the machine, and the report the number is from


_H200_CPU = "H200 VM's 16-vCPU Xeon, reports/h200/README.md (50,000-image epochs)"
_H200_GPU = "H200, reports/h200/README.md (50,000-image epochs)"
_DEV = "2-core dev VM, reports/cpu-split/README.md"
KNOWN_RATES = (
    Rate("simple_cnn", "cpu", "loader", 128, 3268, 15, _H200_CPU),  # 15.3 s per epoch
    Rate("simple_cnn", "cpu", "resident", 128, 4673, 15, _H200_CPU),  # 10.7 s
    Rate("resnet18", "cpu", "loader", 128, 2451, 15, _H200_CPU),  # 20.4 s
    Rate("resnet18", "cpu", "resident", 128, 3401, 15, _H200_CPU),  # 14.7 s
    Rate("resnet50", "cpu", "loader", 128, 888, 15, _H200_CPU),  # 56.3 s
    Rate("resnet50", "cpu", "resident", 128, 996, 15, _H200_CPU),  # 50.2 s
    # the 2-core dev VM, 1 thread + 1 worker: the first example's steady epochs (median of 6, load 0.8-3.6)
    # and bench/cpu_split.py's resnet18 rounds (load 3.6-5)
    Rate("simple_cnn", "cpu", "loader", 128, 265, 2, _DEV),
    Rate("resnet18", "cpu", "loader", 128, 170, 2, _DEV),
    Rate("simple_cnn", "gpu", "loader", 128, 12_400, 0, _H200_GPU),
    Rate("simple_cnn", "gpu", "resident", 128, 31_000, 0, _H200_GPU),
    Rate("resnet18", "gpu", "loader", 128, 9_350, 0, _H200_GPU),
    Rate("resnet18", "gpu", "resident", 128, 20_200, 0, _H200_GPU),
    Rate("resnet50", "gpu", "loader", 128, 12_000, 0, _H200_GPU),
    Rate("resnet50", "gpu", "resident", 128, 13_100, 0, _H200_GPU),
)
# Outside the epochs, per trial: start (imports, data set, model) and Tune's bookkeeping; about 10 s on the
# 2-core dev VM with a warm data cache (reports/trial-start: a start itself is ~2.4 s), more for a cold one.
STARTUP_S = 10.0
EVAL_SPEEDUP = 3.0  # a test pass is forward only, ~1/3 of a training step's FLOPs (declared, not measured)


@dataclass(frozen=True)
class TrialEstimate:
    epoch_s: float  # one epoch: training pass + test pass
    total_s: float  # start-up + every epoch
    source: str  # "runs" (this machine's earlier runs) or "FLOPs" (FLOPs x a known rate)


@dataclass(frozen=True)
class SweepEstimate:
    trials: dict[str, TrialEstimate]  # trial_id -> estimate
    total_s: float
    matched: int  # trials whose rate came from this machine's earlier runs
    rates_from: tuple[str, ...]  # the KNOWN_RATES machines used, for the source line

    def source_line(self) -> str:
        n = len(self.trials)
        if n and self.matched == n:
            return "from this machine's earlier runs of these cells"
        machines = " and the ".join(self.rates_from)
        rough = f"FLOPs x images/s measured on the {machines}, scaled by cores: rough"
        if not self.matched:
            return f"no earlier runs of these cells here; {rough}"
        return f"{self.matched} of {n} trials from earlier runs here, the rest {rough}"


def epoch_images(plan: TrialPlan, sizes: tuple[int, int]) -> tuple[int, int]:
    """(training images, test images) one epoch of the trial runs through (step caps applied)."""
    cfg = plan.trial
    train, test = sizes
    full = train // cfg.batch_size if cfg.drop_last else math.ceil(train / cfg.batch_size)
    steps = min(full, cfg.max_steps or full)
    train_images = min(train, steps * cfg.batch_size)
    test_images = test if cfg.max_eval_steps is None else min(test, cfg.max_eval_steps * EVAL_BATCH_SIZE)
    return train_images, test_images


def _known_rate(plan: TrialPlan) -> tuple[float, str]:
    """(images/s, where measured) for `plan` from KNOWN_RATES: the same model if measured, else the measured
    model nearest in FLOPs scaled by their FLOPs ratio; the same pipeline, the nearest core count and batch
    size first; a CPU cell scaled by its cores over the measured cell's."""
    cfg = plan.trial
    same_device = [r for r in KNOWN_RATES if r.device == cfg.device.value]
    flops = train_flops(cfg.model)

    def rank(r: Rate):
        cores = abs(math.log(r.cores / plan.cpus)) if cfg.device is Device.cpu else 0
        batch = abs(math.log(r.batch_size / cfg.batch_size))
        return (r.model != cfg.model, abs(math.log(train_flops(r.model) / flops)),
                r.pipeline != cfg.pipeline.value, cores, batch)  # fmt: skip

    best = min(same_device, key=rank)
    rate = best.images_per_s * train_flops(best.model) / flops
    if cfg.device is Device.cpu:
        rate *= plan.cpus / best.cores
    return rate, best.where


def _history(out: Path | None) -> dict[tuple, list]:
    """Steady epochs of this machine's earlier runs under `out`, keyed by (cell, device_name)."""
    if out is None or not Path(out).is_dir():
        return {}
    dirs = [d for d in sorted(Path(out).iterdir()) if (d / "spec.json").is_file() and (d / "epochs").is_dir()]
    if not dirs:
        return {}
    from orchestrator.results.files import ResultsError
    from orchestrator.results.reader import read_kind  # pandas: only when there are runs
    from orchestrator.results.rows import with_cell_defaults

    columns = (*(a.trial_field for a in AXES), "device_name", "cpus_allotted", "warmup", "restored",
               "images_per_s", "eval_images", "eval_s")  # fmt: skip
    try:
        rows = with_cell_defaults(read_kind(dirs, "epochs", columns))
    except (ResultsError, OSError):
        return {}
    rows = rows[~rows.warmup.fillna(False).astype(bool) & ~rows.restored.fillna(False).astype(bool)]
    out_rows: dict[tuple, list] = defaultdict(list)
    for r in rows.itertuples(index=False):
        out_rows[(*_cell(r), r.device_name)].append(r)
    return out_rows


def _cell(row) -> tuple:
    """The cell of an epoch row or a TrialConfig, as _history keys it: each axis's value (plan.axes.AXES),
    numbers as int, enums as their values."""
    values = ((a, getattr(row, a.trial_field)) for a in AXES)
    return tuple(int(v) if a.kind is Kind.ints else getattr(v, "value", v) for a, v in values)


def _from_history(plan: TrialPlan, history: dict, cpu: str, gpus: list[str]) -> tuple[float, float] | None:
    """(training images/s, test images/s) of this cell on this host's CPU or GPU, or None."""
    cfg = plan.trial
    names = [cpu] if cfg.device is Device.cpu else gpus
    rows = [r for n in names for r in history.get((*_cell(cfg), n), [])]
    if not rows:
        return None
    same_cores = [r for r in rows if r.cpus_allotted == plan.cpus]
    rows = same_cores or rows
    train = statistics.median(r.images_per_s for r in rows)
    evals = [r.eval_images / r.eval_s for r in rows if r.eval_s and r.eval_images]
    return train, statistics.median(evals) if evals else EVAL_SPEEDUP * train


def _slots(plan: TrialPlan, nodes: list[dict]) -> int:
    """How many trials like `plan` the nodes hold at once (at least 1)."""
    need = plan.resources
    total = 0
    for n in nodes:
        have = n["resources"]
        if _fits(need, have):
            total += int(min(have.get(k, 0) // v for k, v in need.items() if v))
    return max(1, total)


def estimate(
    plans: list[TrialPlan],
    nodes: list[dict],
    sizes: tuple[int, int],
    out: Path | None,
    cpu_model: str | None = None,
    gpu_models: list[str] | None = None,
) -> SweepEstimate:
    """Each trial's and the sweep's estimated seconds (module docstring). `sizes`: the data set's (train,
    test) images; `out`: where earlier sweeps are; cpu_model/gpu_models: this host's (read when None)."""
    from trainables import hostinfo

    cpu = cpu_model if cpu_model is not None else hostinfo.cpu_model()
    gpus = gpu_models if gpu_models is not None else hostinfo.gpu_models()
    history = _history(out)
    trials, rates_from = {}, {}
    pools: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for plan in plans:
        train_images, test_images = epoch_images(plan, sizes)
        seen = _from_history(plan, history, cpu, gpus)
        if seen is not None:
            train_rate, eval_rate, source = *seen, "runs"
        else:
            train_rate, where = _known_rate(plan)
            eval_rate, source = EVAL_SPEEDUP * train_rate, "FLOPs"
            rates_from[where.split(",")[0]] = None
        epoch_s = train_images / train_rate + test_images / eval_rate
        total = STARTUP_S + plan.trial.epochs * epoch_s
        trials[plan.trial.trial_id] = TrialEstimate(epoch_s, total, source)
        pools[plan.where].append((total, _slots(plan, nodes)))
    total_s = sum(sum(t for t, _ in pool) / min(s for _, s in pool) for pool in pools.values())
    matched = sum(t.source == "runs" for t in trials.values())
    return SweepEstimate(trials, total_s, matched, tuple(rates_from))


def duration(seconds: float) -> str:
    """`45 s`, `12 min`, `2 h 10 min`: an estimate's precision."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def long_sweep_note(est: SweepEstimate) -> str | None:
    """The one line a sweep prints up front when it is estimated to take over LONG_SWEEP_S, else None."""
    if est.total_s <= LONG_SWEEP_S:
        return None
    return (
        f"benchctl: note: this sweep is estimated to take ~{duration(est.total_s)} ({est.source_line()}; "
        "`--dry-run` shows each trial); shorten it with fewer --models or --epochs, a smaller --train-size "
        "(synthetic) or --max-steps"
    )
