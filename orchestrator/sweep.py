"""`benchctl sweep`, as a library call: spec in, results directory out.

    from orchestrator.spec import SweepSpec
    from orchestrator.sweep import run_sweep
    outcome = run_sweep(SweepSpec(models=("simple_cnn",), devices=("cpu",), epochs=2, max_steps=3))

Order of work: the data set is checked and the results directory claimed before Ray starts (an
existing --name or an unwritable --out is refused then); once Ray is up, a cell no node can hold
is refused and the directory removed again. Then Tune runs the grid and the driver-side writer
lands one Parquet file per trial attempt.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator import cluster
from orchestrator.errors import RUNTIME, BenchctlError
from orchestrator.matrix import (
    cpus_used,
    describe,
    expand,
    param_space,
    resolve_allotment,
    trial_resources,
)
from orchestrator.matrix import unplaceable as find_unplaceable
from orchestrator.provenance import driver_provenance
from orchestrator.results import write_json_atomic
from orchestrator.spec import SpecError, SweepSpec
from trainables.config import TrialConfig
from trainables.data import DatasetUnavailable, check_available


@dataclass(frozen=True)
class SweepOutcome:
    results_dir: Path
    trials: int
    failed: int
    files: list[Path]


def _claim_results_dir(spec: SweepSpec) -> list[Path]:
    """Create results/<name>, refusing an existing one (two sweeps never mix in one directory).
    Returns the directories it created, deepest last, so a refused sweep can remove exactly those."""
    path = spec.results_dir
    if path.exists():
        raise SpecError(f"--name: {path} already exists; choose another --name (or remove that directory)")
    created = [p for p in (path, *path.parents) if not p.exists()][::-1]
    try:
        path.mkdir(parents=True)
    except OSError as exc:
        raise SpecError(f"--out: cannot create {path} ({exc.strerror}); choose a writable --out") from None
    return created


def _release(created: list[Path]) -> None:
    for path in reversed(created):
        path.rmdir()  # only ever empty here: nothing was written yet


def _shape(config: dict) -> str:
    held, used = trial_resources(config), cpus_used(config)
    idle = f" ({used} used, the rest kept idle for Ray)" if held["CPU"] > used else ""
    return f"{config['device']}: {describe(held)}{idle}"


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _sigterm_as_interrupt():
    """Treat SIGTERM like Ctrl-C while the sweep runs (main thread only; returns the old handler)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_interrupt)


def run_sweep(spec: SweepSpec, echo: Callable[[str], None] = print) -> SweepOutcome:
    import ray
    from ray import tune

    from orchestrator.tune_glue import Progress, ResultsWriter, tune_trial

    try:  # the data set is shared by every cell, so any cell's config can check it
        check_available(TrialConfig(model=spec.models[0], **spec.trial_template()))
    except DatasetUnavailable as exc:
        raise SpecError(f"--dataset: {exc}") from None
    # Claimed before Ray starts (an unwritable --out is a usage error), released if refused below.
    created = _claim_results_dir(spec)
    results_dir = spec.results_dir

    # Ctrl-C (and SIGTERM) end the sweep at once: Ray is shut down in `finally`, which stops the
    # trials; attempts that had not finished are not written, finished ones are already on disk.
    # Tune's own SIGINT handler would instead return from fit() as if the sweep had completed.
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    previous_sigterm = _sigterm_as_interrupt()
    try:
        try:
            cluster.connect(spec.cluster)
            nodes = cluster.alive_nodes()
            alloc = resolve_allotment(spec, [int(n["resources"].get("CPU", 0)) for n in nodes])
            configs = expand(spec, alloc)
            problem = find_unplaceable(configs, nodes)
            if problem:
                raise SpecError(problem)
        except BaseException:
            _release(created)  # a refused sweep leaves nothing behind
            raise
        where = ", ".join(f"{n['host']} ({describe(n['resources'])})" for n in nodes)
        shapes = sorted({_shape(c) for c in configs})
        echo(f"benchctl: {len(configs)} trials on {where}; per trial {'; '.join(shapes)}")

        provenance = driver_provenance()
        write_json_atomic({"spec": spec.to_dict(), "provenance": provenance}, results_dir / "spec.json")
        writer = ResultsWriter(results_dir, provenance)
        progress = Progress(total=len(configs))
        tuner = tune.Tuner(
            tune.with_resources(tune_trial, resources=trial_resources),
            param_space=param_space(spec, alloc),
            tune_config=tune.TuneConfig(reuse_actors=False),
            run_config=tune.RunConfig(
                name=spec.name,
                storage_path=str((results_dir / ".tune").resolve()),
                callbacks=[writer, progress],
                failure_config=tune.FailureConfig(max_failures=spec.max_failures),
                verbose=0,
            ),
        )
        grid = tuner.fit()
    finally:
        ray.shutdown()
        if previous_sigterm is not None:
            signal.signal(signal.SIGTERM, previous_sigterm)
    failed = sum(1 for r in grid if r.error is not None)
    if failed == len(configs):
        raise BenchctlError(
            f"all {failed} trials failed; see {results_dir}/trials (column 'error')", exit_code=RUNTIME
        )
    return SweepOutcome(results_dir=results_dir, trials=len(configs), failed=failed, files=writer.written)
