"""The report model: every number and fact a report shows, computed once from the results.

    from orchestrator.report.model import build_model
    model = build_model([Path("results/s1")])
    model.table, model.parity, model.several_pairs      # what each renderer reads

build_model reads the sweeps and computes the tables of orchestrator.analysis once; the renderers
(markdown, terminal, json, figures) read them from the model, and the facts several of them need
(several_pairs, has_classes, ...) are fields, not recomputed per section. No renderer takes a median or
groups the epoch rows: the figures draw summary (the epoch split and images/s are its columns too),
table and accuracy. ReportModel.of_table makes a model of a speedup table alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from orchestrator.analysis import compile_gain, efficiency, pairing, parity
from orchestrator.analysis.explained import Explained, explain_variants
from orchestrator.analysis.fidelity import read_fidelity
from orchestrator.analysis.speedups import pair_speedups
from orchestrator.analysis.stats import accuracy_curves, cell_summary, epochs_on_disk, ok_epochs
from orchestrator.analysis.variants import variants
from orchestrator.plan.axes import CONFIG_AXES
from orchestrator.plan.hints import resume_command
from orchestrator.plan.presets import PRESETS
from orchestrator.plan.spec import read_stored_spec
from orchestrator.results.files import ResultsError
from orchestrator.results.reader import read_many
from orchestrator.results.rows import CELL, CONFIG, EPOCH_SCHEMA, HW_CLASS, RUN, with_cell_defaults
from orchestrator.results.sweepstate import Pooling, pooling, unfinished_trials
from trainables.config import NUM_CLASSES


def has_classes(table: pd.DataFrame) -> bool:
    """Whether any row of a speedup_table names a hardware class (schema-1 results never do)."""
    cols = [c for c in ("cpu_class", "gpu_class") if c in table]
    return any(table[c].fillna("").astype(str).ne("").any() for c in cols)


def unmarked_axes(table: pd.DataFrame) -> frozenset[str]:
    """The axes (trial fields of axes.CONFIG_AXES with an unmarked value) every row of `table` holds at that
    value, e.g. compile where all are eager: the report leaves their column out."""
    table = with_cell_defaults(table) if len(table) else table
    return frozenset(
        a.trial_field
        for a in CONFIG_AXES
        if a.unmarked is not None
        and (a.trial_field not in table or table[a.trial_field].astype(str).eq(a.unmarked).all())
    )


def batch_sizes(epochs: pd.DataFrame) -> list:
    """The distinct batch sizes of the epoch rows, ascending."""
    return sorted({int(b) for b in epochs.get("batch_size", pd.Series(dtype=float)).dropna()})


def chance_pct(epochs: pd.DataFrame) -> float | None:
    """Accuracy by guessing, in percent, where the data sets' class count is known (synthetic and cifar10:
    NUM_CLASSES); None for folder data, whose class count the epochs do not record."""
    datasets = {str(d) for d in epochs.get("dataset", pd.Series(dtype=object)).dropna().unique()}
    return 100 / NUM_CLASSES if datasets and datasets <= {"synthetic", "cifar10"} else None


def several_configs(table: pd.DataFrame) -> bool:
    """Whether the rows hold more than one configuration (results.CONFIG: batch size, pipeline, ...)."""
    return len(with_cell_defaults(table)[list(CONFIG)].drop_duplicates()) > 1 if len(table) else False


@dataclass(frozen=True)
class ReportModel:
    """The report's content. The DataFrames are not copied: renderers read them and never write them."""

    table: pd.DataFrame  # analysis.speedups.pair_speedups: one row per configuration and pair of cells
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)  # analysis.stats.cell_summary
    accuracy: pd.DataFrame = field(default_factory=pd.DataFrame)  # analysis.stats.accuracy_curves
    epochs: pd.DataFrame = field(default_factory=pd.DataFrame)  # ok_epochs: what every number comes from
    trials: pd.DataFrame = field(default_factory=pd.DataFrame)  # every attempt, one row each
    parity: pd.DataFrame = field(default_factory=pd.DataFrame)  # analysis.parity.parity_table
    efficiency: pd.DataFrame = field(default_factory=pd.DataFrame)  # analysis.efficiency.efficiency_table
    compile_gain: pd.DataFrame = field(default_factory=pd.DataFrame)  # analysis.compile_gain
    explained: Explained = field(default_factory=Explained)  # analysis.explained: the answer, explained
    fidelity: tuple[tuple[Path, list[dict]], ...] = ()  # analysis.fidelity.read_fidelity
    unfinished: tuple[tuple[Path, str], ...] = ()  # (results dir, trial id) planned without a result
    # (sweep, trial) of an unfinished trial -> (epochs on disk over all its attempts, epochs planned)
    cut: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    sweeps: tuple[str, ...] = ()
    results_dirs: tuple[Path, ...] = ()
    n_runs: int = 0  # completed (sweep, trial, attempt) the epochs come from
    pooled: Pooling | None = None  # results.pooling: what was pooled across differing conditions
    batch_sizes: tuple[int, ...] = ()  # the epochs' distinct batch sizes, ascending
    chance_pct: float | None = None  # accuracy by guessing, % (chance_pct); None: class count unknown
    # facts of the speedup table that several renderers need
    several_pairs: bool = False  # it compares 2+ (CPU class, GPU class) pairs: names carry the pair
    several_classes: bool = False  # a configuration has a class matrix larger than 1 x 1
    several_variants: bool = False  # a configuration's side was fed 2+ ways: rows name workers and CPUs
    has_classes: bool = False  # some row names a hardware class: the class columns are shown
    unmarked_axes: frozenset[str] = frozenset()  # axes whose column is left out (unmarked_axes)
    several_configs: bool = False  # 2+ configurations: cell names carry batch, pipeline, precision
    cpu_only: bool = False  # no row has a GPU side: no speedup, and GPU-only parts do not apply
    study: bool = False  # a sweep ran a preset with cells (--preset paper-explained): name them all
    # the devices whose efficiency rows span 2+ hardware classes: those rows name their class
    efficiency_classes: frozenset[str] = frozenset()

    @classmethod
    def of_table(cls, table: pd.DataFrame, **fields) -> ReportModel:
        """A model of a speedup table (and any other fields given), its facts computed from it."""
        return cls(table=table, **_facts(table), **fields)

    def pooled_note(self, quote: str = "") -> str:
        """results.Pooling.note for these results dirs ("" when nothing was pooled)."""
        return self.pooled.note(len(self.results_dirs) > 1, quote) if self.pooled else ""


