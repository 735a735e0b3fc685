"""Row schemas and cell keys: the one source of the column names results files hold and the analysis reads.

EPOCH_SCHEMA (one row per trial epoch) and TRIAL_SCHEMA (one row per trial attempt) are what
results.to_table writes; CELL and its derived keys say which columns make a cell, a pair, a run. What
each schema version added: CHANGELOG.md, "Results schema"; promised_columns says it per version.
"""

from __future__ import annotations

import functools

import pandas as pd
import pyarrow as pa

from orchestrator.plan.axes import AXES, CONFIG_AXES, Axis, Kind

META_VERSION = b"benchctl.schema_version"
META_KIND = b"benchctl.kind"


def _column(axis: Axis) -> tuple[str, pa.DataType]:
    """An axis's result column: its trial field, an integer (batch_size) or its value's text (compile: off
    | on; a row from before the axis existed reads as its Axis.before)."""
    return axis.trial_field, pa.int32() if axis.kind is Kind.ints else pa.string()


_IDENTITY = [
    ("sweep", pa.string()),
    ("cell", pa.string()),
    ("trial", pa.string()),
    ("attempt", pa.int32()),
    ("model", pa.string()),
    ("params", pa.int64()),
    ("device", pa.string()),
    ("device_name", pa.string()),
    (
        "hw_class",
        pa.string(),
    ),  # e.g. gpu:H200, cpu:Xeon-Platinum-8480+-16c (orchestrator/lab/hardware.py; schema 2)
    ("host", pa.string()),
    *(_column(a) for a in CONFIG_AXES),  # batch_size, pipeline, precision, compile (plan/axes.py)
    ("dataset", pa.string()),
    ("repeat", pa.int32()),
    ("seed", pa.int32()),
    ("cpus_allotted", pa.int32()),
    ("torch_threads", pa.int32()),
    ("data_workers", pa.int32()),
]

EPOCH_SCHEMA = pa.schema(
    _IDENTITY
    + [
        ("epoch", pa.int32()),
        ("warmup", pa.bool_()),
        ("restored", pa.bool_()),  # the first epoch after a restore from a checkpoint (schema 5)
        ("epoch_s", pa.float64()),  # full-epoch training seconds (extrapolated when capped)
        ("measured_s", pa.float64()),  # training seconds actually measured
        ("data_s", pa.float64()),
        ("compute_s", pa.float64()),
        ("eval_s", pa.float64()),  # test pass, not inside epoch_s
        ("steps", pa.int32()),
        ("full_steps", pa.int32()),
        ("extrapolated", pa.bool_()),
        ("images", pa.int64()),
        ("images_per_s", pa.float64()),
        ("train_loss", pa.float64()),
        ("test_acc", pa.float64()),
        ("eval_images", pa.int64()),
        ("eval_partial", pa.bool_()),
        ("gpu_mem_peak_mb", pa.float64()),  # null on CPU trials
        ("gpu_energy_j", pa.float64()),  # NVML, full epoch (scaled like epoch_s); null if unmeasurable
        ("gpu_util_pct", pa.float64()),  # mean NVML utilization over the measured window
        ("cpu_energy_j", pa.float64()),  # RAPL, all CPU packages, full epoch; null if unreadable
        ("host_busy_pct", pa.float64()),  # all host CPUs busy over the measured window, % (schema 4)
        ("host_steal_pct", pa.float64()),  # of that time, % the hypervisor took (VMs; schema 4)
        ("checkpoint_s", pa.float64()),  # writing the epoch's checkpoint, outside epoch_s (schema 5)
        ("checkpoint_mb", pa.float64()),  # its size, MiB (schema 5)
    ]
)

# what a trial reports per epoch: the epoch columns that are not the trial's identity
EPOCH_METRICS = tuple(EPOCH_SCHEMA.names[len(_IDENTITY) :])

