"""Cells told apart by how they were fed, not only by their axes: the explained study's unit.

    from orchestrator.analysis.variants import variants
    v = variants(ok_epochs(epochs, trials))
    v.cells                       # one row per variant cell: cell_summary's columns and more
    v.samples[name], v.finals[name], v.runs[name]

A cell (rows.CELL + hw_class) pools every run of its axes. The DataLoader's workers and the CPUs a
trial held are not axes, yet `--workers 8 --gpu-cpus 9` is the counterfactual that shows a GPU cell is
input-bound (issue 32). A *variant cell* is a cell and its VARIANT values (data_workers, cpus_allotted):
results without such counterfactuals have one variant per cell, with the same numbers as cell_summary.

v.cells: cell_summary's columns (stats.cell_summary; computed by it, on the variant key), plus
    data_workers, cpus_allotted   the variant (-1 where not recorded)
    images_per_s                  median(images_per_s) over the steady epochs
    achieved_tflops, peak_tflops, mfu   analysis.efficiency over the same epochs (NaN where unknown)
    name                          cell_name(row): what the report and summary.json call the cell
v.samples[name]   the steady epoch_s samples (a speedup's median and its bootstrap interval use them)
v.finals[name]    each run's final test_acc (fraction; the last epoch of the run), for the TOST
v.runs[name]      the cell's epoch rows (RUN, epoch, epoch_s, test_acc) sorted by run and epoch, for
                  time to accuracy
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from orchestrator.analysis.efficiency import efficiency_table
from orchestrator.analysis.stats import (
    CLASS_CELL,
    HW_CLASS,
    RUN,
    SUMMARY_ORDER,
    cell_summary,
    numeric,
    steady_epochs,
    with_hw_class,
)
from orchestrator.plan.axes import CONFIG_AXES

VARIANT = ("data_workers", "cpus_allotted")
_SEP = "\x1f"  # joins hw_class and the variant into one key column while cell_summary groups by it
UNKNOWN = -1  # a variant value that was not recorded


@dataclass(frozen=True)
class Variants:
    cells: pd.DataFrame
    samples: dict[str, np.ndarray] = field(default_factory=dict)
    finals: dict[str, np.ndarray] = field(default_factory=dict)
    runs: dict[str, pd.DataFrame] = field(default_factory=dict)

    def cell(self, name: str) -> pd.Series:
        return self.cells.loc[self.cells["name"] == name].iloc[0]


def cell_name(row) -> str:
    """e.g. "simple_cnn/gpu:H200/bs128/loader/fp32/eager (2 workers, 3 CPUs)": model, hardware class
    (the device where no class was recorded), the configuration's axes (axes.CONFIG_AXES, as slots say
    them; an unmarked value only where its Axis.name_unmarked), and what fed it (workers for a DataLoader)."""
    where = str(row[HW_CLASS]) or str(row["device"])
    tags = [a.tag(row[a.trial_field], short=True, keep_unmarked=a.name_unmarked) for a in CONFIG_AXES]
    fed = fed_label(row["pipeline"], row["data_workers"], row["cpus_allotted"])
    return "/".join([row["model"], where, *filter(None, tags)]) + (f" ({fed})" if fed else "")


def fed_label(pipeline, workers, cpus) -> str:
    """What fed a variant cell, as its name says it: "2 workers, 3 CPUs" (workers for a DataLoader only),
    "1 CPU"; "" where neither was recorded (UNKNOWN or null)."""
    workers, cpus = (UNKNOWN if pd.isna(x) else int(x) for x in (workers, cpus))
    fed = [f"{workers} workers"] if pipeline == "loader" and workers != UNKNOWN else []
    fed += [f"{cpus} CPU{'s' if cpus != 1 else ''}"] if cpus != UNKNOWN else []
    return ", ".join(fed)


def _encoded(epochs: pd.DataFrame) -> pd.DataFrame:
    """epochs with hw_class holding "class<SEP>workers<SEP>cpus", so that stats' functions, which group
    by CLASS_CELL, group by the variant key."""
    out = with_hw_class(epochs)
    parts = [out[HW_CLASS].astype(str)] + [
        numeric(out, col).fillna(UNKNOWN).astype(int).astype(str) for col in VARIANT
    ]
    key = parts[0]
    for part in parts[1:]:
        key = key + _SEP + part
    return out.assign(**{HW_CLASS: key})


def _decoded(frame: pd.DataFrame) -> pd.DataFrame:
    split = frame[HW_CLASS].astype(str).str.split(_SEP, expand=True)
    out = frame.assign(**{HW_CLASS: split[0]})
    for i, col in enumerate(VARIANT, start=1):
        out[col] = split[i].astype(int)
    return out


def _by_key(frame: pd.DataFrame, values: pd.Series) -> dict[tuple, np.ndarray]:
    return {
        tuple(k): v.dropna().to_numpy(dtype=float)
        for k, v in values.groupby([frame[c] for c in CLASS_CELL], dropna=False)
    }


def _efficiency(encoded: pd.DataFrame) -> dict[tuple, tuple]:
    """key -> (achieved_tflops, peak_tflops, mfu) of the first device name of each variant cell."""
    table = efficiency_table(encoded).drop_duplicates(CLASS_CELL)
    values = table[[*CLASS_CELL, "achieved_tflops", "peak_tflops", "mfu"]].itertuples(index=False, name=None)
    n = len(CLASS_CELL)
    return {tuple(r[:n]): tuple(r[n:]) for r in values}


def _variant_summary(encoded: pd.DataFrame, epochs: pd.DataFrame, plain: pd.DataFrame | None) -> pd.DataFrame:
    """cell_summary on the variant key (hw_class as _encoded): `plain` (cell_summary(epochs)) re-keyed
    where every cell has one variant, as results without counterfactuals do (the same rows in the same
    groups, so the same numbers, sorted again as cell_summary sorts: by the variant key; a second
    cell_summary cost ~1 s at 100,800 rows), else computed."""
    if plain is not None and len(plain):
        keys = with_hw_class(epochs)[CLASS_CELL].assign(_variant=encoded[HW_CLASS].to_numpy())
        keys = keys.drop_duplicates()
        if len(keys) == len(plain):
            merged = plain.merge(keys, on=CLASS_CELL, how="left", validate="one_to_one")
            if merged["_variant"].notna().all():
                merged = merged.assign(**{HW_CLASS: merged.pop("_variant")})
                return merged.sort_values(SUMMARY_ORDER, kind="stable").reset_index(drop=True)
    return cell_summary(encoded)


def variants(epochs: pd.DataFrame, summary: pd.DataFrame | None = None) -> Variants:
    """The variant cells of `epochs` (stats.ok_epochs rows), see the module docstring. `summary`:
    cell_summary(epochs), where the caller has it (the report does)."""
    columns = [*CLASS_CELL, *VARIANT, "images_per_s", "achieved_tflops", "peak_tflops", "mfu", "name"]
    if epochs.empty:
        return Variants(pd.DataFrame(columns=columns))
    encoded = _encoded(epochs)
    summary = _variant_summary(encoded, epochs, summary)
    keys = [tuple(k) for k in summary[CLASS_CELL].itertuples(index=False, name=None)]
    steady = steady_epochs(encoded)
    samples = _by_key(steady, numeric(steady, "epoch_s"))
    ips = _by_key(steady, numeric(steady, "images_per_s"))
    ips = {k: float(np.median(v)) if len(v) else np.nan for k, v in ips.items()}
    last = encoded.sort_values("epoch", kind="stable").groupby(list(RUN), dropna=False).tail(1)
    finals = _by_key(last, numeric(last, "test_acc"))
    gains = _efficiency(encoded)
    nan3 = (np.nan, np.nan, np.nan)
    summary = summary.assign(
        images_per_s=[ips.get(k, np.nan) for k in keys],
        achieved_tflops=[gains.get(k, nan3)[0] for k in keys],
        peak_tflops=[gains.get(k, nan3)[1] for k in keys],
        mfu=[gains.get(k, nan3)[2] for k in keys],
    )
    cells = _decoded(summary)
    cells["name"] = [cell_name(r) for r in cells.to_dict("records")]
    names = dict(zip(keys, cells["name"], strict=True))
    empty = np.array([], dtype=float)
    ordered = encoded.sort_values([*RUN, "epoch"], kind="stable")
    ordered = ordered.assign(epoch_s=numeric(ordered, "epoch_s"), test_acc=numeric(ordered, "test_acc"))
    runs = {
        names[tuple(k)]: g[[*RUN, "epoch", "epoch_s", "test_acc"]].reset_index(drop=True)
        for k, g in ordered.groupby(CLASS_CELL, dropna=False, sort=False)
        if tuple(k) in names
    }
    return Variants(
        cells=cells.reset_index(drop=True),
        samples={names[k]: samples.get(k, empty) for k in keys},
        finals={names[k]: finals.get(k, empty) for k in keys},
        runs=runs,
    )
