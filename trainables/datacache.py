"""A node's data sets, decoded or generated once and read back by every later trial.

    arrays, use = cached_arrays(key, build)   # use: CacheUse.hit | miss | off (on_phase: what it does)
    fingerprint(root / "train", root / "test")  # (files, digest) of a folder's listing
    entries()                                   # what `benchctl cache list` shows

`key` is the data set's identity (a JSON-able dict built by trainables.data.dataset_identity); its
hash names the entry, and the entry holds the key too, so an entry is only used for the set it was
built from. Entries live under cache_root(): $BENCHCTL_CACHE, else $XDG_CACHE_HOME/benchctl/arrays,
else ~/.cache/benchctl/arrays.

An entry is a small JSON header (the key, num_classes, each tensor's dtype, shape and offset) and the
tensors' raw bytes. It is written under a temporary name and renamed into place, so a reader sees a
whole entry or none; a builder holds an flock on the entry's `.lock` file, so a second trial that
wants the same set waits for the first instead of decoding it too (the kernel drops the lock when
its holder dies, so a crashed builder blocks nobody). An unreadable entry is rebuilt; a cache root
that cannot be written only means building without the cache (one line on stderr). The cache never
fails a trial.

torch is imported inside the functions that move tensors, so that `benchctl cache list/clean` start
without torch; `Arrays`, the set as tensors, is defined here (trainables.data imports it, never the
other way round).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

MAGIC = b"benchctl-arrays\n"  # 16 bytes: what `cache list` and the reader check first
FORMAT = 1  # bump when the entry layout changes; older entries then read as unreadable and are rebuilt
SUFFIX = ".arrays"
# The names this module writes (entry, its lock, a builder's temporary file): `cache clean` removes
# only these, so a root shared with other files (BENCHCTL_CACHE=/tmp) loses nothing else.
_OURS = re.compile(r"[a-z0-9_]+-[0-9a-f]{24}(\.arrays|\.lock|\.arrays\.\d+\.tmp)")
_ALIGN = 64  # tensor data starts on 64-byte boundaries: cheap, and friendly to any later mmap
_TENSORS = ("train_x", "train_y", "test_x", "test_y")
_DTYPES = ("|u1", "<i8")  # uint8 and little-endian int64, as numpy names them: the bytes' layout on disk


@dataclass(frozen=True)
class Arrays:
    """A data set as tensors: what trainables.data builds and this cache stores. Defined here, below
    trainables.data, so that the cache needs nothing of data.py (torch only inside its functions)."""

    train_x: torch.Tensor  # uint8, N x 3 x H x W
    train_y: torch.Tensor  # int64, N
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int


class CacheUse(str, Enum):
    hit = "hit"  # read from this node's cache
    miss = "miss"  # built here and stored for the next trial
    off = "off"  # built without the cache (its root not writable, or the entry could not be stored)


class UnreadableEntry(ValueError):
    """A cache file that is not a whole entry of this format for the expected key."""


def cache_root() -> Path:
    """$BENCHCTL_CACHE, else $XDG_CACHE_HOME/benchctl/arrays, else ~/.cache/benchctl/arrays."""
    if os.environ.get("BENCHCTL_CACHE"):
        return Path(os.environ["BENCHCTL_CACHE"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "benchctl" / "arrays"


def fingerprint(*dirs: Path) -> tuple[int, str]:
    """(file count, sha256 of every file's path from its dir's name on, size and mtime) under `dirs`.
    Listing 60,000 files takes a fraction of a second; decoding them takes half a minute. Symlinks
    are followed, as ImageFolder follows them."""
    digest, count = hashlib.sha256(), 0

    def walk(path: str, rel: str) -> None:
        nonlocal count
        with os.scandir(path) as it:  # scandir, not os.walk + os.stat: less than half the time
            found = sorted(it, key=lambda e: e.name)  # the directory's own order differs between copies
        for e in found:
            if e.is_dir():
                walk(e.path, f"{rel}/{e.name}")
            else:
                try:
                    st = e.stat()
                    sig = f"{st.st_size}\0{st.st_mtime_ns}"
                except OSError:  # a dangling link: the decoder names it, not the cache
                    sig = "missing"
                line = f"{rel}/{e.name}\0{sig}\n"
                digest.update(line.encode("utf-8", "surrogateescape"))  # names need not be UTF-8
                count += 1

    for top in dirs:
        walk(str(top), Path(top).name)
    return count, digest.hexdigest()


def entry_path(key: dict, root: Path | None = None) -> Path:
    """The entry file of `key`: the data set's kind (readable in a listing) and the key's hash."""
    canonical = json.dumps(key, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:24]
    return (root or cache_root()) / f"{key.get('dataset', 'data')}-{digest}{SUFFIX}"


def _warn(text: str) -> None:
    print(f"benchctl: data cache: {text}", file=sys.stderr, flush=True)


# ---- the entry format -----------------------------------------------------------------------
# MAGIC, the header's length (8 bytes, little-endian), the JSON header, zero padding to _ALIGN, then
# each tensor's bytes at its offset, counted from the end of the padding so that the header does not
# depend on its own length.


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def read_header(f) -> dict:
    """The JSON header of an open entry file, checked against the file's size; `data_start` added."""
    if f.read(len(MAGIC)) != MAGIC:
        raise UnreadableEntry("not a benchctl arrays file")
    raw = f.read(8)
    if len(raw) != 8:
        raise UnreadableEntry("truncated header")
    (length,) = struct.unpack("<Q", raw)
    size = os.fstat(f.fileno()).st_size
    if length > size:
        raise UnreadableEntry("truncated header")
    try:
        header = json.loads(f.read(length))
        if header["format"] != FORMAT:
            raise UnreadableEntry(f"format {header['format']}, this benchctl reads {FORMAT}")
        names = sorted(t["name"] for t in header["tensors"])
        end = max(t["offset"] + t["nbytes"] for t in header["tensors"])
        if not isinstance(header["key"], dict) or not isinstance(header["num_classes"], int):
            raise UnreadableEntry("bad key or num_classes")
    except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
        raise UnreadableEntry(f"bad header ({type(exc).__name__})") from None
    if names != sorted(_TENSORS):
        raise UnreadableEntry(f"holds tensors {names}")
    header["data_start"] = _aligned(len(MAGIC) + 8 + length)
    if size != header["data_start"] + end:
        raise UnreadableEntry(f"{size} bytes where its header promises {header['data_start'] + end}")
    return header


