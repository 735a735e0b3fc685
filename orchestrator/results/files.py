"""Results on disk: versioned Parquet, one file per trial attempt, never half-written.

    results/<sweep>/epochs/<trial-key>.parquet   one row per trial epoch (attempts that completed)
    results/<sweep>/trials/<trial-key>.parquet   one row per trial attempt (status ok / error)
    results/<sweep>/spec.json                    the sweep as it was asked for, plus provenance
    results/<sweep>/compact/<kind>.parquet       a finished sweep's files of each kind in one
                                                 (orchestrator/results/compact.py)

    import pyarrow.dataset as ds
    ds.dataset("results/s1/epochs").to_table()      # plain pyarrow reads it
    from orchestrator.results.reader import read_results
    epochs, trials = read_results(Path("results/s1"))  # validated: names the bad file if any

Every file carries `benchctl.schema_version` and `benchctl.kind` in its Parquet metadata. This module
writes the files and reads one file, checked; compact.py reads a sweep's files through its compacted
copy, and reader.py is the read API over sweep directories (read_kind, read_many, read_results).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.errors import BenchctlError
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
    try:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
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


def read_checked(
    path: str, kind: str, columns: frozenset[str] | None, data: bytes | None = None, verify: bool = False
) -> pa.Table:
    """One file, its footer parsed once: checked (_check), then the wanted columns it holds read (from
    `data`, the file's bytes, when given; its page checksums verified when `verify`)."""
    try:
        source = path if data is None else pa.BufferReader(data)
        parquet = pq.ParquetFile(source, page_checksum_verification=verify)
        _check(Path(path), kind, parquet.schema_arrow)
        names = parquet.schema_arrow.names
        return parquet.read(columns=None if columns is None else [c for c in names if c in columns],
                            use_threads=False)  # fmt: skip
    except (pa.ArrowException, OSError) as exc:
        raise ResultsError(f"{path}: not a readable Parquet file ({exc}); delete or move it") from None


def read_file(path: Path, kind: str) -> pa.Table:
    return read_checked(str(path), kind, None)


def conform(table: pa.Table, schema: pa.Schema, source: str) -> pa.Table:
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


def join_tables(tables: list[pa.Table], source: str) -> pa.Table:
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
