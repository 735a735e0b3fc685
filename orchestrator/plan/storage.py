"""Where Ray Tune keeps a sweep's checkpoints and experiment state: `--storage URI`, or else the relay.

    uri = parse("s3://lab/ckpt?endpoint_override=10.0.0.5:9000&scheme=http")   # checked, no I/O
    check(uri, "lab1", write=True)      # reachable and writable, the sweep's folder not taken: before Ray
    fs, path = location(uri)            # a pyarrow filesystem and a path in it: RunConfig's storage
    text = uri_of(fs, path)             # how a trials row names a checkpoint: s3://lab/ckpt/lab1/...
    fs, path = checkpoint_location(uri, text)   # ... and how a --resume finds it again

Without --storage, Tune's storage is `results/NAME/.tune` on the driver's disk, reached from other
nodes through a Ray actor (orchestrator/run/relayfs.py): nothing to set up, but every checkpoint goes
through the driver. With it, every node writes there itself: a shared filesystem mounted at the same
path on every node (`/mnt/nfs/ckpt` or `file:///mnt/nfs/ckpt`), or any storage pyarrow opens by URI
(`s3://bucket/prefix`; an S3-compatible server by `?endpoint_override=HOST:PORT&scheme=http` or by
$AWS_ENDPOINT_URL; credentials as the AWS SDK finds them on each node, e.g. $AWS_ACCESS_KEY_ID and
$AWS_SECRET_ACCESS_KEY). cluster/README.md says when to pick which. The results (Parquet) always stay
in OUT/NAME on the driver; a sweep's Tune folder is STORAGE/NAME (a resume's STORAGE/NAME-resume-...).
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from orchestrator.errors import BenchctlError
from trainables.config import CheckpointPolicy

# URI schemes pyarrow's FileSystem.from_uri opens (file: a path every node mounts)
SCHEMES = ("file", "s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss")
# pyarrow filesystem type -> the scheme a trials row writes before a checkpoint's path there
_ROW_SCHEME = {"s3": "s3", "gcs": "gs", "hdfs": "hdfs", "abfs": "abfs"}
_PROBE = ".benchctl-write-probe"


def parse(text: str) -> str:
    """`text` as a storage URI, checked without I/O: an absolute path, file:///PATH, or a URI of a scheme
    in SCHEMES. ValueError, worded for the user, otherwise."""
    text = text.strip()
    fix = "give an absolute path every node mounts, file:///PATH or s3://BUCKET/PREFIX"
    if text.startswith("/"):
        return text
    scheme = urlsplit(text).scheme.lower() if "://" in text else ""
    if not scheme:
        raise ValueError(f"{text!r} is neither an absolute path nor a URI; {fix}")
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r} in {text!r} (known: {', '.join(SCHEMES)}); {fix}")
    if scheme == "file" and not urlsplit(text).path.startswith("/"):
        raise ValueError(f"{text!r} names no absolute path; {fix}")
    if urlsplit(text).password is not None or "secret_key=" in text:  # spec.json and every line say the URI
        raise ValueError("holds credentials; set them in the environment (e.g. $AWS_ACCESS_KEY_ID and "
                         "$AWS_SECRET_ACCESS_KEY) on this machine and every node instead")  # fmt: skip
    return text


def settle(every: int | None, every_s: float | None, storage: str | None) -> tuple:
    """A sweep's --checkpoint-every, --checkpoint-every-s and --storage as checked values (no I/O):
    every epoch when neither rule is given. ValueError naming the option otherwise."""
    if every is None and every_s is None:
        every = 1
    if isinstance(every_s, int) and not isinstance(every_s, bool):
        every_s = float(every_s)
    try:
        CheckpointPolicy(every_epochs=every, every_s=every_s)
    except ValueError as exc:
        flag = "--checkpoint-every-s" if str(exc).startswith("every_s") else "--checkpoint-every"
        raise ValueError(f"{flag}: {str(exc).partition(': ')[2]}") from None
    if storage is not None:
        try:
            storage = parse(storage)
        except ValueError as exc:
            raise ValueError(f"--storage: {exc}") from None
    return every, every_s, storage


def _local_path(uri: str) -> str | None:
    """The path of a local (shared-filesystem) storage URI, None for a remote one."""
    if uri.startswith("/"):
        return uri
    parts = urlsplit(uri)
    return parts.path if parts.scheme.lower() == "file" else None


def network_needed(uri: str | None) -> str | None:
    """Why a local sweep's Ray cannot live in a private network namespace (lab/netns.py) with this
    storage: remote storage is reached over the network. None for the relay or a path."""
    if uri is None or _local_path(uri) is not None:
        return None
    return f"--storage {uri.split('?')[0]} is reached over the network"


def location(uri: str):
    """(pyarrow filesystem, path in it) of a storage URI (parse's): a local path on this machine's own
    filesystem, else what pyarrow's FileSystem.from_uri makes of it (query options such as
    endpoint_override applied, the path without them)."""
    import pyarrow.fs as pafs

    local = _local_path(uri)
    if local is not None:
        return pafs.LocalFileSystem(), str(PurePosixPath(local))
    return pafs.FileSystem.from_uri(uri)


def uri_of(fs, path: str) -> str:
    """How a trials row names a file at `path` on Tune's storage `fs`: the path itself on this machine's
    filesystem (or the relay's), `scheme://path` on remote storage, so that a row says where it lies."""
    scheme = _ROW_SCHEME.get(getattr(fs, "type_name", ""))
    return f"{scheme}://{path}" if scheme else path


def checkpoint_location(uri: str, text: str):
    """(filesystem, path) of a checkpoint a trials row names (`uri_of`), on the storage `uri`."""
    fs, _ = location(uri)
    return fs, text.split("://", 1)[1] if "://" in text else text


def _fail(uri: str, what: str, fix: str) -> BenchctlError:
    return BenchctlError(f"--storage: {uri}: {what}; {fix}")


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]  # pyarrow's messages span lines; the error is one


