"""Results on disk: versioned Parquet, one file per trial attempt, never half-written.

    results/<sweep>/epochs/<trial-key>.parquet   one row per trial epoch (attempts that completed)
    results/<sweep>/trials/<trial-key>.parquet   one row per trial attempt (status ok / error)
    results/<sweep>/spec.json                    the sweep as it was asked for, plus provenance
    results/<sweep>/compact/<kind>.parquet       a finished sweep's files of each kind in one (`compact`):
                                                 a cache with a manifest, the files above stay

    import pyarrow.dataset as ds
    ds.dataset("results/s1/epochs").to_table()      # plain pyarrow reads it
    from orchestrator.results import read_results
    epochs, trials = read_results(Path("results/s1"))  # validated: names the bad file if any

Every file carries `benchctl.schema_version` and `benchctl.kind` in its Parquet metadata.

Compaction: `compact` (called when a sweep or resume ends, and by `benchctl compact`) writes each kind's
rows, conformed to this benchctl's schema, with the manifest [[file name, size, mtime_ns, rows, blake2b],
...] in the metadata (`benchctl.compact_sources`), atomically. read_kind takes a file's rows from it only
while the file on disk has the same name, size and mtime_ns (or, its mtime moved by a copy, the same
bytes), and reads every other file on its own (checked as always), so the rows are those of reading every
file: a later --resume's files are read, a rewritten file is read fresh, a deleted file's rows are
dropped. A compacted file that cannot be trusted whole (unreadable, a page checksum wrong, another schema
version, a manifest that does not add up) is ignored and the per-trial files are read: the sources are
never deleted, so it is only ever a cache.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.axes import AXES
from orchestrator.errors import BenchctlError
from orchestrator.schema import READABLE_VERSIONS, SCHEMA_VERSION  # what each added: CHANGELOG.md
from orchestrator.spec import condition_differences, conditions
from trainables.config import TrialConfig

_META_VERSION = b"benchctl.schema_version"
_META_KIND = b"benchctl.kind"

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
    ),  # e.g. gpu:H200, cpu:Xeon-Platinum-8480+-16c (orchestrator/hardware.py; schema 2)
    ("host", pa.string()),
    ("batch_size", pa.int32()),
    ("pipeline", pa.string()),
    ("precision", pa.string()),
    ("compile", pa.string()),  # off | on: eager or torch.compile'd training step (schema 6; older: off)
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

_SCHEMAS = {"epochs": EPOCH_SCHEMA, "trials": TRIAL_SCHEMA}


class ResultsError(BenchctlError):
    """A results directory or file cannot be read; the message names it."""


def file_key(trial: str, attempt: int) -> str:
    """A file name for one trial attempt: `resnet18/gpu/bs128/loader/fp32/r0` -> `resnet18_gpu_...-a1`."""
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", trial) + f"-a{attempt}"


def to_table(rows: list[dict], kind: str) -> pa.Table:
    schema = _SCHEMAS[kind]
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    table = pa.Table.from_pydict(columns, schema=schema)
    return table.replace_schema_metadata({_META_VERSION: SCHEMA_VERSION.encode(), _META_KIND: kind.encode()})


def write_atomic(table: pa.Table, path: Path, **options) -> Path:
    """Write to a hidden temp name in the same directory, then rename: readers never see half a file
    (`options` go to pq.write_table)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp, **options)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_rows(results_dir: Path, kind: str, key: str, rows: list[dict]) -> Path:
    return write_atomic(to_table(rows, kind), results_dir / kind / f"{key}.parquet")


def write_json_atomic(obj: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)
    return path


# The cell key: the settings that make one cell (repeats of a cell are pooled), in display order. The one
# definition stats, pairing, tables and figures read; a new axis is one entry here (with the value that
# results written before it existed read as, in CELL_DEFAULTS) and one in planned_trials' token map.
CELL = ("model", "device", "batch_size", "pipeline", "precision", "compile")
HW_CLASS = "hw_class"  # e.g. "gpu:H200"; never pooled either, but a property of the node, not the grid
# value a cell-key column reads as where a file predates it or left it null (schema-1 results: no class)
CELL_DEFAULTS = {HW_CLASS: "", "compile": "off"}  # compile: schema 6; eager before
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
    "6": ("compile", "compile_s", "compile_mode", "channels_last", "last_batch", "cudagraph_skips"),
    "7": ("start_method", "start_s", "start_schedule_s", "start_process_s", "start_imports_s",
          "start_model_s"),
}  # fmt: skip
_LATER = {c for cols in _ADDED.values() for c in cols} | {
    "hw_class", "node_id", "gpus_visible", "cuda_visible_devices", "gpu_uuid", "nvml_index", "placement",
    "cpu_share", "cpu_affinity", "overlapped_with",
}  # fmt: skip