def _read(path: Path, key: dict) -> Arrays:
    import numpy as np
    import torch

    with open(path, "rb") as f:
        header = read_header(f)
        if header["key"] != key:
            raise UnreadableEntry("holds another data set than its name says")
        out = {}
        for t in header["tensors"]:
            if t["dtype"] not in _DTYPES:
                raise UnreadableEntry(f"dtype {t['dtype']!r}")
            dtype = np.dtype(t["dtype"])
            # Checked before allocating: nbytes is bounded by the file's size, a shape is not.
            if math.prod(t["shape"]) * dtype.itemsize != t["nbytes"] or min(t["shape"], default=0) < 0:
                raise UnreadableEntry(f"{t['name']}: shape and size disagree")
            arr = np.empty(t["shape"], dtype=dtype)
            f.seek(header["data_start"] + t["offset"])
            if f.readinto(arr.reshape(-1).view(np.uint8)) != arr.nbytes:
                raise UnreadableEntry(f"{t['name']}: truncated")
            out[t["name"]] = torch.from_numpy(arr)
    return Arrays(**out, num_classes=header["num_classes"])


def _write(path: Path, key: dict, arrays: Arrays) -> None:
    """Write the entry under a temporary name in the same directory, then rename it into place."""
    specs, blobs, offset = [], [], 0
    for name in _TENSORS:
        arr = getattr(arrays, name).contiguous().numpy()
        if arr.dtype.str not in _DTYPES:
            raise TypeError(f"{name} is {arr.dtype}; the cache stores uint8 and int64")
        specs.append({"name": name, "dtype": arr.dtype.str, "shape": list(arr.shape), "offset": offset,
                      "nbytes": arr.nbytes})  # fmt: skip
        blobs.append(arr.reshape(-1).view("uint8"))
        offset = _aligned(offset + arr.nbytes)
    header = json.dumps({"format": FORMAT, "key": key, "num_classes": arrays.num_classes, "tensors": specs})
    head = MAGIC + struct.pack("<Q", len(header)) + header.encode()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(head)
            for spec, blob in zip(specs, blobs, strict=True):
                f.seek(_aligned(len(head)) + spec["offset"])  # the gap reads back as zeros
                f.write(memoryview(blob))
        # No fsync: a crash can leave a short or empty entry, which read_header's size check rejects.
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ---- the cache ------------------------------------------------------------------------------


