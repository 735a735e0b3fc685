"""What a message tells the user to type next, and which options they gave have no effect.

    resume_command(Path("results/s1"))   # "benchctl sweep --resume --name s1"
    resume_command(Path("/tmp/r/s1"))    # "benchctl sweep --resume --name s1 --out /tmp/r"
    unused_options({"dataset": "cifar10", ...}, given={"train_size"})   # ["--train-size has no effect ..."]

A resume needs only --name (and --out when it is not the default): every other option comes from the
sweep's spec.json (orchestrator/commands/sweep.py), so that is the whole command.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from orchestrator.plan.options import option
from trainables.config import Pipeline


def resume_command(results_dir: Path) -> str:
    """The command that continues the sweep in `results_dir` (OUT/NAME): `--out` only where OUT is not
    the default (the same folder, relative or not)."""
    results_dir = Path(results_dir)
    words = ["benchctl", "sweep", "--resume", "--name", results_dir.name]
    out, default = results_dir.parent, option("out").default
    if out.resolve() != Path(default).resolve():
        words += ["--out", str(out)]
    return shlex.join(words)


def _dataset_words(dataset: str) -> str:
    return "folder data" if str(dataset).startswith("folder:") else f"--dataset {dataset}"


def unused_options(fields: dict, given: set[str]) -> list[str]:
    """One line per option the user gave (`given`: SweepSpec field names) that does nothing with the
    other settings (`fields`: SweepSpec fields, as the sweep will run): sizes of a data set that is what
    it is, DataLoader workers of a sweep without the loader pipeline, checkpoint rules without checkpoints."""
    lines = []
    dataset = fields.get("dataset") or option("dataset").default
    if dataset != "synthetic":
        for name in ("train_size", "test_size"):
            if name in given:
                lines.append(
                    f"{option(name).flag} has no effect with {_dataset_words(dataset)}: only synthetic "
                    "data is generated at a size"
                )
    pipelines = {Pipeline(p) for p in fields.get("pipelines") or ()}
    if "workers" in given and pipelines and Pipeline.loader not in pipelines:
        lines.append(
            "--workers has no effect with --pipeline resident: DataLoader workers serve the loader pipeline "
            "only"
        )
    if fields.get("checkpoint") is False:
        lines += [f"{option(name).flag} has no effect with --no-checkpoint: no trial checkpoints"
                  for name in ("checkpoint_every", "checkpoint_every_s") if name in given]  # fmt: skip
    return lines
