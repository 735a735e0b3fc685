"""`benchctl models`: the model registry with exact parameter counts (for 10 classes).

benchctl models          # the paper's three
benchctl models --all    # every torchvision classifier too, marking those that need >32 px input
"""

from __future__ import annotations

from typing import Annotated

import typer


def models(
    all_models: Annotated[
        bool, typer.Option("--all", help="Also list every torchvision classification model (slower).")
    ] = False,
) -> None:
    """List models by name with their exact parameter counts."""
    # torch is needed to count parameters, so only this command pays for importing it (not --help)
    from trainables.models import PAPER_MODELS, accepts_native_input, available_models, param_count

    names = available_models() if all_models else PAPER_MODELS
    typer.echo(f"{'model':<22} {'params':>14}  32x32 input")
    for name in names:
        ok = "yes" if accepts_native_input(name) else "no (needs larger images)"
        typer.echo(f"{name:<22} {param_count(name):>14,}  {ok}")
    if not all_models:
        typer.echo("(any torchvision classification model also works: `benchctl models --all`)")