@functools.cache
def promised_columns(kind: str, version: str) -> tuple[str, ...]:
    """The columns a `kind` file of schema `version` must hold: version 1's, plus those added up to it."""
    added = {c for v, cols in _ADDED.items() if int(v) <= int(version) for c in cols}
    return tuple(c for c in _SCHEMAS[kind].names if c not in _LATER or c in added)


def _check(path: Path, kind: str, schema: pa.Schema) -> None:
    """ResultsError naming `path` unless its Parquet schema is a readable benchctl `kind` file that holds
    the columns its version promises."""
    meta = schema.metadata or {}
    version = meta.get(_META_VERSION)
    if version is None or meta.get(_META_KIND) != kind.encode():
        raise ResultsError(
            f"{path}: not a benchctl {kind} file (no benchctl metadata); move it out of {path.parent}"
        )
    if version.decode() not in READABLE_VERSIONS:
        raise ResultsError(
            f"{path}: schema version {version.decode()}, this benchctl reads versions "
            f"{', '.join(READABLE_VERSIONS)}; use the benchctl that wrote it"
        )
    names = set(schema.names)  # a set once per file: `in schema.names` built the list per column
    missing = [c for c in promised_columns(kind, version.decode()) if c not in names]
    if missing:
        raise ResultsError(
            f"{path}: schema version {version.decode()} {kind} file without column(s) "
            f"{', '.join(missing)}; it was not written by benchctl's ResultsWriter: rewrite or move it"
        )


def _read_checked(
    path: str, kind: str, columns: frozenset[str] | None, data: bytes | None = None
) -> pa.Table:
    """One file, its footer parsed once: checked (_check), then the wanted columns it holds read (from
    `data`, the file's bytes, when given)."""
    try:
        parquet = pq.ParquetFile(path if data is None else pa.BufferReader(data))
        _check(Path(path), kind, parquet.schema_arrow)
        names = parquet.schema_arrow.names
        return parquet.read(columns=None if columns is None else [c for c in names if c in columns],
                            use_threads=False)  # fmt: skip
    except (pa.ArrowException, OSError) as exc:
        raise ResultsError(f"{path}: not a readable Parquet file ({exc}); delete or move it") from None


def _read_one(path: Path, kind: str) -> pa.Table:
    return _read_checked(str(path), kind, None)


def _conform(table: pa.Table, schema: pa.Schema, source: str) -> pa.Table:
    """`table` with exactly `schema`'s columns in its order and types: a column an older file lacks reads
    as null, one stored as another type is cast (what a dataset scan with that schema does)."""
    columns = []
    for field_ in schema:
        if field_.name not in table.column_names:
            columns.append(pa.nulls(len(table), field_.type))
            continue
        column = table.column(field_.name)
        try:
            columns.append(column if column.type == field_.type else column.cast(field_.type))
        except (pa.ArrowException, ValueError) as exc:
            raise ResultsError(f"{source}: column {field_.name}: {exc}") from None
    return pa.Table.from_arrays(columns, schema=schema)


_CHUNK = 256  # files per join: 100,800 epoch rows in 4,800 files peak at ~230 MB, not ~490 MB, read at once

# A finished sweep's files of each kind gathered into one (`compact`): a cache, never the only copy.
COMPACT_DIR = "compact"
# JSON [[file name, size, mtime_ns, rows, blake2b of its bytes], ...], in row order
_META_SOURCES = b"benchctl.compact_sources"


def compact_path(results_dir: Path, kind: str) -> Path:
    return Path(results_dir) / COMPACT_DIR / f"{kind}.parquet"


