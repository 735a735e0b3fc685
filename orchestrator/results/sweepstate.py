"""What a sweep directory holds and planned: `--resume`'s Progress (`reopen`), the trials a spec plans
and those still unfinished, and whether several sweeps' conditions may be pooled in one report."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from orchestrator.plan.axes import AXES
from orchestrator.plan.presets import union_grids
from orchestrator.plan.spec import (
    SpecError,
    SweepSpec,
    condition_differences,
    conditions,
    read_stored_spec,
    spec_differences,
)
from orchestrator.plan.storage import checkpoint_location
from orchestrator.plan.study import CELL_AXES
from orchestrator.results.files import ResultsError, file_key, read_file
from orchestrator.results.reader import read_kind
from trainables.config import WORKERS, Pipeline, TrialConfig


@dataclass(frozen=True)
class Progress:
    """What a results directory already holds, for `--resume`."""

    done: frozenset[str]  # benchctl trial ids with a successful attempt
    attempts: dict[str, int]  # highest attempt number on disk per trial id
    orphans: tuple[Path, ...]  # epochs files whose attempt has no trials row (driver killed between)
    # unfinished trial id -> (its latest checkpoint: absolute path here, or scheme://..., epoch it follows)
    checkpoints: dict[str, tuple[str, int]] = field(default_factory=dict)


def _attempt_of(path: Path) -> int:
    return int(path.stem.rpartition("-a")[2])


def planned_configs(spec: dict) -> list[TrialConfig] | None:
    """The trials a sweep's spec asks for (the product of the grid's axes, orchestrator/plan/axes.py, of
    each grid a preset with cells unites: presets.union_grids), as TrialConfigs of what sets their ids,
    or None when they depend on the cluster (--per-class: classes found then) or the spec does not say
    (no devices, an unknown preset, or a value TrialConfig refuses)."""
    if spec.get("per_class"):
        return None
    # an axis added after the spec was stored (compiles) ran at its default
    stored = {a.spec_field: spec.get(a.spec_field, a.default.split(",") if a.default else None) for a in AXES}
    stored["workers"] = spec.get("workers", WORKERS)
    if not all(isinstance(stored[a.spec_field], list) for a in AXES) or not isinstance(
        spec.get("repeats"), int
    ):
        return None
    try:
        unions = union_grids(spec.get("preset"), {f: stored[f] for f in CELL_AXES})
        grids = [stored] if unions is None else [{**stored, **_as_stored(fields)} for fields in unions]
        names = [a.trial_field for a in AXES]
        return [
            TrialConfig(**dict(zip(names, combo, strict=True)), repeat=r, workers=grid["workers"])
            for grid in grids
            for combo in itertools.product(*(grid[a.spec_field] for a in AXES))
            for r in range(spec["repeats"])
        ]
    except (TypeError, ValueError):
        return None


def _as_stored(fields: dict) -> dict:
    return {k: [getattr(v, "value", v) for v in x] if isinstance(x, tuple) else x for k, x in fields.items()}


def planned_trials(spec: dict) -> list[str] | None:
    """The trial ids of planned_configs(spec), or None where it is None."""
    configs = planned_configs(spec)
    return None if configs is None else [c.trial_id for c in configs]


def ids_before_workers(spec: dict) -> dict[str, str]:
    """For a sweep run with other than WORKERS DataLoader workers (one grid, so every trial has them):
    the id each of its loader trials had before TrialConfig.cell named the workers -> its id now. Results
    such a sweep stored then count under their id now (a --resume, the report's unfinished trials)."""
    try:
        if union_grids(spec.get("preset"), None) is not None or spec.get("workers", WORKERS) == WORKERS:
            return {}
    except ValueError:  # a preset this benchctl does not know
        return {}
    configs = planned_configs(spec) or []
    return {
        dataclasses.replace(c, workers=WORKERS).trial_id: c.trial_id
        for c in configs
        if c.pipeline is Pipeline.loader
    }


def same_conditions(a: dict, b: dict) -> bool:
    """Whether two sweeps' specs ran trials under the same conditions (epochs, data size, steps, placement,
    ...): spec.condition_differences finds none (grid keys aside; a key only one has reads as what
    benchctl did before that option existed, as --resume reads it)."""
    return not condition_differences(a, b)


# Conditions recorded on every row (data_workers, cpus_allotted) whose trials the analysis keeps in
# separate cells (analysis/variants.py), so pooling them mixes nothing.
TOLD_APART = ("workers", "gpu_cpus")


@dataclass(frozen=True)
class Pooling:
    """How the conditions of several results directories compare (`pooling`)."""

    differing: dict[str, dict[str, object]]  # condition key -> {results dir, as given: its value}
    unknown: tuple[Path, ...]  # directories without a readable spec.json: conditions unknown

    def describe(self, quote: str = "") -> str:
        """`epochs (results/a: 3, results/b: 2); ...`: the keys that differ, each sweep's value (keys and
        directories wrapped in `quote`, e.g. a backtick for Markdown)."""
        return "; ".join(
            f"{quote}{key}{quote} ("
            + ", ".join(f"{quote}{name}{quote}: {value!r}" for name, value in per.items())
            + ")"
            for key, per in self.differing.items()
        )

    def note(self, several: bool, quote: str = "") -> str:
        """For the report: the conditions that differ between the pooled sweeps, and (`several` sweeps
        given) those whose conditions could not be compared; empty when neither applies."""
        parts = []
        if self.differing:
            apart = [k for k in self.differing if k in TOLD_APART]
            mixing = [k for k in self.differing if k not in TOLD_APART]
            parts.append(f"Pooled across different conditions (--pool): {self.describe(quote)}.")
            if mixing:
                parts.append(f"Cells mix trials run under different {', '.join(mixing)}." if apart
                             else "Cells mix trials run under these settings.")  # fmt: skip
            if apart:
                said = " and ".join(f"{quote}{k}{quote}" for k in apart)
                parts.append(f"Trials of different {said} are told apart, each cell by what fed it.")
        if self.unknown and several:
            names = ", ".join(f"{quote}{d}{quote}" for d in self.unknown)
            parts.append(f"Conditions unknown for {names} (no spec.json): not compared with the others.")
        return " ".join(parts)


def pooling(results_dirs: Iterable[Path], allow: bool = False) -> Pooling:
    """The condition keys on which the sweeps in `results_dirs` differ (each against the first one with a
    spec.json, by condition_differences), with every sweep's value, and the directories whose conditions
    cannot be known (no spec.json). Differing conditions raise ResultsError (exit 2) unless `allow`
    (report --pool): pooled silently, capped and full epochs or two data sizes would mix in one median."""
    specs = {Path(d): read_stored_spec(Path(d)) for d in results_dirs}
    known = {d: s for d, s in specs.items() if s is not None}
    first = next(iter(known.values()), None)
    keys = sorted({k for s in known.values() for k in condition_differences(first, s)})
    differing = {k: {str(d): conditions(s).get(k) for d, s in known.items()} for k in keys}
    pooled = Pooling(differing, tuple(d for d, s in specs.items() if s is None))
    if differing and not allow:
        raise ResultsError(
            f"these sweeps ran under different conditions: {pooled.describe()}; report each on its own, "
            "or pass --pool to pool them into one table anyway (the report then says what was pooled)"
        )
    return pooled


def unfinished_trials(results_dir: Path, trials: pd.DataFrame, others: Iterable[Path] = ()) -> list[str]:
    """Trial ids the sweep in `results_dir` planned (its spec.json) that have no successful attempt among
    `trials` of that sweep or of another sweep in `others` run under the same conditions (same_conditions:
    a sweep that re-ran a cut cell fills the gap; a 12,500-image sweep never fills a 50,000-image one's,
    since trial ids leave out epoch length and data size). Empty when the plan cannot be known."""
    spec = read_stored_spec(results_dir)
    if spec is None:
        return []
    planned = planned_trials(spec) or []
    if not trials.empty and "sweep" in trials:
        fillers = {spec.get("name")} | {
            o.get("name") for o in map(read_stored_spec, others) if o is not None and same_conditions(spec, o)
        }
        trials = trials[trials.sweep.isin(fillers)]
    ok = set(trials.loc[trials.status == "ok", "trial"]) if not trials.empty else set()
    ok |= {now for before, now in ids_before_workers(spec).items() if before in ok}
    return [t for t in planned if t not in ok]


def progress(results_dir: Path, storage: str | None = None) -> Progress:
    """Read the trials table (and the epochs files' names) of a sweep directory whose Tune storage is
    `storage` (its --storage; None: results_dir/.tune)."""
    trials = read_kind(results_dir, "trials")
    recorded = {file_key(t, int(a)) for t, a in zip(trials.trial, trials.attempt, strict=True)}
    renamed = ids_before_workers(read_stored_spec(results_dir) or {})
    if renamed and not trials.empty:  # stored before the cell named its workers: read under the id now
        trials = trials.assign(trial=trials.trial.map(lambda t: renamed.get(t, t)))
    ok = trials[trials.status == "ok"]
    attempts: dict[str, int] = {}
    for trial, attempt in zip(trials.trial, trials.attempt, strict=True):
        attempts[trial] = max(attempts.get(trial, 0), int(attempt))
    orphans = tuple(f for f in sorted((results_dir / "epochs").glob("*.parquet")) if f.stem not in recorded)
    for f in orphans:  # an orphan's attempt number stays taken: the retry gets the next one
        for trial in set(read_file(f, "epochs").column("trial").to_pylist()):
            trial = renamed.get(trial, trial)
            attempts[trial] = max(attempts.get(trial, 0), _attempt_of(f))
    return Progress(
        done=frozenset(ok.trial),
        attempts=attempts,
        orphans=orphans,
        checkpoints=_checkpoints(results_dir, trials, storage),
    )


def reopen(spec: SweepSpec) -> Progress:
    """For --resume (the sweep and its dry run): check the stored spec matches `spec` and read what is
    already complete. Raises SpecError naming what differs, or why the directory is no sweep."""
    path = spec.results_dir
    stored_file = path / "spec.json"
    if not stored_file.is_file():
        raise SpecError(f"--resume: {path} holds no sweep (no spec.json); run without --resume to start it")
    try:
        stored = json.loads(stored_file.read_text())["spec"]
    except (ValueError, KeyError, TypeError):
        raise SpecError(f"--resume: {stored_file} is not a benchctl spec file; start a new --name") from None
    changed = spec_differences(stored, spec)
    if changed:
        raise SpecError(
            f"--resume: {path} was run with a different spec ({'; '.join(changed)}); "
            "repeat the original options or choose a new --name"
        )
    try:
        return progress(path, spec.storage)
    except ResultsError as exc:
        raise SpecError(f"--resume: {exc}") from None


def _on_storage(storage: str | None, text: str) -> bool:
    """Whether the checkpoint a trials row names at remote storage (`s3://...`) is still there."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    if storage is None:
        return False
    try:
        fs, path = checkpoint_location(storage, text)
        return fs.get_file_info(path).type == pafs.FileType.Directory
    except (OSError, ValueError, pa.ArrowException):
        return False  # unreachable now: the trial starts again rather than the resume failing


def _checkpoints(results_dir: Path, trials: pd.DataFrame, storage: str | None) -> dict[str, tuple[str, int]]:
    """Per unfinished trial, the latest checkpoint its attempts left that is still there: on disk, or
    at remote --storage (its row names it `scheme://...`, kept as it is)."""
    if "checkpoint" not in trials or trials.empty:
        return {}
    done = set(trials.loc[trials.status == "ok", "trial"])
    out: dict[str, tuple[str, int]] = {}
    rows = trials[trials.checkpoint.notna() & ~trials.trial.isin(done)]
    for r in rows.sort_values(["checkpoint_epoch", "attempt"]).itertuples():
        if "://" in r.checkpoint:
            if _on_storage(storage, r.checkpoint):
                out[r.trial] = (r.checkpoint, int(r.checkpoint_epoch))
            continue
        path = results_dir.resolve() / r.checkpoint  # an absolute path stays as it is
        if path.is_dir():
            out[r.trial] = (str(path), int(r.checkpoint_epoch))
    return out