def _try_read(path: Path, key: dict, *, discard: bool) -> Arrays | None:
    """The entry's arrays, or None. With `discard` (only under the entry's lock, so that a whole
    entry renamed in meanwhile is not the one removed), an unreadable entry is removed, and said so."""
    try:
        return _read(path, key)
    except FileNotFoundError:
        return None
    except Exception as exc:  # whatever a damaged file makes the reader raise: never fatal
        if discard:
            why = str(exc) if isinstance(exc, UnreadableEntry) else f"{type(exc).__name__}: {exc}"
            _warn(f"{path} is unreadable ({why}); rebuilding it")
            with contextlib.suppress(OSError):  # a read-only cache: storing the rebuilt one says so
                path.unlink(missing_ok=True)
        return None


FROM_CACHE = "reading the data set from this node's cache"
WAITING = "waiting for another trial building the same data set"


def cached_arrays(
    key: dict,
    build: Callable[[], Arrays],
    on_phase: Callable[[str], None] | None = None,
    building: str = "building the data set",
) -> tuple[Arrays, CacheUse]:
    """`build()`'s arrays for the data set `key` names: read from this node's cache when a trial
    built them before; else built once (concurrent callers wait for the one building) and stored.
    `on_phase(text)` says which it does once the cache was looked at: FROM_CACHE, WAITING, or
    `building` just before build() runs."""
    say = on_phase or (lambda text: None)

    def built() -> Arrays:
        say(building)
        return build()

    path = entry_path(key)
    if path.is_file():
        say(FROM_CACHE)
    if (arrays := _try_read(path, key, discard=False)) is not None:
        return arrays, CacheUse.hit  # readers need no lock: entries appear whole, by rename
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        _warn(f"cannot use {path.parent} ({exc.strerror or exc}); building the data set without it")
        return built(), CacheUse.off
    try:
        try:
            try:  # another trial building this set: wait for its entry
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                say(WAITING)
                fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError as exc:  # a filesystem without locks
            _warn(f"cannot lock in {path.parent} ({exc.strerror or exc}); building the data set without it")
            return built(), CacheUse.off
        if path.is_file():
            say(FROM_CACHE)
        if (arrays := _try_read(path, key, discard=True)) is not None:
            return arrays, CacheUse.hit
        arrays = built()
        try:
            _write(path, key, arrays)
        except OSError as exc:  # disk full, the root made read-only, cleaned mid-write, ...
            _warn(f"cannot store {path} ({exc.strerror or exc}); this trial's data set is not cached")
            return arrays, CacheUse.off
        return arrays, CacheUse.miss
    finally:
        os.close(lock)  # releases the flock


# ---- listing and cleaning (no torch) ---------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    path: Path
    size: int  # bytes
    built: float  # when it was stored (mtime, seconds since the epoch)
    key: dict | None  # None: unreadable
    problem: str = ""  # why it is unreadable


def _ours(root: Path, suffix: str = "") -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if _OURS.fullmatch(p.name) and p.name.endswith(suffix))


def entries(root: Path | None = None) -> list[Entry]:
    """Every entry under the root, newest first, each with the key its header records."""
    found = []
    for path in _ours(root or cache_root(), SUFFIX):
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                try:
                    found.append(Entry(path, st.st_size, st.st_mtime, read_header(f)["key"]))
                except UnreadableEntry as exc:
                    found.append(Entry(path, st.st_size, st.st_mtime, None, str(exc)))
        except FileNotFoundError:  # removed meanwhile
            continue
        except OSError as exc:
            found.append(Entry(path, 0, 0.0, None, exc.strerror or str(exc)))
    return sorted(found, key=lambda e: (-e.built, e.path.name))


def clean(root: Path | None = None) -> tuple[int, int]:
    """Remove every entry, lock and leftover temporary file under the root: (entries, bytes) removed.
    A trial building an entry meanwhile only fails to store it, and runs uncached."""
    removed, freed = 0, 0
    for path in _ours(root or cache_root()):
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:  # another clean, or a builder's rename
            continue
        if path.name.endswith(SUFFIX):
            removed, freed = removed + 1, freed + size
    return removed, freed
