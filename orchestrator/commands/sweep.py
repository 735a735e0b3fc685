"""`benchctl sweep`: run the models x devices (x batch, pipeline, precision, repeat) grid on Ray Tune.

benchctl sweep --dataset synthetic --epochs 2      # the devices this machine has (cpu, gpu if any)
benchctl sweep --preset paper --dataset folder:/tmp/cifar   # the paper's study on a local CIFAR-10 export
benchctl sweep --models simple_cnn,resnet18 --devices cpu --epochs 2 --max-steps 3 --batch-size 32
benchctl sweep --cluster cluster/lab.yaml --batch-size 128,512 --pipeline loader,resident
benchctl sweep --name lab1 --resume                # after a crash: runs only the cells not complete yet
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import RUNTIME, BenchctlError
from orchestrator.plan.axes import AXES
from orchestrator.plan.presets import PRESETS, Preset, preset_fields
from orchestrator.plan.spec import Placement, SweepSpec, TrialProcess, default_name, parse_axis
from trainables import config as d
from trainables.launch.isolated import StartMethod


def _given(ctx: typer.Context) -> set[str]:
    """The sweep parameters the user gave (on the command line or through the environment), not defaults:
    only those override a --preset."""
    return {
        name
        for name in ctx.params
        if (source := ctx.get_parameter_source(name)) is not None
        and source.name not in ("DEFAULT", "DEFAULT_MAP")
    }


# the `benchctl sweep` parameter of each SweepSpec field whose name differs (beside presets.option_of's)
_PARAM_OF = {"cluster_port": "port", "isolate_network": "network_isolation"}


def _stored_options(results_dir: Path, given: set[str]) -> dict:
    """For --resume: the SweepSpec fields spec.json stores whose option the user did not give."""
    from orchestrator.plan.presets import option_of
    from orchestrator.plan.spec import read_stored_spec, resume_fields

    stored = read_stored_spec(results_dir)
    if stored is None:  # reopen says what is wrong with the folder
        return {}
    return {k: v for k, v in resume_fields(stored).items() if _PARAM_OF.get(k, option_of(k)) not in given}


def _with_axis_options(command):
    """Give `command` one option per grid axis (orchestrator/plan/axes.py), after --preset: typer reads a
    function's signature, so the options are added to it and their values arrive in `**axes`. A new
    axis is then a row of that table, not another parameter here."""
    signature = inspect.signature(command, eval_str=True)  # typer evaluates the annotations the same way
    params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    options = [
        inspect.Parameter(
            a.param,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=a.default,
            annotation=Annotated[str if a.default is not None else str | None, typer.Option(help=a.help)],
        )
        for a in AXES
    ]
    at = [p.name for p in params].index("preset") + 1
    command.__signature__ = signature.replace(parameters=[*params[:at], *options, *params[at:]])
    return command


@_with_axis_options
def sweep(
    ctx: typer.Context,
    preset: Annotated[
        Preset | None,
        typer.Option(
            help="Named settings; options given beside it override it. "
            + "; ".join(f"{p.value}: {PRESETS[p].about}" for p in Preset)
            + "."
        ),
    ] = None,
    epochs: Annotated[int, typer.Option(help="Epochs per trial; epoch 1 is warm-up.")] = d.EPOCHS,
    repeats: Annotated[int, typer.Option(help="Repeats per cell (seeds seed..seed+N-1).")] = 1,
    dataset: Annotated[str, typer.Option(help="synthetic, cifar10 or folder:PATH (train/ and test/).")] = (
        "synthetic"
    ),
    data_dir: Annotated[Path | None, typer.Option(help="Where cifar10 is (or is downloaded to).")] = None,
    workers: Annotated[int, typer.Option(help="DataLoader worker processes (loader pipeline).")] = d.WORKERS,
    max_steps: Annotated[
        int | None, typer.Option(help="Cap training steps per epoch; epoch time is extrapolated (marked).")
    ] = None,
    max_eval_steps: Annotated[
        int | None, typer.Option(help="Cap test-pass steps (accuracy marked partial).")
    ] = None,
    train_size: Annotated[int, typer.Option(help="Synthetic training images.")] = d.TRAIN_SIZE,
    test_size: Annotated[int, typer.Option(help="Synthetic test images.")] = d.TEST_SIZE,
    seed: Annotated[int, typer.Option(help="Base seed.")] = d.SEED,
    cpus_per_trial: Annotated[
        int | None,
        typer.Option(help="CPU cores per CPU cell (default: all cores of the largest node)."),
    ] = None,
    gpu_cpus: Annotated[
        int | None, typer.Option(help="CPU cores per GPU cell (default: 1 + DataLoader workers).")
    ] = None,
    max_failures: Annotated[
        int, typer.Option(help="Retries of a trial whose process crashed or whose node died.")
    ] = 1,
    placement: Annotated[
        Placement,
        typer.Option(
            help="How trials share nodes: exclusive (fair, default), partitioned (disjoint pinned cores), "
            "packed (fast, unfair: smoke runs)."
        ),
    ] = Placement.exclusive,
    trial_process: Annotated[
        TrialProcess,
        typer.Option(
            help="Where each trial's loop runs: child (a fresh process under the Ray trial, default) or "
            "inline (in the Ray worker; slower on launch-bound cells, kept for comparison)."
        ),
    ] = TrialProcess.child,
    start_method: Annotated[
        StartMethod | None,
        typer.Option(
            help="How a child trial process starts: prestarted (a new Python per trial, started and "
            "importing before the trial asks for it; the default), fresh (a new Python started when the "
            "trial starts) or forkserver (forked from a per-worker server that imported torch once). "
            "prestarted and forkserver reuse Ray workers.",
            show_default=False,
        ),
    ] = None,
    checkpoint: Annotated[
        bool,
        typer.Option(
            help="Persist each epoch's state through Ray Tune, so a retried or resumed trial continues "
            "after its last finished epoch."
        ),
    ] = True,
    per_class: Annotated[
        bool,
        typer.Option(
            help="One column per hardware class in the cluster (GPU model; CPU model + cores), cells pinned "
            "to nodes of that class."
        ),
    ] = False,
    network_isolation: Annotated[
        bool,
        typer.Option(
            help="Local runs as root: Ray in a private network namespace, so none of its ports is reachable "
            "from other machines (Ray 2.60 cannot bind them to loopback)."
        ),
    ] = True,
    resume: Annotated[
        bool, typer.Option(help="Complete OUT/NAME with its stored options; runs only cells not done.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option(help="List the planned trials and where each can run; start nothing.")
    ] = False,
    keep_ray_logs: Annotated[
        bool, typer.Option(help="Keep a local sweep's Ray session folder (logs); default: removed.")
    ] = False,
    out: Annotated[Path, typer.Option(help="Parent directory of results.")] = Path("results"),
    name: Annotated[str | None, typer.Option(help="Results go to OUT/NAME (default: a timestamp).")] = None,
    cluster: Annotated[
        Path | None, typer.Option(help="Ray cluster file (cluster/lab.yaml); default: a local Ray.")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="The head's GCS port (default: from the cluster file, else 6379).")
    ] = None,
    **axes: str | None,  # one option per grid axis (_with_axis_options): the text given, or its default
) -> None:
    """Run the sweep on Ray Tune; results land in OUT/NAME as Parquet."""
    if resume and not name:
        raise BenchctlError("--resume: name the sweep to complete with --name NAME")
    fields = dict(
        **{a.spec_field: None if axes[a.param] is None else parse_axis(a, axes[a.param]) for a in AXES},
        repeats=repeats,
        epochs=epochs,
        dataset=dataset,
        data_dir=str(data_dir) if data_dir else "",
        train_size=train_size,
        test_size=test_size,
        workers=workers,
        max_steps=max_steps,
        max_eval_steps=max_eval_steps,
        seed=seed,
        cpus_per_trial=cpus_per_trial,
        gpu_cpus=gpu_cpus,
        max_failures=max_failures,
        placement=placement,
        per_class=per_class,
        name=name or default_name(),
        out=out,
        cluster=cluster,
        cluster_port=port,
        resume=resume,
        isolate_network=network_isolation,
        trial_process=trial_process,
        start_method=start_method,
        checkpoint=checkpoint,
        preset=preset,
    )
    if resume:  # spec.json's options fill in what the user did not give; reopen refuses what differs
        fields.update(_stored_options(out / fields["name"], _given(ctx)))
    if preset is not None:  # the preset fills in what the user did not give
        fields.update(preset_fields(preset, given=_given(ctx)))
    spec = SweepSpec(**fields)
    if dry_run:
        from orchestrator.plan import dryrun
        from orchestrator.results.sweepstate import reopen  # --resume: what is already complete

        dryrun.dry_run(spec, echo=typer.echo, done=reopen(spec).done if spec.resume else None)
        return
    from orchestrator.run.sweep import run_sweep  # Ray and pandas behind it: not for --help or a refusal

    outcome = run_sweep(spec, echo=typer.echo, keep_ray_logs=keep_ray_logs)
    typer.echo(f"benchctl: results in {outcome.results_dir}; next: benchctl report {outcome.results_dir}")
    if outcome.failed:
        raise BenchctlError(
            f"{outcome.failed} of {outcome.trials} trial{'s' * (outcome.trials != 1)} failed; "
            f"see {outcome.results_dir}/trials",
            exit_code=RUNTIME,
        )