def _sources(results_dir: Path, kind: str) -> list[tuple[Path, int, int]]:
    """The `kind` files of a sweep directory in the order read_kind reads them, each with (size, mtime_ns)."""
    out = []
    for path in sorted((results_dir / kind).glob("*.parquet")):
        try:
            st = path.stat()
        except OSError:  # gone since the listing (or a dangling link): reading it names it
            out.append((path, -1, -1))
            continue
        out.append((path, st.st_size, st.st_mtime_ns))
    return out


def _compacted(
    results_dir: Path, kind: str
) -> tuple[pq.ParquetFile, dict[str, tuple[int, int, int, int, str]]] | None:
    """The sweep's compacted `kind` file and its manifest {file name: (size, mtime_ns, first row, rows,
    digest)}, or None when there is none or it cannot be trusted whole (unreadable, not benchctl's,
    another schema version, fewer columns than this benchctl's schema, a manifest that does not add up):
    it is then ignored and every source file is read, which gives the same rows (`benchctl compact`
    rebuilds it)."""
    path = compact_path(results_dir, kind)
    if not path.is_file():
        return None
    try:
        parquet = pq.ParquetFile(path, page_checksum_verification=True)  # compact writes them
        meta = parquet.schema_arrow.metadata or {}
        if meta.get(_META_KIND) != kind.encode() or meta.get(_META_VERSION) != SCHEMA_VERSION.encode():
            return None
        if not set(_SCHEMAS[kind].names) <= set(parquet.schema_arrow.names):
            return None
        manifest, first = {}, 0
        for name, size, mtime_ns, rows, digest in json.loads(meta[_META_SOURCES]):
            manifest[str(name)] = (int(size), int(mtime_ns), first, int(rows), str(digest))
            first += int(rows)
        if first != parquet.metadata.num_rows:
            return None
        return parquet, manifest
    except (pa.ArrowException, OSError, KeyError, ValueError, TypeError):
        return None


def _digest(data: bytes) -> str:
    """A file's bytes, hashed: whether a file whose mtime moved (a copy: git, tar) is still the same."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _file_digest(path: Path) -> str:
    try:
        return _digest(path.read_bytes())
    except OSError:
        return ""


def _read_hashed(path: Path, kind: str) -> tuple[pa.Table, str]:
    """For compact: a file read once into memory, parsed and hashed from those bytes, so the manifest's
    digest is that of the rows it holds even when the file is rewritten meanwhile."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ResultsError(f"{path}: not a readable Parquet file ({exc}); delete or move it") from None
    return _read_checked(str(path), kind, None, data), _digest(data)


