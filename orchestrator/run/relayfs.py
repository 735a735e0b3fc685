"""Tune's storage on the driver's node, reached through Ray itself: checkpoints without NFS or S3.

    store = start_store("benchctl-store-lab1")        # on the driver, before Tune starts
    fs = storage_filesystem("benchctl-store-lab1")      # a pyarrow filesystem, anywhere in the cluster
    tune.RunConfig(storage_path="/abs/results/lab1/.tune", storage_filesystem=fs, ...)

Since Ray 2.7 Tune persists every checkpoint to `RunConfig.storage_path`, which must be reachable
from every node: cloud storage or a shared filesystem, or multi-node checkpointing fails
(ray-project/ray#37177). A lab has neither, but it has Ray. `RelayHandler` is a pyarrow
`FileSystemHandler` whose every call is answered by one small actor (`_Store`, no CPUs) pinned to the
driver's node, which does plain local file I/O there. Tune keeps its own checkpoint logic (persist
after `tune.report`, restore in a retried trial with `tune.get_checkpoint()`, keep the latest N)
and the files land in the results directory on the driver, where `--resume` finds them again.

Paths are the driver's absolute paths. Files travel in CHUNK-sized pieces, at most IN_FLIGHT of them
under way per file, each one actor call (a resnet50 checkpoint with its optimizer state is ~190 MB):
neither the actor nor the driver ever holds a whole file, so several checkpoints arriving at once
cost the driver's node a few chunks of memory each, not a file each (tests/test_relayfs.py measures
it; bench/relay_rate.py its MB/s). A file being written becomes visible only when it is complete
(written to a temporary name, then renamed); one whose upload failed (a full disk) is removed. The
handler holds only the actor's name, so it pickles into Tune's experiment state and into every trial.
"""

from __future__ import annotations

import io
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

CHUNK = 8 << 20  # bytes per actor call: big enough that a call's overhead is small next to its copy
IN_FLIGHT = 4  # chunks under way per open file: keeps the link busy; bounds memory on both ends
MAX_CONCURRENCY = 4  # actor calls answered at once: with CHUNK, what the actor can hold at a time

_INFO = tuple[str, int, int | None, int | None]  # path, FileType value, size, mtime_ns: FileInfo won't pickle


def _pack(info: pafs.FileInfo) -> _INFO:
    return (info.path, int(info.type), info.size, info.mtime_ns)


def _unpack(t: _INFO) -> pafs.FileInfo:
    path, kind, size, mtime_ns = t
    return pafs.FileInfo(path, type=pafs.FileType(kind), size=size, mtime=mtime_ns)


class _StoreImpl:
    """The actor's body: local file operations on the node it runs on, a chunk at a time."""

    def __init__(self) -> None:
        self.fs = pafs.LocalFileSystem()
        # (path, errno, message) of every upload that failed here. pyarrow's copy_files, which Tune
        # uploads with, drops an error raised when a file is closed, and the last chunks of a file
        # land only then: the driver asks for these after each checkpoint (ResultsWriter.on_checkpoint)
        self.failed: list[tuple[str, int | None, str]] = []

    def failures(self) -> list[tuple[str, int | None, str]]:
        return list(self.failed)

    def info(self, paths: list[str]) -> list[_INFO]:
        return [_pack(i) for i in self.fs.get_file_info(paths)]

    def select(self, base: str, recursive: bool, allow_not_found: bool) -> list[_INFO]:
        selector = pafs.FileSelector(base, allow_not_found=allow_not_found, recursive=recursive)
        return [_pack(i) for i in self.fs.get_file_info(selector)]

    def call(self, method: str, *args, **kwargs) -> None:
        getattr(self.fs, method)(*args, **kwargs)

    def size(self, path: str) -> int:
        return os.stat(path).st_size  # FileNotFoundError, as pyarrow expects of a missing file

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        with open(path, "rb") as f:
            return os.pread(f.fileno(), length, offset)

    def write_range(self, tmp: str, target: str, offset: int, data: bytes) -> None:
        """Write one chunk of `target`'s upload into its temporary file `tmp`, at `offset`: chunks may
        arrive in any order. A failed write (a full disk) removes `tmp` and names `target`."""
        try:
            Path(tmp).parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, data, offset)
            finally:
                os.close(fd)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            self.failed.append((target, exc.errno, exc.strerror))
            raise OSError(exc.errno, exc.strerror, target) from None

    def commit(self, tmp: str, target: str) -> None:
        try:
            Path(tmp).parent.mkdir(parents=True, exist_ok=True)
            open(tmp, "ab").close()  # an empty file had no chunk to create it
            os.replace(tmp, target)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            self.failed.append((target, exc.errno, exc.strerror))
            raise OSError(exc.errno, exc.strerror, target) from None

    def abort(self, tmp: str) -> None:
        Path(tmp).unlink(missing_ok=True)


