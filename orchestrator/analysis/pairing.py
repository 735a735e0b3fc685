"""Which CPU cell is compared with which GPU cell when a configuration ran on several hardware classes.

    from orchestrator.analysis.stats import cell_summary
    from orchestrator.analysis.speedups import speedup_table
    from orchestrator.analysis import pairing
    pairing.class_pairs(group)          # group: the cell_summary rows of one PAIR key
    table = speedup_table(epochs)       # calls class_pairs for each PAIR key
    pairing.several_classes(table)      # some configuration on both devices has 2+ CPU or GPU classes
    pairing.several_pairs(table)        # True when the table compares 2+ (CPU class, GPU class) pairs
    for key, gpus, cpus, at in pairing.speedup_matrices(table): ...   # at[(gpu, cpu)] -> table row

Pure functions over the tables of orchestrator.analysis.stats (no I/O). Definitions:
    hardware class  a cell's hw_class (orchestrator.lab.hardware): "gpu:H200", "cpu:EPYC-7763-64c";
                    "" when unknown (schema-1 results, a node without a class). "" is a class of its own.
    class pairs     for one (model, batch_size, pipeline, precision), every CPU class x every GPU class:
                    with c CPU classes and g GPU classes there are c * g pairs (c, or g, when the other
                    side was not measured: that side is None), each compared as a plain CPU/GPU pair.
                    Cells of different classes are never pooled, so a fast and a slow CPU give two
                    speedups, not one from a mix of both.
    matrix          per (model, batch_size, pipeline, precision) measured on both devices: GPU classes as
                    rows, CPU classes as columns, the speedup_table row of each (gpu, cpu) pair.
"""

from __future__ import annotations

import math

import pandas as pd

from orchestrator.results.rows import PAIR as _PAIR  # noqa: E402  (the one cell-key definition)
from orchestrator.results.rows import with_cell_defaults

PAIR = list(_PAIR)  # the settings a CPU and a GPU cell must share: the cell key but the device
UNKNOWN_CLASS = "unknown class"  # how "" (a class that was not recorded) is shown
# a speedup_table row's variant (analysis.variants.VARIANT) on each side: data_workers, cpus_allotted
VARIANT_COLUMNS = ["cpu_workers", "cpu_cpus", "gpu_workers", "gpu_cpus"]


def class_pairs(cells: list[dict]) -> list[tuple[dict | None, dict | None]]:
    """(cpu cell, gpu cell) for every CPU class x every GPU class among `cells` (the variant cells of one
    PAIR key as records, analysis.variants: one per device, hw_class and variant), CPU cell outer, each
    side ordered by class name, then workers and CPUs; a device without a cell gives [(cpu, None), ...]
    or [(None, gpu), ...]."""

    def order(c: dict) -> tuple:
        return (str(c.get("hw_class", "")), *(c.get(k, -1) for k in ("data_workers", "cpus_allotted")))

    def side(device: str) -> list[dict | None]:
        return sorted((c for c in cells if c["device"] == device), key=order) or [None]

    return [(cpu, gpu) for cpu in side("cpu") for gpu in side("gpu") if cpu is not None or gpu is not None]


def class_label(name) -> str:
    """A class name for display: "gpu:H200" as is, "" / null as UNKNOWN_CLASS."""
    return UNKNOWN_CLASS if name is None or pd.isna(name) or not str(name) else str(name)


def pair_label(cpu_class, gpu_class) -> str:
    """A hardware pair for display: "gpu:H200 vs cpu:EPYC-7763-64c"; a side without a class is left out
    ("gpu:H200"), and with neither the result is UNKNOWN_CLASS."""
    names = [_name(gpu_class), _name(cpu_class)]
    return " vs ".join(n for n in names if n) or UNKNOWN_CLASS


def hw_pairs(table: pd.DataFrame) -> list[tuple[str, str]]:
    """The distinct (cpu_class, gpu_class) of the speedup_table rows that have a speedup, sorted; [] for
    tables without class columns."""
    if table.empty or not {"cpu_class", "gpu_class", "speedup"} <= set(table.columns):
        return []
    both = table[pd.to_numeric(table["speedup"], errors="coerce").notna().to_numpy()]
    return sorted({(_name(r.cpu_class), _name(r.gpu_class)) for r in both.itertuples()})


def several_pairs(table: pd.DataFrame) -> bool:
    """True when the table compares more than one hardware pair (hw_pairs): names and figure labels then
    carry the pair (pair_label)."""
    return len(hw_pairs(table)) > 1


def _name(value) -> str:
    return "" if value is None or pd.isna(value) else str(value)


def _classes(rows: list, device: str) -> list[str]:
    """The distinct `device`_class values of the rows (itertuples rows) measured on that device (n > 0),
    sorted."""
    col, n = f"{device}_class", f"{device}_n"
    if not rows or not hasattr(rows[0], col):
        return []
    measured = [r for r in rows if not hasattr(r, n) or _count(getattr(r, n)) > 0]
    return sorted({_name(getattr(r, col)) for r in measured})


def _count(value) -> float:
    """A count as a number: 0 where it is null or not a number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(number) else number


def several_variants(table: pd.DataFrame) -> bool:
    """True when some configuration and hardware pair of a speedup_table has 2+ rows: a side's cells were
    fed 2+ ways (workers, CPUs: VARIANT_COLUMNS), so each row must name its variant."""
    if table.empty or not set(VARIANT_COLUMNS) <= set(table.columns):
        return False
    return bool(with_cell_defaults(table)[[*PAIR, "cpu_class", "gpu_class"]].duplicated().any())


def several_classes(table: pd.DataFrame) -> bool:
    """True when some (model, batch_size, pipeline, precision) of a speedup_table was measured on both
    devices and on more than one CPU class or more than one GPU class (so speedup_matrices has a matrix
    larger than 1 x 1); False for tables without class columns."""
    return any(len(gpus) > 1 or len(cpus) > 1 for _key, gpus, cpus, _at in speedup_matrices(table))


def speedup_matrices(table: pd.DataFrame) -> list[tuple[tuple, list[str], list[str], dict]]:
    """(key, gpu classes, cpu classes, at) per PAIR key of a speedup_table measured on both devices, in
    table order: key = (model, batch_size, pipeline, precision), the classes sorted, and at[(gpu, cpu)]
    the table row (a namedtuple from itertuples) of that pair. A (gpu, cpu) combination missing from
    `at` has no speedup. Where several_variants, one matrix per PAIR key and variant (its rows' values of
    VARIANT_COLUMNS), so that no pair hides another."""
    out = []
    if table.empty or not {"cpu_class", "gpu_class"} <= set(table.columns):
        return out
    # the rows as one itertuples pass, grouped by PAIR key in order of appearance (a group-by with an
    # itertuples per key cost ~1 s at 100,800 rows: each builds a namedtuple class)
    by = PAIR + (VARIANT_COLUMNS if several_variants(table) else [])
    table = with_cell_defaults(table)
    groups: dict[tuple, list] = {}
    for r in table.itertuples():
        key = tuple(getattr(r, c) for c in by)
        groups.setdefault(tuple(None if pd.isna(v) else v for v in key), []).append(r)
    for rows in groups.values():
        gpus, cpus = _classes(rows, "gpu"), _classes(rows, "cpu")
        if not gpus or not cpus:
            continue
        at = {(_name(r.gpu_class), _name(r.cpu_class)): r for r in rows if r.cpu_n > 0 and r.gpu_n > 0}
        out.append((tuple(getattr(rows[0], c) for c in PAIR), gpus, cpus, at))
    return out
