"""`benchctl sweep`: run the models x devices (x batch, pipeline, precision, repeat) grid on Ray Tune.

benchctl sweep --dataset synthetic --epochs 2      # the devices this machine has (cpu, gpu if any)
benchctl sweep --preset paper --dataset folder:/tmp/cifar   # the paper's study on a local CIFAR-10 export
benchctl sweep --models simple_cnn,resnet18 --devices cpu --epochs 2 --max-steps 3 --batch-size 32
benchctl sweep --cluster cluster/lab.yaml --batch-size 128,512 --pipeline loader,resident
benchctl sweep --name lab1 --resume                # after a crash: runs only the cells not complete yet
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.errors import RUNTIME, BenchctlError
from orchestrator.plan.hints import resume_command, unused_options
from orchestrator.plan.options import OPTIONS, Option, fields_given
from orchestrator.plan.parse import parse_axis
from orchestrator.plan.presets import preset_fields
from orchestrator.plan.spec import SweepSpec


def _given(ctx: typer.Context) -> set[str]:
    """The sweep parameters the user gave (on the command line or through the environment), not defaults:
    only those override a --preset."""
    return {
        name
        for name in ctx.params
        if (source := ctx.get_parameter_source(name)) is not None
        and source.name not in ("DEFAULT", "DEFAULT_MAP")
    }


def _stored_options(results_dir: Path, given: set[str]) -> dict:
    """For --resume: the SweepSpec fields spec.json stores whose option the user did not give (`given`:
    field names)."""
    from orchestrator.plan.spec import read_stored_spec, resume_fields

    stored = read_stored_spec(results_dir)
    if stored is None:  # reopen says what is wrong with the folder
        return {}
    return {k: v for k, v in resume_fields(stored).items() if k not in given}


def spec_fields(values: dict[str, Any]) -> dict[str, Any]:
    """Each SweepSpec field from its option's value as typer parsed it (orchestrator/plan/options.py): an
    axis's comma list parsed into its tuple, the rest as the option's row turns it into the field's type."""
    out = {}
    for o in OPTIONS:
        value = values[o.param]
        if o.field is None:
            continue
        if o.axis is not None:
            out[o.field] = None if value is None else parse_axis(o.axis, value)
        else:
            out[o.field] = value if o.to_field is None else o.to_field(value)
    return out


def _parameter(o: Option) -> inspect.Parameter:
    """The typer parameter of an option: its type, default and help, the default stated once at the end
    (as typer would, but in the table's words: what a default of None means, on/off for a flag)."""
    kind = o.type if o.default is not None else o.type | None
    return inspect.Parameter(
        o.param,
        inspect.Parameter.KEYWORD_ONLY,
        default=o.default,
        annotation=Annotated[
            kind, typer.Option(help=f"{o.help}  [default: {o.shown_default}]", show_default=False)
        ],
    )


def _estimate_dry_run(out: Path, run) -> tuple[dict[str, str], list[str]]:
    """A dry run's estimate (analysis/estimate.py): each trial's time, and the sweep's with its source."""
    from orchestrator.analysis.estimate import duration, estimate

    est = estimate(run.planned.plans, run.nodes, run.sizes, out)
    cells = {tid: f"{duration(t.total_s)} ({t.source})" for tid, t in est.trials.items()}
    return cells, [f"benchctl: estimate: ~{duration(est.total_s)} for the sweep ({est.source_line()})"]


def _say_if_long(out: Path, plans, nodes, sizes) -> None:
    """Before a sweep's first trial: one line when it is estimated to take over ~15 minutes."""
    from orchestrator.analysis.estimate import estimate, long_sweep_note

    try:
        note = long_sweep_note(estimate(plans, nodes, sizes, out))
    except Exception as exc:  # an estimate never stops a sweep
        note = f"benchctl: note: no time estimate ({type(exc).__name__}: {exc})"
    if note:
        typer.echo(note)


def sweep(ctx: typer.Context, **values: Any) -> None:
    """Run the sweep on Ray Tune; results land in OUT/NAME as Parquet."""
    if values["resume"] and not values["name"]:
        raise BenchctlError("--resume: name the sweep to complete with --name NAME")
    given = fields_given(_given(ctx))
    fields = spec_fields(values)
    if values["resume"]:  # spec.json's options fill in what the user did not give; reopen refuses changes
        fields.update(_stored_options(fields["out"] / fields["name"], given))
    if values["preset"] is not None:  # the preset fills in what the user did not give
        fields.update(preset_fields(values["preset"], given=given))
    spec = SweepSpec(**fields)
    for line in unused_options({"dataset": spec.dataset, "pipelines": spec.pipelines,
                                "checkpoint": spec.checkpoint}, given):  # fmt: skip
        typer.echo(f"benchctl: warning: {line}", err=True)
    if values["dry_run"]:
        from orchestrator.plan import dryrun
        from orchestrator.results.sweepstate import reopen  # --resume: what is already complete

        dryrun.dry_run(
            spec,
            echo=typer.echo,
            done=reopen(spec).done if spec.resume else None,
            estimator=functools.partial(_estimate_dry_run, spec.out),
        )
        return
    from orchestrator.run.sweep import run_sweep  # Ray and pandas behind it: not for --help or a refusal

    try:
        outcome = run_sweep(
            spec,
            echo=typer.echo,
            keep_ray_logs=values["keep_ray_logs"],
            on_plans=functools.partial(_say_if_long, spec.out),
        )
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (run_sweep takes it as one)
        if not (spec.results_dir / "spec.json").is_file():  # stopped before it began: nothing to resume
            raise
        typer.echo(f"benchctl: interrupted; continue it with: {resume_command(spec.results_dir)}", err=True)
        raise typer.Exit(130) from None
    typer.echo(f"benchctl: results in {outcome.results_dir}; next: benchctl report {outcome.results_dir}")
    if outcome.failed:
        raise BenchctlError(
            f"{outcome.failed} of {outcome.trials} trial{'s' * (outcome.trials != 1)} failed; "
            f"see {outcome.results_dir}/trials",
            exit_code=RUNTIME,
        )


# typer reads a command's parameters from its signature: one per row of orchestrator/plan/options.py, so a new
# option is a row there, not another parameter here
sweep.__signature__ = inspect.Signature(
    [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        *(_parameter(o) for o in OPTIONS),
    ]
)