def start_store(name: str):
    """The store actor, named `name`, on this (the driver's) node; it dies with the driver's job."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
    actor = ray.remote(num_cpus=0, max_concurrency=MAX_CONCURRENCY)(_StoreImpl)
    store = actor.options(name=name, scheduling_strategy=here).remote()
    ray.get(store.info.remote(["/"]))  # started and answering before Tune relies on it
    return store


def _get(refs):
    """ray.get, raising the store's own exception (an OSError with its errno and path) rather than
    Ray's wrapper around it, so pyarrow and Tune see a missing file or a full disk for what it is."""
    import ray

    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, BaseException) else None
        if cause is None:
            raise
        raise cause from None


class _Upload(io.RawIOBase):
    """A file being written: its bytes go to the store CHUNK by CHUNK as they come, IN_FLIGHT at most
    under way; on close the store renames the finished file into place."""

    def __init__(self, handler: RelayHandler, path: str) -> None:
        self.store, self.path = handler._store(), path
        target = Path(path)
        self.tmp = str(target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.relay"))
        self.buf, self.offset, self.pending = bytearray(), 0, []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        n = len(view)
        if self.buf:  # complete the chunk begun by an earlier write first
            take = CHUNK - len(self.buf)
            self.buf += view[:take]
            view = view[take:]
            if len(self.buf) < CHUNK:
                return n
            self._send(bytes(self.buf))
            self.buf = bytearray()
        while len(view) >= CHUNK:  # Tune writes 64 MB at a time: sent straight from its buffer
            self._send(bytes(view[:CHUNK]))
            view = view[CHUNK:]
        self.buf += view
        return n

    def _send(self, chunk: bytes) -> None:
        import ray

        if len(self.pending) >= IN_FLIGHT:
            done, self.pending = ray.wait(self.pending, num_returns=1)
            self._settle(done)
        self.pending.append(self.store.write_range.remote(self.tmp, self.path, self.offset, chunk))
        self.offset += len(chunk)

    def _settle(self, refs) -> None:
        """Wait for `refs`; on a failed chunk, wait for the rest, drop the partial file, then raise."""
        try:
            _get(refs)
        except BaseException:
            import ray

            if self.pending:  # none may recreate tmp after the abort below
                ray.wait(self.pending, num_returns=len(self.pending))
            self.pending = []
            _get(self.store.abort.remote(self.tmp))
            raise

    def close(self) -> None:
        if not self.closed:
            try:
                if self.buf:
                    self._send(bytes(self.buf))
                    self.buf = bytearray()
                pending, self.pending = self.pending, []
                self._settle(pending)
                _get(self.store.commit.remote(self.tmp, self.path))
            finally:
                super().close()


class _Download(io.RawIOBase):
    """A file being read: CHUNKs fetched from the store as the reader gets to them, the next IN_FLIGHT
    already asked for; only the current chunk is held here."""

    def __init__(self, handler: RelayHandler, path: str) -> None:
        self.store, self.path = handler._store(), path
        self.size = _get(self.store.size.remote(path))
        self.pos = 0
        self.ahead: dict[int, object] = {}  # chunk index -> its read under way
        self.current: tuple[int, bytes] | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, b) -> int:
        if self.pos >= self.size:
            return 0
        index, start = divmod(self.pos, CHUNK)
        data = self._chunk(index)
        n = min(len(b), len(data) - start)
        memoryview(b).cast("B")[:n] = data[start : start + n]
        self.pos += n
        return n

    def _chunk(self, index: int) -> bytes:
        if self.current is not None and self.current[0] == index:
            return self.current[1]
        self.current = None  # let it go before the next arrives
        last = (self.size - 1) // CHUNK
        for k in [k for k in self.ahead if not index <= k <= index + IN_FLIGHT]:
            del self.ahead[k]  # asked for before a seek elsewhere
        for k in range(index, min(index + IN_FLIGHT, last) + 1):
            if k not in self.ahead:
                self.ahead[k] = self.store.read_range.remote(self.path, k * CHUNK, CHUNK)
        data = _get(self.ahead.pop(index))
        if len(data) != min(CHUNK, self.size - index * CHUNK):
            raise OSError(f"{self.path} changed size while being read through the relay")
        self.current = (index, data)
        return data

    def close(self) -> None:
        self.ahead, self.current = {}, None
        super().close()


