"""Results on disk: versioned Parquet, one file per trial attempt, never half-written.

    results/<sweep>/epochs/<trial-key>.parquet   one row per trial epoch (attempts that completed)
    results/<sweep>/trials/<trial-key>.parquet   one row per trial attempt (status ok / error)
    results/<sweep>/spec.json                    the sweep as it was asked for, plus provenance
    results/<sweep>/compact/<kind>.parquet       a finished sweep's files of each kind in one (`compact`):
                                                 a cache with a manifest, the files above stay

    import pyarrow.dataset as ds
    ds.dataset("results/s1/epochs").to_table()      # plain pyarrow reads it
    from orchestrator.results.files import read_results
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

import hashlib
import json
import os
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.errors import BenchctlError
from orchestrator.plan.hints import resume_command
from orchestrator.results.rows import META_KIND, META_VERSION, SCHEMAS, promised_columns
from orchestrator.results.schema import READABLE_VERSIONS, SCHEMA_VERSION  # what each added: CHANGELOG.md


class ResultsError(BenchctlError):
    """A results directory or file cannot be read; the message names it."""


def file_key(trial: str, attempt: int) -> str:
    """A file name for one trial attempt: `resnet18/gpu/bs128/loader/fp32/r0` -> `resnet18_gpu_...-a1`."""
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", trial) + f"-a{attempt}"


def to_table(rows: list[dict], kind: str) -> pa.Table:
    schema = SCHEMAS[kind]
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    table = pa.Table.from_pydict(columns, schema=schema)
    return table.replace_schema_metadata({META_VERSION: SCHEMA_VERSION.encode(), META_KIND: kind.encode()})


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


def _check(path: Path, kind: str, schema: pa.Schema) -> None:
    """ResultsError naming `path` unless its Parquet schema is a readable benchctl `kind` file that holds
    the columns its version promises."""
    meta = schema.metadata or {}
    version = meta.get(META_VERSION)
    if version is None or meta.get(META_KIND) != kind.encode():
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


def read_file(path: Path, kind: str) -> pa.Table:
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
        if meta.get(META_KIND) != kind.encode() or meta.get(META_VERSION) != SCHEMA_VERSION.encode():
            return None
        if not set(SCHEMAS[kind].names) <= set(parquet.schema_arrow.names):
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
    schema = SCHEMAS[kind]
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
            for kind, schema in SCHEMAS.items()
        }
    for kind, (parts, rows_of) in read.items():
        path = compact_path(results_dir, kind)
        if not parts:
            path.unlink(missing_ok=True)
            continue
        table = pa.concat_tables(parts).combine_chunks()
        meta = {META_VERSION: SCHEMA_VERSION.encode(), META_KIND: kind.encode(),
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
    if any(next((results_dir / kind).glob("*.parquet"), None) for kind in SCHEMAS):
        return
    if (results_dir / "spec.json").is_file():  # a sweep that began, cut before its first epoch ended
        raise ResultsError(
            f"{results_dir}: the sweep finished no epoch yet, so there is nothing to report; continue it "
            f"with `{resume_command(results_dir)}`"
        )
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