_REMOTE_FIX = "check its address, bucket and credentials (this machine's and every node's)"


def _check_local(uri: str, path: Path, write: bool) -> None:
    existing = next(p for p in (path, *path.parents) if p.exists())
    fix = "give a writable directory that every node mounts at that path"
    if not existing.is_dir():
        raise _fail(uri, f"{existing} is not a directory", fix)
    if not write:
        return
    probe = existing / f"{_PROBE}-{uuid.uuid4().hex[:8]}"
    try:  # os.access says yes to root on a read-only mount: write for real, in what exists already
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise _fail(uri, f"cannot write to {existing} ({exc.strerror})", fix) from None


def _check_remote(uri: str, fs, path: str, write: bool) -> None:
    import pyarrow as pa

    try:
        fs.get_file_info(path)  # reachable, credentials accepted
    except (OSError, pa.ArrowException) as exc:
        raise _fail(uri, f"cannot reach it ({_reason(exc)})", _REMOTE_FIX) from None
    if not write:
        return
    probe = f"{path.rstrip('/')}/{_PROBE}-{uuid.uuid4().hex[:8]}"
    try:
        with fs.open_output_stream(probe):
            pass
    except (OSError, pa.ArrowException) as exc:
        raise _fail(uri, f"cannot write to it ({_reason(exc)})", _REMOTE_FIX) from None
    with contextlib.suppress(OSError, pa.ArrowException):
        fs.delete_file(probe)


def check(uri: str, name: str, *, write: bool, resume: bool = False) -> None:
    """BenchctlError (one line, exit 2) unless Tune's storage `uri` can be reached and, with `write`, be
    written to (a probe file, removed again); and unless a new sweep's folder there, uri/name, is free
    (two sweeps of one name would share Tune's experiment state). Nothing is left behind."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    try:
        fs, path = location(uri)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _fail(uri, f"cannot open it ({_reason(exc)})", _REMOTE_FIX) from None
    local = _local_path(uri)
    if local is not None:
        _check_local(uri, Path(local), write)
    else:
        _check_remote(uri, fs, path, write)
    if resume:
        return
    try:
        taken = fs.get_file_info(f"{path.rstrip('/')}/{name}").type != pafs.FileType.NotFound
    except (OSError, pa.ArrowException):
        taken = False  # reachable a moment ago; Tune says what went wrong, if anything does
    if taken:
        raise _fail(uri, f"{name} there already holds a sweep's checkpoints",
                    "choose another --name, or add --resume to complete that sweep")  # fmt: skip


def describe(policy: CheckpointPolicy | None, storage: str | None) -> str:
    """One line of how a sweep checkpoints (its start and its dry run say it)."""
    if policy is None:
        return "benchctl: checkpoints: off (--no-checkpoint): a retried or resumed trial starts again"
    rules = [f"{policy.every_epochs} epochs"] if policy.every_epochs else []
    rules += [f"{policy.every_s:g} s"] if policy.every_s else []
    if policy.every_epochs == 1:
        when = "after every epoch"
    elif rules:
        when = f"after every {' or '.join(rules)} since the last one, and after the last epoch"
    else:
        when = "after the last epoch only"
    where = f"in {storage}" if storage else "on the driver's disk (OUT/NAME/.tune, no --storage)"
    return f"benchctl: checkpoints: {when}; the latest kept per trial, {where}"