def _read_dir(
    results_dir: Path,
    kind: str,
    schema: pa.Schema,
    names: frozenset[str] | None,
    pool: ThreadPoolExecutor,
    digests: bool = False,
) -> tuple[list[pa.Table], list[list]]:
    """One sweep directory's `kind` rows as tables of `schema`, in file order, and its manifest rows
    (with each file's digest when `digests`, for compact; else "" for the files read on their own).

    A file its compacted copy (`compact`) holds unchanged is taken from that copy: same name, size and
    mtime_ns, or, where only the mtime differs (the directory was copied by git, tar, scp), the same
    bytes (blake2b). Every other file (added by a --resume, rewritten, or with no compacted copy at all)
    is opened and checked on its own (_read_checked), so the rows are those of reading every file."""
    sources = _sources(results_dir, kind)
    compacted = _compacted(results_dir, kind) if sources else None
    manifest = compacted[1] if compacted else {}
    same_size = [manifest.get(p.name, (None,))[0] == size for p, size, _ in sources]
    moved = [k for k, (p, _, mtime) in enumerate(sources) if same_size[k] and manifest[p.name][1] != mtime]
    rehashed = dict(zip(moved, pool.map(lambda k: _file_digest(sources[k][0]), moved), strict=True))
    # per file, (first row, rows) in the compacted copy when it holds the file unchanged, else None
    held = [
        manifest[p.name][2:4]
        if same_size[k] and (manifest[p.name][1] == mtime or rehashed.get(k) == manifest[p.name][4])
        else None
        for k, (p, _, mtime) in enumerate(sources)
    ]
    whole = None
    if any(held):
        columns = None if names is None else [c for c in compacted[0].schema_arrow.names if c in names]
        try:
            whole = _conform(compacted[0].read(columns=columns, use_threads=False), schema, str(results_dir))
        except (pa.ArrowException, OSError, ResultsError):  # damaged past its footer: read the sources
            held = [None] * len(sources)
    source, parts, rows_of = str(results_dir), [], []
    i = 0
    while i < len(sources):
        j = i + 1
        if held[i] is not None:  # a run of held files that are consecutive rows of the copy: one slice
            first, end = held[i][0], sum(held[i])
            while j < len(sources) and held[j] is not None and held[j][0] == end:
                end += held[j][1]
                j += 1
            parts.append(whole.slice(first, end - first))
            counts = [h[1] for h in held[i:j]]
            hashes = [manifest[p.name][4] for p, _, _ in sources[i:j]]
        else:  # read on their own, _CHUNK files per join
            while j < len(sources) and held[j] is None and j - i < _CHUNK:
                j += 1
            if digests:
                read = list(pool.map(lambda f: _read_hashed(f[0], kind), sources[i:j]))
                tables, hashes = [t for t, _ in read], [h for _, h in read]
            else:
                tables = list(pool.map(lambda f: _read_checked(str(f[0]), kind, names), sources[i:j]))
                hashes = [""] * (j - i)
            parts.append(_conform(_join(tables, source), schema, source))
            counts = [t.num_rows for t in tables]
        rows_of += [
            [p.name, size, mtime, n, h]
            for (p, size, mtime), n, h in zip(sources[i:j], counts, hashes, strict=True)
        ]
        i = j
    return parts, rows_of


def read_kind(
    results_dir: Path | Iterable[Path], kind: str, columns: Iterable[str] | None = None
) -> pd.DataFrame:
    """All files of one kind, of one results directory or several, as one DataFrame with every column of
    the schema, or only `columns` of it (a column an older file lacks reads as null; empty if there
    are no files).

    Files a sweep's compacted copy holds unchanged are read from it (_read_dir; `compact`). Each other
    file is opened once on a thread pool (pq.ParquetFile: the footer is parsed once, checked by _check so
    a stray or damaged file is named rather than read as nulls, and only the wanted columns are decoded);
    the tables are joined _CHUNK at a time and given the schema's types. At 9,600 files (100,800 epoch
    rows) this took ~8 CPU s, where threaded dataset scans of all columns plus a separate footer pass took
    ~19 s: a scan pays a per-fragment setup that dwarfs a 21-row file; the compacted copy takes ~0.1 s."""
    one = isinstance(results_dir, str | os.PathLike)
    dirs = [Path(results_dir)] if one else [Path(d) for d in results_dir]
    schema = _SCHEMAS[kind]
    if columns is not None:
        wanted = frozenset(columns)
        schema = pa.schema([f for f in schema if f.name in wanted])
    names = None if columns is None else frozenset(schema.names)
    parts = []
    with ThreadPoolExecutor(max_workers=4) as pool:  # decoding releases the GIL
        for d in dirs:
            parts += _read_dir(d, kind, schema, names, pool)[0]
    if not parts:
        return schema.empty_table().to_pandas()
    return pa.concat_tables(parts).to_pandas()


def compact(results_dir: Path) -> dict[str, int]:
    """Gather a sweep directory's files of each kind into compact/<kind>.parquet, with a manifest of the
    files it holds (name, size, mtime_ns, rows, blake2b of the bytes) in its metadata; {kind: files held}.
    The source files stay: the compacted file is a cache read_kind uses for the files that still match its
    manifest, so every reader gives the rows of reading every file. Written to a temp name and renamed
    (write_atomic): a crash leaves the previous copy or none, never half a file. An earlier compacted
    copy's rows are reused for the files it still matches, so compacting after a --resume reads only the
    new files. Raises ResultsError naming a source file that cannot be read (nothing is written then)."""
    results_dir = Path(results_dir)
    with ThreadPoolExecutor(max_workers=4) as pool:  # every file read before anything is written
        read = {
            kind: _read_dir(results_dir, kind, schema, None, pool, digests=True)
            for kind, schema in _SCHEMAS.items()
        }
    for kind, (parts, rows_of) in read.items():
        path = compact_path(results_dir, kind)
        if not parts:
            path.unlink(missing_ok=True)
            continue
        table = pa.concat_tables(parts).combine_chunks()
        meta = {_META_VERSION: SCHEMA_VERSION.encode(), _META_KIND: kind.encode(),
                _META_SOURCES: json.dumps(rows_of, separators=(",", ":")).encode()}  # fmt: skip
        write_atomic(table.replace_schema_metadata(meta), path, write_page_checksum=True)
    return {kind: len(rows_of) for kind, (_, rows_of) in read.items()}


