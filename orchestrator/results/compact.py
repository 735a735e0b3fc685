"""A sweep's files of each kind gathered into one: compact/<kind>.parquet, and reading through it.

Compaction: `compact` (called when a sweep or resume ends, and by `benchctl compact`) writes each kind's
rows, conformed to this benchctl's schema, with the manifest [[file name, size, mtime_ns, rows, blake2b],
...] in the metadata (`benchctl.compact_sources`), atomically. read_dir (read_kind's, in reader.py) takes
a file's rows from it only while the file on disk has the same name, size and mtime_ns (or, its mtime
moved by a copy, the same bytes), and reads every other file on its own (checked as always), so the rows
are those of reading every file: a later --resume's files are read, a rewritten file is read fresh, a
deleted file's rows are dropped. A compacted file that cannot be trusted whole (unreadable, a page
checksum wrong, another schema version, a manifest that does not add up) is ignored and the per-trial
files are read: `compact` never deletes the sources, so there it is only ever a cache.

Stored compact: a sweep with compact/ files and no per-trial file of either kind (a committed study under
reports/, its epochs/ and trials/ removed) is read from its compacted files whole (`stored_compact`); a
damaged one is then an error naming it, as a per-trial file is. `compact` leaves such a sweep as it is,
and a --resume that has trials to run first writes its per-trial files back (`restore_trial_files`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.results.files import ResultsError, conform, join_tables, read_checked, write_atomic
from orchestrator.results.rows import META_KIND, META_VERSION, SCHEMAS
from orchestrator.results.schema import SCHEMA_VERSION

_CHUNK = 256  # files per join: 100,800 epoch rows in 4,800 files peak at ~230 MB, not ~490 MB, read at once

# A finished sweep's files of each kind gathered into one (`compact`): a cache, never the only copy.
COMPACT_DIR = "compact"
# JSON [[file name, size, mtime_ns, rows, blake2b of its bytes], ...], in row order
_META_SOURCES = b"benchctl.compact_sources"


def compact_path(results_dir: Path, kind: str) -> Path:
    return Path(results_dir) / COMPACT_DIR / f"{kind}.parquet"


def stored_compact(results_dir: Path) -> bool:
    """Whether a sweep directory is stored compact: a compact/ file and no per-trial file of either kind
    (a committed study), so that its compacted files are its rows rather than a cache of them."""
    results_dir = Path(results_dir)
    return any(compact_path(results_dir, k).is_file() for k in SCHEMAS) and not any(
        next((results_dir / k).glob("*.parquet"), None) for k in SCHEMAS
    )


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
    return read_checked(str(path), kind, None, data), _digest(data)


def read_dir(
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
    is opened and checked on its own (read_checked), so the rows are those of reading every file.
    A sweep stored compact (no per-trial files) is its compacted file, read whole (no manifest rows)."""
    sources = _sources(results_dir, kind)
    if not sources and stored_compact(results_dir):
        path = compact_path(results_dir, kind)
        if not path.is_file():
            return [], []
        return [conform(read_checked(str(path), kind, names, verify=True), schema, str(path))], []
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
            whole = conform(compacted[0].read(columns=columns, use_threads=False), schema, str(results_dir))
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
                tables = list(pool.map(lambda f: read_checked(str(f[0]), kind, names), sources[i:j]))
                hashes = [""] * (j - i)
            parts.append(conform(join_tables(tables, source), schema, source))
            counts = [t.num_rows for t in tables]
        rows_of += [
            [p.name, size, mtime, n, h]
            for (p, size, mtime), n, h in zip(sources[i:j], counts, hashes, strict=True)
        ]
        i = j
    return parts, rows_of


def compact(results_dir: Path) -> dict[str, int]:
    """Gather a sweep directory's files of each kind into compact/<kind>.parquet, with a manifest of the
    files it holds (name, size, mtime_ns, rows, blake2b of the bytes) in its metadata; {kind: files held}.
    The source files stay: the compacted file is a cache read_kind uses for the files that still match its
    manifest, so every reader gives the rows of reading every file. Written to a temp name and renamed
    (write_atomic): a crash leaves the previous copy or none, never half a file. An earlier compacted
    copy's rows are reused for the files it still matches, so compacting after a --resume reads only the
    new files. Raises ResultsError naming a source file that cannot be read (nothing is written then)."""
    results_dir = Path(results_dir)
    if stored_compact(results_dir):  # its compacted files are the only copy: kept as they are
        return {kind: len(_manifest(compact_path(results_dir, kind))) for kind in SCHEMAS}
    with ThreadPoolExecutor(max_workers=4) as pool:  # every file read before anything is written
        read = {
            kind: read_dir(results_dir, kind, schema, None, pool, digests=True)
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


def _manifest(path: Path) -> list[list]:
    """A compacted file's manifest rows [name, size, mtime_ns, rows, digest] ([] where there is none)."""
    if not path.is_file():
        return []
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(_META_SOURCES, b"[]"))


def restore_trial_files(results_dir: Path) -> int:
    """Write a sweep stored compact back into its per-trial files (one per manifest row, the rows the
    compacted file holds for it), so that a --resume may add its own beside them; the number written.
    Both kinds are written into a staging folder first and renamed into place at the end, so a restore
    cut while writing leaves the sweep stored compact. Nothing for a sweep that is not stored compact."""
    results_dir = Path(results_dir)
    if not stored_compact(results_dir):
        return 0
    staging, written = results_dir / ".expand", 0
    shutil.rmtree(staging, ignore_errors=True)
    for kind in SCHEMAS:
        path = compact_path(results_dir, kind)
        table = read_checked(str(path), kind, None, verify=True) if path.is_file() else None
        meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != _META_SOURCES} if table else {}
        first = 0
        for name, _size, _mtime, rows, _digest in _manifest(path):
            write_atomic(table.slice(first, int(rows)).replace_schema_metadata(meta), staging / kind / name)
            first, written = first + int(rows), written + 1
    for kind in SCHEMAS:  # the kind folders hold no Parquet file (stored compact): at most leftovers
        if (staging / kind).is_dir():
            shutil.rmtree(results_dir / kind, ignore_errors=True)
            os.replace(staging / kind, results_dir / kind)
    shutil.rmtree(staging, ignore_errors=True)
    return written
