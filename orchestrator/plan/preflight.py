"""What a sweep checks before it plans or trains, in one place: `sweep` and `sweep --dry-run` both call these.

    sizes = check_dataset(spec, fetch=False)   # (train, test) images; SpecError "--dataset: ..."
    check_devices(spec, nodes)                 # SpecError "no GPU found on any node ..." for gpu cells
    check_storage(spec, write=True)            # BenchctlError "--storage: ...": unreachable, unwritable

`check_dataset` runs before Ray starts: a folder is listed (trainables/datacheck.py: no torch, nothing
decoded); cifar10 is downloaded by a sweep (`fetch`) and only looked for by a dry run. `check_devices`
runs once the nodes are known (this machine's, or Ray's) and --devices is settled: planning.plan_sweep
calls it, so gpu cells where no node has a GPU are refused, naming the option or preset that asked for
them, on the one planning path a dry run, a sweep and a resume share. A dry run that passes these and
plan_sweep is a sweep that starts.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.plan import storage
from orchestrator.plan.matrix import describe
from orchestrator.plan.presets import PRESETS
from orchestrator.plan.spec import SpecError, SweepSpec
from trainables.config import Device, TrialConfig
from trainables.datacheck import DatasetUnavailable, cifar10_present, dataset_sizes


def check_dataset(spec: SweepSpec, *, fetch: bool, echo: Callable[[str], None] = print) -> tuple[int, int]:
    """(train images, test images) of the sweep's data set (one for every cell). SpecError when it is not
    there. `fetch`: download cifar10 when missing (a sweep); else only say that the sweep would."""
    cfg = TrialConfig(model=spec.models[0], **spec.trial_template())
    try:
        if fetch and cfg.dataset == "cifar10":
            from trainables.data import check_available  # torch: a sweep imports it anyway

            check_available(cfg)
        elif cfg.dataset == "cifar10" and not cifar10_present(cfg.resolved_data_dir()):
            echo(
                f"benchctl: note: cifar10 is not in {cfg.resolved_data_dir()} yet; the sweep downloads it "
                "first (~170 MB; or give --dataset folder:PATH)"
            )
        return dataset_sizes(cfg)
    except DatasetUnavailable as exc:
        raise SpecError(f"--dataset: {exc}") from None


def _nodes_line(nodes: list[dict]) -> str:
    if not nodes:
        return "no alive nodes"
    have = [(n["host"], n["resources"].get("CPU", 0), n["resources"].get("GPU", 0)) for n in nodes]
    return "; ".join(f"{host}: {describe({'CPU': cpus})}, {gpus:g} GPUs" for host, cpus, gpus in have)


def _who_asked(spec: SweepSpec) -> str:
    """The option that put gpu cells in the sweep: --resume's stored spec, a --preset, or --devices."""
    if spec.resume:
        return f"{spec.results_dir}/spec.json (--resume) has gpu cells: resume it where a node has a GPU"
    preset = PRESETS[spec.preset].settings.get("devices") if spec.preset else None
    if preset is not None and tuple(preset) == tuple(spec.devices):
        return f"--preset {spec.preset.value} asks for gpu cells: add --devices cpu"
    rest = [d.value for d in spec.devices if d is not Device.gpu]
    fix = f"use --devices {','.join(rest)}" if rest else "use --devices cpu"
    return f"--devices {','.join(d.value for d in spec.devices)} asks for gpu cells: {fix}"


def check_devices(spec: SweepSpec, nodes: list[dict]) -> None:
    """SpecError when the sweep asks for gpu cells and no node has a GPU (devices settled already)."""
    if spec.devices and Device.gpu in spec.devices and not any(n["resources"].get("GPU") for n in nodes):
        raise SpecError(f"no GPU found on any node ({_nodes_line(nodes)}); {_who_asked(spec)}")


def check_storage(spec: SweepSpec, *, write: bool) -> None:
    """--storage (plan/storage.py): reachable from this machine and, with `write` (a sweep; a dry run
    writes nothing), writable; a new sweep's folder there not taken. One line, exit 2, before Ray starts.
    Whether every node reaches it too, Tune itself checks when the sweep starts."""
    if spec.storage is not None:
        storage.check(spec.storage, spec.name, write=write, resume=spec.resume)