def _facts(table: pd.DataFrame) -> dict:
    return dict(
        several_pairs=pairing.several_pairs(table),
        several_classes=pairing.several_classes(table),
        several_variants=pairing.several_variants(table),
        has_classes=has_classes(table),
        unmarked_axes=unmarked_axes(table),
        several_configs=several_configs(table),
        cpu_only=bool(len(table)) and "gpu_n" in table and not (table["gpu_n"] > 0).any(),
    )


# The trials columns the Environment section lists (report.sections), each with its label: read here,
# shown there, named once.
ENVIRONMENT = {
    "cpu_model": "CPU models", "gpu_name": "GPU names", "gpu_driver": "GPU driver",
    "cuda_runtime": "CUDA runtime", "torch": "torch", "torchvision": "torchvision", "ray": "ray",
    "python": "python", "git_commit": "git commit",
}  # fmt: skip
# What the report reads of each kind: the trials files carry 64 columns and the epochs files 45, and
# every column of every file costs its decoding (~6 us a column, 9,600 files at 100,800 rows).
# The trials columns a section, ok_epochs or compile_gain reads (each one of TRIAL_SCHEMA's: a test
# checks it, as read_many would read a misspelt name as an absent, all-null column):
TRIAL_COLUMNS = RUN + CELL + (HW_CLASS, "host") + (
    "status", "error", "epochs_planned", "epochs_done", "overlapped_with", "compile_s", "energy_notes",
) + tuple(ENVIRONMENT)  # fmt: skip
# the epoch columns nothing in the report reads (each one of EPOCH_SCHEMA's, checked as above); --format
# csv writes every column, so it reads them too
UNREAD_EPOCH_COLUMNS = ("repeat", "seed", "restored", "measured_s", "train_loss", "eval_images",
                         "gpu_mem_peak_mb", "host_busy_pct", "checkpoint_s", "checkpoint_mb")  # fmt: skip


