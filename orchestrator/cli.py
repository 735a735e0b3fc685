"""The `benchctl` command line: one module per subcommand under orchestrator/commands/.

    benchctl sweep --dataset synthetic --epochs 2      # or: python -m orchestrator sweep ...
    benchctl report results/<name>
    benchctl models
    benchctl cluster status --cluster cluster/lab.yaml

Commands only parse options, build the spec and call library code. A BenchctlError becomes one
line on stderr and its exit code (2: bad input, 1: failure while running); Ctrl-C exits 130.
`--debug` shows the traceback instead.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated

import typer

from orchestrator.errors import BenchctlError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Measure GPU-vs-CPU training speedups as models grow, on Ray Tune.",
)
_state = {"debug": False}


@app.callback()
def _main(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors.")
    ] = False,
) -> None:
    _state["debug"] = debug


def user_errors(fn):
    """Turn BenchctlError into `benchctl: error: ...` + its exit code, Ctrl-C into exit 130."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BenchctlError as exc:
            if _state["debug"]:
                raise
            typer.echo(f"benchctl: error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("benchctl: interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper


def _register() -> None:
    from orchestrator.commands import cluster, models, report, sweep

    app.command("sweep")(user_errors(sweep.sweep))
    app.command("report")(user_errors(report.report))
    app.command("models")(user_errors(models.models))
    for command in cluster.app.registered_commands:  # wrap each before it is bound
        command.callback = user_errors(command.callback)
    app.add_typer(cluster.app, name="cluster")


_register()


def main() -> None:
    app(prog_name="benchctl")


if __name__ == "__main__":
    sys.exit(main())
