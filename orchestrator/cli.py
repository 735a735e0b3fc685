"""The `benchctl` command line: one module per subcommand under orchestrator/commands/.

    benchctl sweep --dataset synthetic --epochs 2      # or: python -m orchestrator sweep ...
    benchctl report results/<name>
    benchctl models
    benchctl cluster status --cluster cluster/lab.yaml
    benchctl cache list                                 # data sets built once per machine; cache clean

Commands only parse options, build the spec and call library code. A BenchctlError becomes one
line on stderr and its exit code (2: bad input, 1: failure while running); Ctrl-C exits 130.
`--debug` (before or after the subcommand) adds the traceback and keeps the exit code.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

try:  # Typer 0.2x vendors click as typer._click; its exceptions are not the `click` package's
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # older Typer on top of click
    from click.exceptions import NoArgsIsHelpError, UsageError

from orchestrator.errors import BenchctlError


class _OneLineErrors(TyperGroup):
    """Typer's own usage errors (a value that is not an integer, an unknown choice or option) as one
    `benchctl: error:` line with exit 2, like benchctl's own, instead of Typer's framed box."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        args = list(sys.argv[1:] if args is None else args)
        # --debug is global but belongs anywhere on the line (`benchctl sweep --debug ...` too): taken out
        # here, since click only knows it before the subcommand; nothing after `--` is an option
        end = args.index("--") if "--" in args else len(args)
        _state["debug"] = "--debug" in args[:end]
        args = [a for a in args[:end] if a != "--debug"] + args[end:]
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except BenchctlError as exc:  # re-raised by user_errors under --debug: traceback, same exit code
            traceback.print_exc()
            typer.echo(f"benchctl: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except NoArgsIsHelpError as exc:  # bare `benchctl`: the help, as before
            exc.show()
            sys.exit(0)
        except UsageError as exc:
            if (message := _not_a_number(exc)) is None:
                where = f"{exc.ctx.command_path}: " if exc.ctx is not None else ""
                message = where + " ".join(exc.format_message().split()).replace("Value error, ", "")
            typer.echo(f"benchctl: error: {message} (see --help)", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:  # Ctrl-C while click itself was running (e.g. a prompt)
            typer.echo("benchctl: interrupted", err=True)
            sys.exit(130)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


_KINDS = {"int_parsing": "an integer", "float_parsing": "a number", "int_from_float": "an integer"}


def _not_a_number(exc: UsageError) -> str | None:
    """Typer's "Invalid value for '--epochs': Input should be a valid integer, ..." in benchctl's own
    wording (plan.parse.not_allowed): `--epochs: 'x' is not allowed; must be an integer`; None for any
    other usage error. Typer keeps the offending text in the pydantic error it was raised from."""
    opts = getattr(getattr(exc, "param", None), "opts", None)
    errors = getattr(exc.__cause__, "errors", None)
    try:
        first = errors()[0] if opts and callable(errors) else {}
    except Exception:  # noqa: BLE001 - a cause of another shape: keep Typer's message
        return None
    kind = _KINDS.get(first.get("type"))
    if kind is None:
        return None
    from orchestrator.plan.parse import not_allowed

    return not_allowed(max(opts, key=len), str(first.get("input")), kind)


app = typer.Typer(
    cls=_OneLineErrors,
    add_completion=True,  # Typer's --install-completion / --show-completion
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Measure GPU-vs-CPU training speedups as models grow, on Ray Tune.",
)
_state = {"debug": False}


def version_text() -> str:
    """`benchctl X (commit C), results schema S`: the package's version, the checkout's commit
    ("unknown" outside a git checkout) and the schema of the Parquet files it writes."""
    from importlib.metadata import PackageNotFoundError, version

    from orchestrator.results.schema import SCHEMA_VERSION  # not results.files: that one imports pandas

    root = Path(__file__).resolve().parent.parent
    try:
        number = version("benchctl")
    except PackageNotFoundError:  # run from a checkout on PYTHONPATH, not installed: pyproject says it
        pyproject = root / "pyproject.toml"
        text = pyproject.read_text() if pyproject.is_file() else ""
        number = next(
            (ln.split('"')[1] for ln in text.splitlines() if ln.startswith("version = ")), "unknown"
        )
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip() or "unknown"  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return f"benchctl {number} (commit {commit}), results schema {SCHEMA_VERSION}"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_text())
        raise typer.Exit(0)


@app.callback()
def _main(
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Add the traceback to an error (also after the subcommand)."),
    ] = False,
    version: Annotated[
        bool | None,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Version, commit, schema; exit."
        ),
    ] = None,
) -> None:
    pass  # --debug is read in _OneLineErrors.main, wherever it stands on the line


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
    from orchestrator.commands import cache, cluster, compare, models, report, sweep

    app.command("sweep")(user_errors(sweep.sweep))
    app.command("report")(user_errors(report.report))
    app.command("compare")(user_errors(compare.compare))
    app.command("models")(user_errors(models.models))
    from orchestrator.commands import compact, ls

    app.command("ls")(user_errors(ls.ls))
    app.command("compact")(user_errors(compact.compact))
    for command in cluster.app.registered_commands:  # wrap each before it is bound
        command.callback = user_errors(command.callback)
    app.add_typer(cluster.app, name="cluster")
    for command in cache.app.registered_commands:
        command.callback = user_errors(command.callback)
    app.add_typer(cache.app, name="cache")


_register()


def main() -> None:
    app(prog_name="benchctl")


if __name__ == "__main__":
    sys.exit(main())