TRIAL_SCHEMA = pa.schema(
    _IDENTITY
    + [
        ("status", pa.string()),  # ok | error | partial (the attempt had not ended when last written)
        ("error", pa.string()),
        ("epochs_planned", pa.int32()),
        ("epochs_done", pa.int32()),
        ("started_at", pa.timestamp("s", tz="UTC")),
        ("ended_at", pa.timestamp("s", tz="UTC")),
        ("cpu_model", pa.string()),
        ("cpu_cores", pa.int32()),
        ("gpu_name", pa.string()),
        ("gpu_driver", pa.string()),
        ("cuda_runtime", pa.string()),
        ("cudnn", pa.int32()),
        ("python", pa.string()),
        ("torch", pa.string()),
        ("torchvision", pa.string()),
        ("ray", pa.string()),
        ("git_commit", pa.string()),
        ("tune_trial_id", pa.string()),
        ("niceness", pa.int32()),  # scheduling priority the trial ran at (Ray's default for workers: 15)
        ("node_id", pa.string()),  # the Ray node the attempt ran on (schema 2)
        ("gpus_visible", pa.int32()),  # GPUs the trial's process could see (schema 2)
        ("cuda_visible_devices", pa.string()),  # as Ray set it for the trial (schema 2)
        ("gpu_uuid", pa.string()),  # the physical GPU (schema 2)
        ("nvml_index", pa.int32()),  # its index as nvidia-smi numbers it (schema 2)
        ("placement", pa.string()),  # exclusive / partitioned / packed (schema 2)
        ("cpu_share", pa.float64()),  # CPUs the trial held in Ray's books (schema 2)
        ("cpu_affinity", pa.string()),  # cores it was pinned to, e.g. "0-3" (partitioned; schema 2)
        ("overlapped_with", pa.string()),  # other trials on its host while it ran, comma list (schema 2)
        ("trial_process", pa.string()),  # child (a fresh process under the Ray trial) or inline (schema 3)
        ("start_method", pa.string()),  # StartMethod: how the child started; null inline (schema 7)
        # the trial's start, Tune starting it (driver clock) to its first timed step, and its phases:
        ("start_s", pa.float64()),  # the whole start (schema 7)
        ("start_schedule_s", pa.float64()),  # Tune starting the trial -> the trial function runs (schema 7)
        ("start_process_s", pa.float64()),  # child asked for -> its main runs (interpreter or fork; schema 7)
        ("start_imports_s", pa.float64()),  # its imports (torch, the trainables; ~0 forked; schema 7)
        ("start_model_s", pa.float64()),  # device, data, model, optimizer -> the first timed step (schema 7)
        ("restored_from_epoch", pa.int32()),  # epochs the attempt took over from a checkpoint (schema 5)
        ("checkpoint", pa.string()),  # its latest persisted checkpoint, relative to the sweep (schema 5)
        ("checkpoint_epoch", pa.int32()),  # the epoch that checkpoint was taken after (schema 5)
        ("data_cache", pa.string()),  # hit | miss | off: the node's data cache (trainables/datacache.py)
        ("data_s_load", pa.float64()),  # seconds to get the data set, outside every epoch (schema 5)
        ("compile_s", pa.float64()),  # compiling before epoch 1, outside every epoch; null eager (schema 6)
        ("compile_mode", pa.string()),  # torch.compile mode (reduce-overhead on GPU); null eager (schema 6)
        ("channels_last", pa.bool_()),  # weights and batches in NHWC (compiled GPU cells; schema 6)
        ("last_batch", pa.string()),  # kept | dropped: a training epoch's last partial batch (schema 6)
        ("cudagraph_skips", pa.int32()),  # compiled GPU: graphs Inductor ran without CUDA graphs (schema 6)
        ("energy_notes", pa.string()),  # why an energy column is null, if it is
        ("config_json", pa.string()),  # the whole TrialConfig
    ]
)

SCHEMAS = {"epochs": EPOCH_SCHEMA, "trials": TRIAL_SCHEMA}


# The cell key: the settings that make one cell (repeats of a cell are pooled), in display order: the
# grid axes' trial fields (plan.axes.AXES), the one definition stats, pairing, tables and figures read.
CELL = tuple(a.trial_field for a in AXES)  # model, device, batch_size, pipeline, precision, compile
HW_CLASS = "hw_class"  # e.g. "gpu:H200"; never pooled either, but a property of the node, not the grid
# value a cell-key column reads as where a file predates it or left it null (schema-1 results: no class;
# an axis added later: its Axis.before, e.g. compile "off", schema 6, eager before)
CELL_DEFAULTS = {HW_CLASS: "", **{a.trial_field: a.before for a in AXES if a.before is not None}}
PAIR = tuple(c for c in CELL if c != "device")  # what a CPU and a GPU cell must share to be compared
CONFIG = tuple(c for c in PAIR if c != "model")  # a model's configuration: batch size, pipeline, ...
RUN = ("sweep", "trial", "attempt")  # one training run (a repeat of a cell)

# Columns each schema version promises, beyond those of version 1 (CHANGELOG.md, "Results schema"): a
# file of that version lacking one is damaged or hand-made, not old. Early schema-2 files (reports/h200-
# inline) lack hw_class and the node columns, so version 2 promises nothing beyond version 1.
_ADDED = {
    "3": ("trial_process",),
    "4": ("host_busy_pct", "host_steal_pct"),
    "5": ("restored", "checkpoint_s", "checkpoint_mb", "checkpoint", "data_cache", "data_s_load",
          "restored_from_epoch", "checkpoint_epoch"),
    "6": ("compile_s", "compile_mode", "channels_last", "last_batch", "cudagraph_skips"),
    "7": ("start_method", "start_s", "start_schedule_s", "start_process_s", "start_imports_s",
          "start_model_s"),
}  # fmt: skip
for _axis in AXES:  # an axis's column: promised from the schema version its Axis names on
    if _axis.schema != "1":
        _ADDED[_axis.schema] = (*_ADDED.get(_axis.schema, ()), _axis.trial_field)
_LATER = {c for cols in _ADDED.values() for c in cols} | {
    "hw_class", "node_id", "gpus_visible", "cuda_visible_devices", "gpu_uuid", "nvml_index", "placement",
    "cpu_share", "cpu_affinity", "overlapped_with",
}  # fmt: skip


@functools.cache
def promised_columns(kind: str, version: str) -> tuple[str, ...]:
    """The columns a `kind` file of schema `version` must hold: version 1's, plus those added up to it."""
    added = {c for v, cols in _ADDED.items() if int(v) <= int(version) for c in cols}
    return tuple(c for c in SCHEMAS[kind].names if c not in _LATER or c in added)


def with_cell_defaults(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with every cell-key column that has a default (CELL_DEFAULTS) present and non-null: results
    and tables built before a column existed (hw_class, compile) read as its default, never as a missing
    key. Null counts too: read_kind gives an older file's absent column as nulls, and group-bys drop
    null keys."""
    fills = {}
    for col, default in CELL_DEFAULTS.items():
        if col not in frame:
            fills[col] = default
        elif frame[col].isna().any():
            fills[col] = frame[col].fillna(default)
    return frame.assign(**fills) if fills else frame
