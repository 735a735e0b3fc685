"""The sweep as asked for: one frozen dataclass, validated before Ray starts.

    from orchestrator.plan.spec import SweepSpec
    spec = SweepSpec(models=("simple_cnn", "resnet18"), devices=("cpu",), epochs=2, max_steps=3)
    spec.trial_template()   # the TrialConfig fields every cell shares

Field rules are TrialConfig's (trainables/config.py); this adds the grid axes, where the results
go, and how the sweep runs. Every violation is a SpecError (orchestrator/plan/parse.py). Each field
is a `benchctl sweep` option, and its default is that option's (orchestrator/plan/options.py).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from orchestrator.plan import storage
from orchestrator.plan.axes import AXES, GRID_AXES
from orchestrator.plan.options import FIELD_DEFAULTS as _D
from orchestrator.plan.options import OPTIONS, RESUMABLE_FIELDS, Placement, TrialProcess, default_name
from orchestrator.plan.parse import SpecError, not_allowed
from orchestrator.plan.presets import PRESETS, Preset
from orchestrator.plan.study import CELL_AXES, CELL_CONDITIONS, kept
from trainables.config import (
    PAPER_MODELS,
    START_METHOD,
    CheckpointPolicy,
    Compile,
    Device,
    Pipeline,
    Precision,
    StartMethod,
    TrialConfig,
)
from trainables.sleep import is_sleep, sleep_seconds

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


# Spec fields that may differ between a sweep and its --resume: where and how it runs, not what it measures
# (`preset` is a label: the options it set are compared themselves). Options marked resumable in options.py.
RESUMABLE_CHANGES = RESUMABLE_FIELDS
# Spec fields a --resume must keep (its checkpoints lie there) that change nothing measured: no condition
KEPT_ON_RESUME = ("storage",)


@dataclass(frozen=True)
class SweepSpec:
    models: tuple[str, ...] = _D["models"]
    devices: tuple[Device, ...] | None = _D["devices"]  # None: the devices the nodes have (resolve_devices)
    batch_sizes: tuple[int, ...] = _D["batch_sizes"]
    pipelines: tuple[Pipeline, ...] = _D["pipelines"]
    precisions: tuple[Precision, ...] = _D["precisions"]
    compiles: tuple[Compile, ...] = _D["compiles"]  # eager (the paper's) and/or torch.compile'd steps
    repeats: int = _D["repeats"]  # seeds per cell: repeat r trains with seed + r
    epochs: int = _D["epochs"]
    dataset: str = _D["dataset"]
    data_dir: str = _D["data_dir"]  # "": trainables.config.default_data_dir()
    train_size: int = _D["train_size"]
    test_size: int = _D["test_size"]
    workers: int = _D["workers"]
    max_steps: int | None = _D["max_steps"]
    max_eval_steps: int | None = _D["max_eval_steps"]
    seed: int = _D["seed"]
    cpus_per_trial: int | None = _D["cpus_per_trial"]  # CPU cell allotment; None = matrix.resolve_allotment
    gpu_cpus: int | None = _D["gpu_cpus"]  # GPU cell allotment; None = 1 + DataLoader workers
    max_failures: int = _D["max_failures"]  # retries of a failed trial
    placement: Placement = _D["placement"]
    per_class: bool = _D["per_class"]  # one column per hardware class in the cluster, cells pinned to it
    uniform_cells: bool = _D["uniform_cells"]  # CPU cells sized to the largest node (else: plan/sizing.py)
    name: str = field(default_factory=default_name)
    out: Path = _D["out"]
    cluster: Path | None = _D["cluster"]
    cluster_port: int | None = _D["cluster_port"]  # the head's GCS port, overriding the cluster file's
    resume: bool = _D["resume"]  # run only the cells results/<name> does not hold complete yet
    isolate_network: bool = _D["isolate_network"]  # local runs: Ray in a private network namespace (netns.py)
    trial_process: TrialProcess = _D["trial_process"]
    # how a child trial starts (trainables/launch/); None: START_METHOD, or fresh for inline (no child)
    start_method: StartMethod | None = _D["start_method"]
    checkpoint: bool = _D["checkpoint"]  # trials' state persisted through Tune, so a cut trial resumes
    checkpoint_every: int | None = _D["checkpoint_every"]  # epochs between checkpoints (checkpoint_policy)
    checkpoint_every_s: float | None = _D["checkpoint_every_s"]  # seconds between checkpoints
    storage: str | None = _D["storage"]  # Tune's storage URI (plan/storage.py); None: the relay
    preset: Preset | None = _D["preset"]  # the --preset the options came from (a label; presets.py)

    def __post_init__(self) -> None:
        for size in ("train_size", "test_size"):
            if getattr(self, size) is None:  # a stored non-synthetic spec's (to_dict): not used by its data
                object.__setattr__(self, size, _D[size])
        for axis in AXES:
            name = axis.spec_field
            if axis.default is None and getattr(self, name) is None:
                continue  # resolved once the nodes are known (devices)
            if not getattr(self, name):
                raise SpecError(f"--{name.replace('_', '-')}: give at least one value")
            object.__setattr__(self, name, tuple(getattr(self, name)))
            if axis.choices is None:
                continue
            # library callers may pass plain strings; the CLI passes enums already
            try:
                object.__setattr__(self, name, tuple(axis.choices(v) for v in getattr(self, name)))
            except ValueError:
                choices = ", ".join(e.value for e in axis.choices)
                raise SpecError(f"--{name}: {getattr(self, name)} has a value not in {choices}") from None
        # library callers may pass plain strings; the CLI passes enums already
        for name, choice in (("trial_process", TrialProcess), ("start_method", StartMethod),
                             ("preset", Preset), ("placement", Placement)):  # fmt: skip
            value = getattr(self, name)
            if value is None and name in ("preset", "start_method"):
                continue  # no --preset: the options are the user's own; start_method: below
            try:
                object.__setattr__(self, name, choice(value))
            except ValueError:
                choices = ", ".join(e.value for e in choice)
                raise SpecError(
                    not_allowed(f"--{name.replace('_', '-')}", value, f"one of {choices}")
                ) from None
        if self.start_method is None:
            child = self.trial_process is TrialProcess.child
            object.__setattr__(self, "start_method", START_METHOD if child else StartMethod.fresh)
        elif self.start_method is not StartMethod.fresh and self.trial_process is TrialProcess.inline:
            raise SpecError(
                f"--start-method {self.start_method.value}: starts a child trial process; an inline trial "
                "has none (drop --start-method or use --trial-process child)"
            )
        self._check_models()
        self._check_storage()
        self._check_per_cell()
        if not _NAME_RE.match(self.name):
            rule = "1-100 letters, digits, '.', '_' or '-', starting with a letter or digit"
            raise SpecError(not_allowed("--name", self.name, rule))
        for name, low in (("repeats", 1), ("max_failures", 0), ("cpus_per_trial", 1), ("gpu_cpus", 1)):
            value = getattr(self, name)
            if value is None and name in ("cpus_per_trial", "gpu_cpus"):
                continue  # resolved later: matrix.resolve_allotment
            flag = f"--{name.replace('_', '-')}"
            if isinstance(value, bool) or not isinstance(value, int):
                raise SpecError(not_allowed(flag, value, "an integer"))
            if value < low:
                raise SpecError(not_allowed(flag, value, f"at least {low}"))
        if self.cluster_port is not None:
            if self.cluster is None:
                raise SpecError(
                    "--port: only means something with --cluster FILE; add --cluster or drop --port"
                )
            if isinstance(self.cluster_port, bool) or not 1 <= self.cluster_port <= 65535:
                raise SpecError(not_allowed("--port", self.cluster_port, "a TCP port, 1-65535"))
        try:  # every shared trial field is checked by TrialConfig's own rules
            for batch in self.batch_sizes:
                TrialConfig(model=self.models[0], batch_size=batch, **self.trial_template())
        except ValueError as exc:
            field_name, _, rule = str(exc).partition(": ")  # TrialConfig's messages: "field: ..."
            raise SpecError(f"--{field_name.replace('_', '-')}: {rule}") from None

    def _check_per_cell(self) -> None:
        """SpecError for an option beside a preset with cells (presets.py) that sets what its cells set
        each for itself (study.CELL_CONDITIONS), or axis values (study.CELL_AXES, which keep the cells
        with those values) that keep none of its cells."""
        preset = PRESETS[self.preset] if self.preset else None
        if preset is None or preset.cells is None:
            return
        for name in (n for n in CELL_CONDITIONS if getattr(self, n) != preset.settings[n]):
            flag = next(o.flag for o in OPTIONS if o.field == name)
            raise SpecError(
                f"{flag}: --preset {self.preset.value} sets it for each of its cells itself; drop {flag}, "
                f"or use --preset {Preset.paper.value} (one grid, which {flag} sets)"
            )
        given = {f: v for f in CELL_AXES if (v := getattr(self, f)) is not None and v != preset.settings[f]}
        if given and not kept(preset.cells, given):
            flag = {f: next(o.flag for o in OPTIONS if o.field == f) for f in given}
            named = ", ".join(flag[f] for f in given if f != "devices") or flag["devices"]
            on = f" on --devices {','.join(d.value for d in self.devices)}" if "devices" in given else ""
            raise SpecError(
                f"{named}: keep none of the cells of --preset {self.preset.value}{on} (orchestrator/plan/"
                f"study.py); drop {named}, or use --preset {Preset.paper.value} (one grid, which they set)"
            )

    def _check_storage(self) -> None:
        names = ("checkpoint_every", "checkpoint_every_s", "storage")
        try:
            settled = storage.settle(*(getattr(self, name) for name in names))
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        for name, value in zip(names, settled, strict=True):
            object.__setattr__(self, name, value)

    @property
    def checkpoint_policy(self) -> CheckpointPolicy | None:
        """After which epochs a trial checkpoints (trainables.config.CheckpointPolicy); None: never."""
        if not self.checkpoint:
            return None
        return CheckpointPolicy(every_epochs=self.checkpoint_every, every_s=self.checkpoint_every_s)

    def _check_models(self) -> None:
        """SpecError for a model name benchctl cannot build or that needs more than 32x32 input. The
        paper's models are benchctl's own grid and known good, so a spec of only those imports no torch:
        the report builds the default spec (conditions) and must not pay ~3 s and ~700 MB for it."""
        others = [m for m in self.models if m not in PAPER_MODELS and not is_sleep(m)]
        for model in set(self.models) - set(others) - set(PAPER_MODELS):
            try:
                sleep_seconds(model)
            except ValueError as exc:
                raise SpecError(f"--models: {str(exc).partition(': ')[2]}") from None
            if self.trial_process is not TrialProcess.inline:
                raise SpecError(
                    f"--models {model}: a sleep workload runs in the Ray worker only (trainables/sleep.py); "
                    "add --trial-process inline"
                )
        if not others:
            return
        # imported here, not at the top: the Ray trial process imports this module and never needs torch
        from trainables.models import UnknownModel, accepts_native_input, check_model_name

        for model in others:
            try:
                check_model_name(model)
            except UnknownModel as exc:
                raise SpecError(f"--models: {exc}") from None
            if not accepts_native_input(model):
                raise SpecError(
                    f"--models: {model} does not accept native 32x32 input; choose a model that does "
                    "(`benchctl models --all` marks them)"
                )

    def trial_template(self) -> dict:
        """TrialConfig fields shared by every cell (the grid axes and the CPU allotment excluded)."""
        return {
            "seed": self.seed,
            "epochs": self.epochs,
            "max_steps": self.max_steps,
            "max_eval_steps": self.max_eval_steps,
            "dataset": self.dataset,
            "data_dir": self.data_dir,
            "train_size": self.train_size,
            "test_size": self.test_size,
            "workers": self.workers,
        }

    @property
    def results_dir(self) -> Path:
        return self.out / self.name

    def to_dict(self) -> dict:
        return {
            **{a.spec_field: _stored_values(getattr(self, a.spec_field)) for a in AXES},
            "repeats": self.repeats,
            "cpus_per_trial": self.cpus_per_trial,
            "gpu_cpus": self.gpu_cpus,
            "max_failures": self.max_failures,
            "placement": self.placement.value,
            "trial_process": self.trial_process.value,
            "start_method": self.start_method.value,
            "checkpoint": self.checkpoint,
            "checkpoint_every": self.checkpoint_every,
            "checkpoint_every_s": self.checkpoint_every_s,
            "storage": self.storage,
            "per_class": self.per_class,
            "uniform_cells": self.uniform_cells,
            "name": self.name,
            "cluster": str(self.cluster) if self.cluster else None,
            "preset": self.preset.value if self.preset else None,
            **self.trial_template(),
            **_unused_sizes(self.dataset),
        }


def _stored_values(values: tuple | None) -> list | None:
    """An axis's values as spec.json stores them: a list, enums as their values (None: not resolved)."""
    return None if values is None else [v.value if isinstance(v, Enum) else v for v in values]


