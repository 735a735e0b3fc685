"""`benchctl sweep`, as a library call: spec in, results directory out.

    from orchestrator.plan.spec import SweepSpec
    from orchestrator.run.sweep import run_sweep
    outcome = run_sweep(SweepSpec(models=("simple_cnn",), devices=("cpu",), epochs=2, max_steps=3))

Order of work: the data set is checked and the results directory claimed before Ray starts (an
existing --name or an unwritable --out is refused then); once Ray is up, a cell no node can hold
is refused and the directory removed again. Then Tune runs the grid and the driver-side writer
(tune_glue.ResultsWriter) rewrites each trial attempt's two Parquet files after every epoch.

`--resume` (same --name, same spec) instead reopens the directory: a spec that differs from the
stored one is refused with the differences named; trials with a successful attempt on disk are
left out of the grid; every file on disk is kept (a cut attempt's epochs too), new attempts continue
the numbering, and each cut trial continues from the latest epoch checkpoint its attempts left.

When Tune returns (a sweep or resume ran to its end, failed trials or not), the directory's files are
compacted (results.compact): one Parquet file per kind under compact/, the per-trial files kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import RUNTIME, BenchctlError
from orchestrator.lab import cluster
from orchestrator.lab.netns import private_network
from orchestrator.lab.provenance import driver_provenance
from orchestrator.plan import storage
from orchestrator.plan.dryrun import local_nodes
from orchestrator.plan.matrix import describe, param_space
from orchestrator.plan.planning import idle_note, plan_sweep
from orchestrator.plan.preflight import check_dataset, check_devices, check_storage
from orchestrator.plan.spec import Placement, SpecError, SweepSpec, TrialProcess
from orchestrator.plan.trial_plan import TrialPlan
from orchestrator.results.compact import compact, restore_trial_files
from orchestrator.results.files import ResultsError, write_json_atomic
from orchestrator.results.sweepstate import reopen
from orchestrator.run.diskspace import disk_full_stop, quiet_tune_disk_full, shortfall_note
from orchestrator.run.relayfs import start_store, storage_filesystem
from trainables.config import CheckpointPolicy, StartMethod


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
        raise SpecError(
            f"--name: {path} already exists; choose another --name, or add --resume to complete that sweep"
        )
    created = [p for p in (path, *path.parents) if not p.exists()][::-1]
    try:
        path.mkdir(parents=True)
    except OSError as exc:
        raise SpecError(f"--out: cannot create {path} ({exc.strerror}); choose a writable --out") from None
    return created


def _release(created: list[Path]) -> None:
    for path in reversed(created):
        path.rmdir()  # only ever empty here: nothing was written yet


def _shape(plan: TrialPlan) -> str:
    held, used = plan.resources, plan.cpus
    idle = f" ({used} used, the rest kept idle for Ray)" if held["CPU"] > used else ""
    share = " (Ray books 1 CPU, not what it uses)" if plan.placement is Placement.packed else ""
    return f"{plan.trial.device.value}: {describe(held)}{idle}{share}"


def _store_name(spec: SweepSpec) -> str | None:
    """On a cluster, Tune's storage is this node's disk reached through a Ray actor (relayfs.py says why),
    unless --storage names storage every node reaches itself (plan/storage.py)."""
    return f"benchctl-store-{spec.name}" if spec.cluster is not None and spec.storage is None else None


def _tune_storage(spec: SweepSpec, store_name: str | None) -> dict:
    """RunConfig's storage_path and storage_filesystem: --storage's, else results/NAME/.tune (relayed)."""
    if spec.storage is not None:
        fs, path = storage.location(spec.storage)
        return {"storage_path": path, "storage_filesystem": fs}
    fs = storage_filesystem(store_name) if store_name else None
    return {"storage_path": str((spec.results_dir / ".tune").resolve()), "storage_filesystem": fs}


def _with_run_settings(spec: SweepSpec, plans: list[TrialPlan], done) -> list[TrialPlan]:
    """The plans with how this run drives them: checkpoints on or off, the storage relay, and on a
    --resume with checkpoints the latest checkpoint an earlier run left for each unfinished trial."""
    carry_on = done is not None and spec.checkpoint
    restore = {t: path for t, (path, _) in done.checkpoints.items()} if carry_on else {}
    store = _store_name(spec)
    return [
        dataclasses.replace(p, checkpoint=spec.checkpoint_policy, restore=restore.get(p.trial.trial_id),
                            store=store, storage=spec.storage)  # fmt: skip
        for p in plans
    ]


def _reuse_actors(spec: SweepSpec) -> bool:
    """Whether Tune keeps a trial's Ray worker for the next trial of the same shape. A child trial's
    worker keeps its fork server or its spare child for the next: reuse it; a fresh child starts clean
    each time. An inline trial starts no process of its own: a new worker per trial only adds a Python
    start and Ray's imports to every trial (bench/scale_lab.py measured it: reports/scale-lab)."""
    return spec.trial_process is TrialProcess.inline or spec.start_method is not StartMethod.fresh