def _join(tables: list[pa.Table], source: str) -> pa.Table:
    """The tables as one contiguous table; files of older schema versions lack columns and may store one
    as another type, so differing schemas are unified (slower, hence only when they differ)."""
    try:
        try:
            joined = pa.concat_tables(tables)
        except pa.ArrowInvalid:  # schemas differ
            joined = pa.concat_tables(tables, promote_options="permissive")
        return joined.combine_chunks()
    except pa.ArrowException as exc:
        raise ResultsError(f"{source}: {exc}") from None


def check_results_dir(results_dir: Path) -> None:
    """ResultsError unless `results_dir` is a folder holding some benchctl Parquet file."""
    if results_dir.exists() and not results_dir.is_dir():
        raise ResultsError(f"{results_dir} is a file, not a results directory; pass the folder a sweep wrote")
    if not results_dir.is_dir():
        raise ResultsError(f"results directory {results_dir} does not exist; pass the folder a sweep wrote")
    if any(next((results_dir / kind).glob("*.parquet"), None) for kind in _SCHEMAS):
        return
    if any((p / "spec.json").is_file() for p in results_dir.iterdir()):
        raise ResultsError(  # a parent of sweeps, such as results/
            f"{results_dir} holds sweep folders, not one sweep's results; list them with "
            f"`benchctl ls {results_dir}` and report one, e.g. `benchctl report {results_dir}/NAME`"
        )
    raise ResultsError(
        f"{results_dir} holds no benchctl results (no epochs/*.parquet or trials/*.parquet); "
        "pass the folder a sweep wrote"
    )