def _unused_sizes(dataset: str | None) -> dict:
    """train_size/test_size as null for a data set they do not size (only synthetic data is generated at
    a given size; cifar10 and folder:PATH are what they are), so spec.json never records sizes unused."""
    return {} if dataset in (None, "synthetic") else {"train_size": None, "test_size": None}


# what sweeps stored before a field existed did, where that differs from the field's default
_BEFORE_FIELD = {
    "trial_process": TrialProcess.inline.value,
    "start_method": StartMethod.fresh.value,
    "uniform_cells": True,  # CPU cells sized to the largest node (plan/sizing.py came with issue 35)
}


@functools.cache
def _before_fields() -> dict:
    """What a stored spec that lacks a key ran with: the field's default, or `_BEFORE_FIELD`'s value where
    benchctl did something else before the field existed."""
    return {**SweepSpec(name="defaults").to_dict(), **_BEFORE_FIELD}


def conditions(stored: dict) -> dict:
    """The conditions a stored spec (spec.json's "spec") ran its trials under: every key but GRID_AXES and
    RESUMABLE_CHANGES. A key it lacks (written before the option existed) reads as what benchctl did then,
    so adding an option never makes old results unresumable or unpoolable."""
    before = _before_fields()
    keys = (before.keys() | stored.keys()) - {*GRID_AXES, *RESUMABLE_CHANGES, *KEPT_ON_RESUME}
    out = {key: stored.get(key, before.get(key)) for key in sorted(keys)}
    # specs stored before sizes were nulled carry synthetic sizes for any data set: read them as unused
    return {**out, **_unused_sizes(out.get("dataset"))}