def _read_all(results_dirs: list[Path], every_epoch_column: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    if not results_dirs:
        raise ResultsError(
            "no results directories given; pass the folder(s) a sweep wrote, e.g. results/<sweep>"
        )
    epoch_columns = (
        None if every_epoch_column else [c for c in EPOCH_SCHEMA.names if c not in UNREAD_EPOCH_COLUMNS]
    )
    # every directory's files at once; a ResultsError propagates unchanged
    epochs, trials = read_many(
        map(Path, results_dirs), epoch_columns=epoch_columns, trial_columns=TRIAL_COLUMNS
    )
    if not trials.empty:
        trials = trials.drop_duplicates(subset=["sweep", "trial", "attempt"]).reset_index(drop=True)
    return epochs, trials


def _all_sweeps(epochs: pd.DataFrame, trials: pd.DataFrame) -> object:
    """The distinct sweep names of the epoch and trial rows (unique() first: 100k rows, few names)."""
    return pd.concat([epochs["sweep"], trials.get("sweep", pd.Series())]).dropna().unique()


def _nothing_to_report(results_dirs: list[Path], trials: pd.DataFrame, cut_epochs: int) -> ResultsError:
    """Why sweeps with no finished trial have no report, and what to do: continue a sweep that was cut
    (Ctrl-C, a lost driver) with its resume command; fix the errors of one whose trials failed."""
    n_failed = int((trials["status"] == "error").sum()) if not trials.empty else 0
    where = ", ".join(str(d) for d in results_dirs)
    resumable = [Path(d) for d in results_dirs if (Path(d) / "spec.json").is_file()]
    how = "; ".join(f"`{resume_command(d)}`" for d in resumable)
    if not n_failed and resumable:
        done = (
            f"no trial yet ({cut_epochs} epoch(s) of cut-off trials on disk)"
            if cut_epochs
            else "no epoch yet"
        )
        return ResultsError(f"{where}: the sweep finished {done}, nothing to report; continue it with {how}")
    return ResultsError(
        f"{where}: no completed epochs to report ({n_failed} failed trial attempt(s)); check the errors "
        "in trials/*.parquet, fix them and run the sweep again"
        + (f" ({how} runs only what is missing)" if resumable else "")
    )


def build_model(
    results_dirs: list[Path],
    pool: bool = False,
    every_epoch_column: bool = False,
    target_acc: float | None = None,
    on_cells: Callable[[ReportModel], None] | None = None,
) -> ReportModel:
    """Read the sweeps and compute everything the report shows. Sweeps run under different conditions are
    refused unless `pool` (results.pooling); no completed epoch, or a malformed fidelity file, is a
    ResultsError. `every_epoch_column`: keep the epoch columns no number reads (for epochs.csv).
    `target_acc`: time to accuracy's target (analysis.time_to_accuracy; None: each pair's default).
    `on_cells`: called, before the speedups are computed, with a model of the per-cell parts only (summary,
    accuracy, batch_sizes, chance_pct; its table empty), so that what reads only those can start."""
    epochs, trials = _read_all(results_dirs, every_epoch_column)
    pooled = pooling(results_dirs, allow=pool)  # refuses differing conditions unless allowed
    cut_epochs = len(epochs)  # epochs on disk, finished trial or not
    dirs = [Path(d) for d in results_dirs]
    unfinished = tuple((d, t) for d in dirs for t in unfinished_trials(d, trials, dirs))
    cut = epochs_on_disk(epochs, trials, [(d.name, t) for d, t in unfinished])
    epochs = ok_epochs(epochs, trials)
    if epochs.empty:
        raise _nothing_to_report(results_dirs, trials, cut_epochs)
    fidelity = read_fidelity(results_dirs)  # a malformed file fails here, before anything is written
    summary = cell_summary(epochs)
    per_cell = dict(
        summary=summary,
        accuracy=accuracy_curves(epochs),
        batch_sizes=tuple(batch_sizes(epochs)),
        chance_pct=chance_pct(epochs),
    )
    if on_cells is not None:
        on_cells(ReportModel(table=pd.DataFrame(), **per_cell))
    cells = variants(epochs, summary)  # the Results table and the explained answer pair the same cells
    table = pair_speedups(cells)
    gains = efficiency.efficiency_table(epochs)
    by_device = gains.groupby("device")["hw_class"].nunique()
    return ReportModel.of_table(
        table,
        **per_cell,
        epochs=epochs,
        trials=trials,
        parity=parity.parity_table(epochs),
        efficiency=gains,
        compile_gain=compile_gain.compile_gain_table(epochs, trials),
        explained=explain_variants(cells, target_acc),
        fidelity=tuple(fidelity),
        unfinished=unfinished,
        cut=cut,
        sweeps=tuple(sorted({str(s) for s in _all_sweeps(epochs, trials)})),
        results_dirs=tuple(Path(d) for d in results_dirs),
        n_runs=epochs[list(RUN)].drop_duplicates().shape[0],
        pooled=pooled,
        efficiency_classes=frozenset(by_device[by_device > 1].index),
        study=any(_runs_a_study(d) for d in dirs),
    )


def _runs_a_study(results_dir: Path) -> bool:
    """Whether the sweep's spec.json names a preset with cells (plan/presets.py), e.g. paper-explained."""
    preset = (read_stored_spec(results_dir) or {}).get("preset")
    return preset in {p.value for p, settings in PRESETS.items() if settings.cells is not None}