def read_many(
    results_dirs: Iterable[Path],
    epoch_columns: Iterable[str] | None = None,
    trial_columns: Iterable[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(epochs, trials) of several sweep directories, each kind read at once (read_kind; only the columns
    given, when given). Raises ResultsError for a missing or empty directory, naming it; rows of a
    directory given twice are kept once."""
    dirs = list(dict.fromkeys(Path(d) for d in results_dirs))
    for d in dirs:
        check_results_dir(d)
    return read_kind(dirs, "epochs", epoch_columns), read_kind(dirs, "trials", trial_columns)


def read_results(results_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(epochs, trials) of a sweep directory. Raises ResultsError for a missing or empty directory."""
    return read_many([Path(results_dir)])


@dataclass(frozen=True)
class Progress:
    """What a results directory already holds, for `--resume`."""

    done: frozenset[str]  # benchctl trial ids with a successful attempt
    attempts: dict[str, int]  # highest attempt number on disk per trial id
    orphans: tuple[Path, ...]  # epochs files whose attempt has no trials row (driver killed between)
    # unfinished trial id -> (absolute path of its latest checkpoint on this machine, epoch it follows)
    checkpoints: dict[str, tuple[str, int]] = field(default_factory=dict)


def _attempt_of(path: Path) -> int:
    return int(path.stem.rpartition("-a")[2])


def planned_trials(spec: dict) -> list[str] | None:
    """The trial ids a sweep's spec asks for (TrialConfig.trial_id of every combination of the grid's
    axes, orchestrator/axes.py), or None when they depend on the cluster (--per-class: classes found
    then) or the spec does not say (no devices, or a value TrialConfig refuses)."""
    if spec.get("per_class"):
        return None
    # an axis added after the spec was stored (compiles) ran at its default
    stored = {a.spec_field: spec.get(a.spec_field, a.default.split(",") if a.default else None) for a in AXES}
    if not all(isinstance(stored[a.spec_field], list) for a in AXES) or not isinstance(
        spec.get("repeats"), int
    ):
        return None
    try:
        return [
            TrialConfig(**{a.trial_field: v for a, v in zip(AXES, combo, strict=True)}, repeat=r).trial_id
            for combo in itertools.product(*(stored[a.spec_field] for a in AXES))
            for r in range(spec["repeats"])
        ]
    except (TypeError, ValueError):
        return None


def read_spec(results_dir: Path) -> dict | None:
    """The spec a results directory's spec.json stores, or None without a readable one."""
    try:
        spec = json.loads((Path(results_dir) / "spec.json").read_text(encoding="utf-8"))["spec"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return spec if isinstance(spec, dict) else None


def same_conditions(a: dict, b: dict) -> bool:
    """Whether two sweeps' specs ran trials under the same conditions (epochs, data size, steps, placement,
    ...): spec.condition_differences finds none (grid keys aside; a key only one has reads as what
    benchctl did before that option existed, as --resume reads it)."""
    return not condition_differences(a, b)


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
            parts.append(
                f"Pooled across different conditions (--pool): {self.describe(quote)}. Cells mix trials "
                "run under these settings."
            )
        if self.unknown and several:
            names = ", ".join(f"{quote}{d}{quote}" for d in self.unknown)
            parts.append(f"Conditions unknown for {names} (no spec.json): not compared with the others.")
        return " ".join(parts)


def pooling(results_dirs: Iterable[Path], allow: bool = False) -> Pooling:
    """The condition keys on which the sweeps in `results_dirs` differ (each against the first one with a
    spec.json, by condition_differences), with every sweep's value, and the directories whose conditions
    cannot be known (no spec.json). Differing conditions raise ResultsError (exit 2) unless `allow`
    (report --pool): pooled silently, capped and full epochs or two data sizes would mix in one median."""
    specs = {Path(d): read_spec(Path(d)) for d in results_dirs}
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
    spec = read_spec(results_dir)
    if spec is None:
        return []
    planned = planned_trials(spec) or []
    if not trials.empty and "sweep" in trials:
        fillers = {spec.get("name")} | {
            o.get("name") for o in map(read_spec, others) if o is not None and same_conditions(spec, o)
        }
        trials = trials[trials.sweep.isin(fillers)]
    ok = set(trials.loc[trials.status == "ok", "trial"]) if not trials.empty else set()
    return [t for t in planned if t not in ok]


def progress(results_dir: Path) -> Progress:
    """Read the trials table (and the epochs files' names) of a sweep directory."""
    trials = read_kind(results_dir, "trials")
    ok = trials[trials.status == "ok"]
    attempts: dict[str, int] = {}
    for trial, attempt in zip(trials.trial, trials.attempt, strict=True):
        attempts[trial] = max(attempts.get(trial, 0), int(attempt))
    recorded = {file_key(t, int(a)) for t, a in zip(trials.trial, trials.attempt, strict=True)}
    orphans = tuple(f for f in sorted((results_dir / "epochs").glob("*.parquet")) if f.stem not in recorded)
    for f in orphans:  # an orphan's attempt number stays taken: the retry gets the next one
        for trial in set(_read_one(f, "epochs").column("trial").to_pylist()):
            attempts[trial] = max(attempts.get(trial, 0), _attempt_of(f))
    return Progress(
        done=frozenset(ok.trial),
        attempts=attempts,
        orphans=orphans,
        checkpoints=_checkpoints(results_dir, trials),
    )


def _checkpoints(results_dir: Path, trials: pd.DataFrame) -> dict[str, tuple[str, int]]:
    """Per unfinished trial, the latest checkpoint its attempts left that is still on disk."""
    if "checkpoint" not in trials or trials.empty:
        return {}
    done = set(trials.loc[trials.status == "ok", "trial"])
    out: dict[str, tuple[str, int]] = {}
    rows = trials[trials.checkpoint.notna() & ~trials.trial.isin(done)]
    for r in rows.sort_values(["checkpoint_epoch", "attempt"]).itertuples():
        path = results_dir.resolve() / r.checkpoint  # an absolute path stays as it is
        if path.is_dir():
            out[r.trial] = (str(path), int(r.checkpoint_epoch))
    return out


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
