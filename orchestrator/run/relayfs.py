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

Paths are the driver's absolute paths. Files travel whole, as one Ray object each (a resnet50
checkpoint with its optimizer state is ~200 MB); a file being written becomes visible only when it
is complete (written to a temporary name, then renamed). The handler holds only the actor's name, so
it pickles into Tune's experiment state and into every trial.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

_INFO = tuple[str, int, int | None, int | None]  # path, FileType value, size, mtime_ns: FileInfo won't pickle


def _pack(info: pafs.FileInfo) -> _INFO:
    return (info.path, int(info.type), info.size, info.mtime_ns)


def _unpack(t: _INFO) -> pafs.FileInfo:
    path, kind, size, mtime_ns = t
    return pafs.FileInfo(path, type=pafs.FileType(kind), size=size, mtime=mtime_ns)


class _StoreImpl:
    """The actor's body: local file operations on the node it runs on."""

    def __init__(self) -> None:
        self.fs = pafs.LocalFileSystem()

    def info(self, paths: list[str]) -> list[_INFO]:
        return [_pack(i) for i in self.fs.get_file_info(paths)]

    def select(self, base: str, recursive: bool, allow_not_found: bool) -> list[_INFO]:
        selector = pafs.FileSelector(base, allow_not_found=allow_not_found, recursive=recursive)
        return [_pack(i) for i in self.fs.get_file_info(selector)]

    def call(self, method: str, *args, **kwargs) -> None:
        getattr(self.fs, method)(*args, **kwargs)

    def read(self, path: str) -> bytes:
        return Path(path).read_bytes()

    def write(self, path: str, data: bytes) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.relay")
        tmp.write_bytes(data)
        os.replace(tmp, target)


def start_store(name: str):
    """The store actor, named `name`, on this (the driver's) node; it dies with the driver's job."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
    actor = ray.remote(num_cpus=0, max_concurrency=8)(_StoreImpl)
    store = actor.options(name=name, scheduling_strategy=here).remote()
    ray.get(store.info.remote(["/"]))  # started and answering before Tune relies on it
    return store


class _Upload(io.RawIOBase):
    """A file being written: bytes gather here and go to the store, whole, on close."""

    def __init__(self, handler: RelayHandler, path: str) -> None:
        self.handler, self.path, self.buf = handler, path, io.BytesIO()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        return self.buf.write(data)

    def close(self) -> None:
        if not self.closed:
            self.handler._ask("write", self.path, self.buf.getvalue())
            self.buf = io.BytesIO()
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

    def _ask(self, method: str, *args, **kwargs):
        import ray

        if self._actor is None:
            self._actor = ray.get_actor(self.name)
        return ray.get(getattr(self._actor, method).remote(*args, **kwargs))

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
        return pa.BufferReader(self._ask("read", path))

    def open_input_file(self, path):
        return pa.BufferReader(self._ask("read", path))

    def open_output_stream(self, path, metadata):
        return pa.PythonFile(_Upload(self, path), mode="w")

    def open_append_stream(self, path, metadata):
        raise OSError("benchctl's relay storage does not append to files")


def storage_filesystem(name: str | None) -> pafs.FileSystem:
    """Tune's storage filesystem: the relay to the store actor `name`, or this machine's own (None)."""
    return pafs.PyFileSystem(RelayHandler(name)) if name else pafs.LocalFileSystem()