class RelayHandler(pafs.FileSystemHandler):
    """pyarrow's file system interface, answered by the named store actor."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._actor = None

    def __getstate__(self) -> dict:
        return {"name": self.name}  # an actor handle stays behind; the name finds it anywhere

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["name"])

    def __eq__(self, other) -> bool:
        return isinstance(other, RelayHandler) and other.name == self.name

    def __ne__(self, other) -> bool:
        return not self == other

    def _store(self):
        import ray

        if self._actor is None:
            self._actor = ray.get_actor(self.name)
        return self._actor

    def _ask(self, method: str, *args, **kwargs):
        return _get(getattr(self._store(), method).remote(*args, **kwargs))

    def get_type_name(self) -> str:
        return "benchctl-relay"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths):
        return [_unpack(t) for t in self._ask("info", list(paths))]

    def get_file_info_selector(self, selector):
        return [_unpack(t) for t in self._ask("select", selector.base_dir, selector.recursive,
                                                selector.allow_not_found)]  # fmt: skip

    def create_dir(self, path, recursive):
        self._ask("call", "create_dir", path, recursive=recursive)

    def delete_dir(self, path):
        self._ask("call", "delete_dir", path)

    def delete_dir_contents(self, path, missing_dir_ok=False):
        self._ask("call", "delete_dir_contents", path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        raise OSError("benchctl's relay storage never empties the driver's root directory")

    def delete_file(self, path):
        self._ask("call", "delete_file", path)

    def move(self, src, dest):
        self._ask("call", "move", src, dest)

    def copy_file(self, src, dest):
        self._ask("call", "copy_file", src, dest)

    def open_input_stream(self, path):
        return pa.PythonFile(_Download(self, path), mode="r")

    def open_input_file(self, path):
        return pa.PythonFile(_Download(self, path), mode="r")

    def open_output_stream(self, path, metadata):
        return pa.PythonFile(_Upload(self, path), mode="w")

    def open_append_stream(self, path, metadata):
        raise OSError("benchctl's relay storage does not append to files")


def storage_filesystem(name: str | None) -> pafs.FileSystem:
    """Tune's storage filesystem: the relay to the store actor `name`, or this machine's own (None)."""
    return pafs.PyFileSystem(RelayHandler(name)) if name else pafs.LocalFileSystem()


def upload_failures(name: str) -> list[tuple[str, int | None, str]]:
    """The uploads that failed at the store `name` so far: (path, errno, message) each."""
    import ray

    return ray.get(ray.get_actor(name).failures.remote())