def _trials(n: int) -> str:
    return f"{n} trial{'s' * (n != 1)}"


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _sigterm_as_interrupt():
    """Treat SIGTERM like Ctrl-C while the sweep runs (main thread only; returns the old handler)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_interrupt)


def _session_dir() -> Path | None:
    """The folder (logs, sockets) of the Ray instance this process started, while Ray is up."""
    import ray

    try:  # no public API names it; Ray's own `ray.init` banner reads it from here too
        return Path(ray._private.worker._global_node.get_session_dir_path())
    except AttributeError:
        return None


def _remove_session(path: Path) -> None:
    """Remove a local sweep's Ray session folder, and Ray's `session_latest` link when it points there:
    every ray.init leaves one (~MBs of logs) under /tmp/ray or $RAY_TMPDIR, and nothing else reads it."""
    shutil.rmtree(path, ignore_errors=True)
    latest = path.parent / "session_latest"
    with contextlib.suppress(OSError):
        if latest.is_symlink() and Path(os.readlink(latest)).name == path.name:
            latest.unlink()


def _compact(results_dir: Path, echo: Callable[[str], None]) -> None:
    """Gather the finished sweep's files into results/NAME/compact/ (results.compact: a cache the
    readers use, the per-trial files stay), so that its report reads two files, not thousands. A sweep
    whose files cannot be compacted is not failed for it: it is only slower to read."""
    try:
        compact(results_dir)
    except (ResultsError, OSError) as exc:
        echo(f"benchctl: note: results not compacted ({exc}); `benchctl compact {results_dir}` retries")


def run_sweep(
    spec: SweepSpec,
    echo: Callable[[str], None] = print,
    keep_ray_logs: bool = False,
    on_plans: Callable[[list[TrialPlan], list[dict], tuple[int, int]], None] | None = None,
) -> SweepOutcome:
    """Run the sweep. A local sweep's Ray session folder is removed afterwards, refused or not, unless
    keep_ray_logs (a cluster's sessions live on its nodes and stay). `on_plans(plans, nodes, sizes)` is
    called once the trials are planned, before the first starts (the command says a long sweep's estimate)."""
    import ray
    from ray import tune

    from orchestrator.run.progress import Progress
    from orchestrator.run.tune_glue import ResultsWriter, trial_request, tune_trial

    done = reopen(spec) if spec.resume else None
    if spec.cluster is None and spec.devices is not None:  # no GPU here: said before a download or Ray
        check_devices(spec, local_nodes())  # plan_sweep checks it again on Ray's nodes
    sizes = check_dataset(spec, fetch=True, echo=echo)  # the checks `--dry-run` makes too (plan/preflight.py)
    check_storage(spec, write=True)  # --storage reachable and writable (a dry run only reaches it)
    # Claimed before Ray starts (an unwritable --out is a usage error), released if refused below.
    created = [] if spec.resume else _claim_results_dir(spec)
    results_dir = spec.results_dir

    # Ctrl-C (and SIGTERM) end the sweep at once: Ray is shut down in `finally`, which stops the
    # trials; attempts that had not finished are not written, finished ones are already on disk.
    # Tune's own SIGINT handler would instead return from fit() as if the sweep had completed.
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    previous_sigterm = _sigterm_as_interrupt()
    isolation = contextlib.ExitStack()  # closed after ray.shutdown(): Ray lives and dies inside it
    session = writer = None
    plans: list[TrialPlan] = []
    # with --storage the checkpoints land there, not on this disk (the relay writes them here)
    checkpoints_here = bool(spec.checkpoint) and spec.storage is None
    try:
        try:
            if spec.cluster is None and spec.isolate_network:
                # remote --storage is reached over the network, which the private namespace has not
                why_not = storage.network_needed(spec.storage) or isolation.enter_context(private_network())
                if why_not:
                    echo(
                        f"benchctl: note: local Ray listens on all interfaces ({why_not}); Ray's token "
                        "authentication guards it"
                    )
            address = cluster.connect(spec.cluster, spec.cluster_port)
            # a cluster's daemons run on its nodes, not ours to renice (trainables/priority.py)
            daemons = cluster.calm_local_daemons() if spec.cluster is None else None
            session = _session_dir() if spec.cluster is None and not keep_ray_logs else None
            # ray.init installs absl's failure handler for SIGTERM (a C++ stack dump, then death by the
            # signal): take SIGTERM back so that it ends the sweep like Ctrl-C, with exit 130
            _sigterm_as_interrupt()
            nodes = cluster.alive_nodes()
            # the same planning as --dry-run's (plan/planning.py); spec's devices resolved (spec.json's),
            # gpu cells refused without a GPU, every cell placeable
            planned = plan_sweep(spec, nodes, echo, skip=done.done if done else frozenset())
            spec, classes = planned.spec, planned.classes
            plans = _with_run_settings(spec, planned.plans, done)
        except BaseException:
            _release(created)  # a refused sweep leaves nothing behind
            raise
        where = ", ".join(f"{n['host']} ({describe(n['resources'])})" for n in nodes)
        if address and cluster.auth_required(address) is False:
            echo(cluster.NO_AUTH_WARNING.format(address=address))
        if done is not None:
            carried = [p for p in plans if p.restore]
            echo(
                f"benchctl: resuming {results_dir}: {_trials(len(done.done))} complete, {len(plans)} to run"
                + (f", {len(carried)} continuing from their checkpoints" if carried else "")
            )
            if not plans:
                return SweepOutcome(results_dir=results_dir, trials=0, failed=0, files=[])
        if classes:
            echo(
                "benchctl: hardware classes: "
                + ", ".join(
                    f"{c.name} ({len(c.node_ids)} node{'s' * (len(c.node_ids) > 1)})" for c in classes
                )
            )
        shapes = sorted({_shape(p) for p in plans})
        echo(f"benchctl: {_trials(len(plans))} on {where}; per trial {'; '.join(shapes)}")
        if note := idle_note(plans, nodes):  # the same note `--dry-run` prints
            echo(note)
        if spec.storage is not None or spec.checkpoint_policy != CheckpointPolicy():  # not the default
            echo(storage.describe(spec.checkpoint_policy, spec.storage))
        if on_plans is not None:
            on_plans(plans, nodes, sizes)
        if note := shortfall_note(results_dir, plans, checkpoints_here=checkpoints_here):
            echo(note)
        quiet_tune_disk_full()

        provenance = {**driver_provenance(), "ray_daemons": daemons}
        if done is None:
            write_json_atomic({"spec": spec.to_dict(), "provenance": provenance}, results_dir / "spec.json")
        else:  # the original spec.json stays; each resume adds its own provenance beside it
            restore_trial_files(results_dir)  # stored compact (reports/): its files back first
            runs = len(list(results_dir.glob("resume-*.json"))) + 1
            write_json_atomic(
                {"spec": spec.to_dict(), "provenance": provenance}, results_dir / f"resume-{runs}.json"
            )
        writer = ResultsWriter(results_dir, provenance, done.attempts if done else None, nodes)
        progress = Progress(plans)
        run_name = spec.name if done is None else f"{spec.name}-resume-{time.strftime('%Y%m%d-%H%M%S')}"
        store_name = _store_name(spec)
        store = start_store(store_name) if store_name else None  # lives as long as this handle
        tuner = tune.Tuner(
            tune.with_resources(tune_trial, resources=trial_request),
            param_space=param_space(plans),
            tune_config=tune.TuneConfig(reuse_actors=_reuse_actors(spec)),
            run_config=tune.RunConfig(
                name=run_name,
                **_tune_storage(spec, store_name),
                callbacks=[writer, progress],
                failure_config=tune.FailureConfig(max_failures=spec.max_failures),
                checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
                verbose=0,
            ),
        )
        with progress.running():  # the trials' phase board is up and the live display on meanwhile
            grid = tuner.fit()
        del store
    except Exception as exc:  # a full disk: one line and exit 2, what finished stays on disk (diskspace.py)
        if (full := disk_full_stop(exc, results_dir, plans, checkpoints_here, writer)) is None:
            raise
        raise full from None
    finally:
        ray.shutdown()
        isolation.close()
        if session is not None:
            _remove_session(session)
        if previous_sigterm is not None:
            signal.signal(signal.SIGTERM, previous_sigterm)
    _compact(results_dir, echo)
    failed = sum(1 for r in grid if r.error is not None)
    if failed == len(plans):
        raise BenchctlError(
            f"{'all ' * (failed > 1)}{_trials(failed)} failed; see {results_dir}/trials (column 'error')",
            exit_code=RUNTIME,
        )
    return SweepOutcome(results_dir=results_dir, trials=len(plans), failed=failed, files=writer.written)
