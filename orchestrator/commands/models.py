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
    typer.echo(f"{'model':<22} {'params':>14}  32x32 input")
    if not all_models:  # the paper's three, from a table (torch costs seconds to import; the test recounts)
        from orchestrator.analysis.flops_table import PAPER_PARAMS

        for name, count in PAPER_PARAMS.items():
            typer.echo(f"{name:<22} {count:>14,}  yes")
        typer.echo("(any torchvision classification model also works: `benchctl models --all`)")
        return
    # counting every torchvision classifier needs torch: only --all pays for importing it
    from trainables.models import accepts_native_input, available_models, param_count

    for name in available_models():
        ok = "yes" if accepts_native_input(name) else "no (needs larger images)"
        typer.echo(f"{name:<22} {param_count(name):>14,}  {ok}")