def condition_differences(a: dict, b: dict) -> dict[str, tuple]:
    """The condition keys (`conditions`) on which two stored specs differ, each as (a's value, b's value);
    empty when their trials ran under the same conditions. The one comparison behind both --resume
    (spec_differences) and report's pooling (results.same_conditions)."""
    ca, cb = conditions(a), conditions(b)
    return {k: (ca.get(k), cb.get(k)) for k in sorted(ca.keys() | cb.keys()) if ca.get(k) != cb.get(k)}


def spec_differences(stored: dict, spec: SweepSpec) -> list[str]:
    """What a --resume changes against the sweep's stored spec, as `field: old -> new` (empty: same):
    its grid (GRID_AXES; --devices not given means the stored ones) and its conditions."""
    now = spec.to_dict()
    if spec.devices is None:  # resolve_devices takes the stored devices
        del now["devices"]
    before = _before_fields()
    grid = {k: (stored.get(k, before.get(k)), now[k]) for k in (*GRID_AXES, *KEPT_ON_RESUME) if k in now}
    changed = {k: v for k, v in grid.items() if v[0] != v[1]} | condition_differences(stored, now)
    return [f"{key}: {old!r} -> {new!r}" for key, (old, new) in sorted(changed.items())]


def read_stored_spec(results_dir: Path) -> dict | None:
    """The spec a sweep's spec.json stores (its "spec"), or None without a readable one."""
    try:
        stored = json.loads((Path(results_dir) / "spec.json").read_text(encoding="utf-8"))["spec"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return stored if isinstance(stored, dict) else None


def resume_fields(stored: dict) -> dict:
    """SweepSpec fields as a stored spec (spec.json's "spec") ran them, for `--resume --name NAME` with no
    other option: a key it lacks (written before the option existed) reads as what benchctl did then."""
    names = {f.name for f in dataclasses.fields(SweepSpec)} - {"name", "out", "resume"}
    merged = {**_before_fields(), **stored}
    out = {k: v for k, v in merged.items() if k in names and (k in stored or k in _BEFORE_FIELD)}
    for key in GRID_AXES:
        if isinstance(out.get(key), list):
            out[key] = tuple(out[key])
    if out.get("cluster"):
        out["cluster"] = Path(out["cluster"])
    return out


def resolve_devices(spec: SweepSpec, nodes: list[dict], echo: Callable[[str], None]) -> SweepSpec:
    """The spec with its devices settled, once the Ray nodes (cluster.alive_nodes) are known. Without
    --devices: on --resume the devices the sweep's spec.json holds, else cpu, plus gpu when a node has a
    GPU in Ray's books; said in one line, so the user knows what ran. Given devices stay as they are (a gpu
    no node has is refused later, by the placement check)."""
    if spec.devices is not None:
        return spec
    if spec.resume:
        stored_file = spec.results_dir / "spec.json"
        stored = json.loads(stored_file.read_text(encoding="utf-8"))["spec"]  # reopen checked it reads
        if not isinstance(stored.get("devices"), list) or not stored["devices"]:
            raise SpecError(f"--resume: {stored_file} names no devices; give --devices as the sweep ran")
        devices = tuple(stored["devices"])
        why = f"as {stored_file} has them"
    else:
        gpus = sum(float(n["resources"].get("GPU", 0)) for n in nodes)
        where = "this machine" if spec.cluster is None else "the cluster"
        devices = (Device.cpu.value, Device.gpu.value) if gpus else (Device.cpu.value,)
        why = f"{gpus:g} GPU(s) on {where}" if gpus else f"no GPU on {where}"
    echo(f"benchctl: --devices not given: running {','.join(devices)} ({why})")
    return dataclasses.replace(spec, devices=devices)
