"""`--storage URI`: checked before anything starts (orchestrator/plan/storage.py), recorded in spec.json,
kept by --resume, and no condition of the measurements. Sweeps that use it: tests/test_storage_sweeps.py."""

import os

import pyarrow.fs as pafs
import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.errors import BenchctlError
from orchestrator.plan import storage
from orchestrator.plan.spec import SpecError, SweepSpec, condition_differences, spec_differences

runner = CliRunner()


S3_COMPATIBLE = "s3://lab/ckpt?endpoint_override=10.0.0.5:9000&scheme=http"


@pytest.mark.parametrize("text", ["/mnt/nfs/ckpt", "file:///mnt/nfs/ckpt", "s3://lab/ckpt", S3_COMPATIBLE, "gs://b/p"])
def test_paths_and_uris_pyarrow_opens_are_taken(text):
    assert storage.parse(f" {text} ") == text
    assert SweepSpec(name="x", storage=text).to_dict()["storage"] == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ftp://host/ckpt", "--storage: unknown scheme 'ftp' in 'ftp://host/ckpt' (known: file, s3"),
        ("ckpt/here", "--storage: 'ckpt/here' is neither an absolute path nor a URI; give an absolute path"),
        ("file://ckpt", "--storage: 'file://ckpt' names no absolute path"),
        ("s3://AKIA:hush@bkt/p", "--storage: holds credentials; set them in the environment"),
        ("s3://bkt/p?access_key=AKIA&secret_key=hush", "--storage: holds credentials; set them in the"),
    ],
)
def test_a_storage_that_names_no_storage_is_refused_in_one_line(text, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SweepSpec(name="x", storage=text)
    result = runner.invoke(app, ["sweep", "--storage", text, "--dry-run"])
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_an_unwritable_or_non_directory_path_is_refused_before_anything_is_written(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(BenchctlError, match=f"--storage: {afile}/ckpt: {afile} is not a directory; give"):
        storage.check(f"{afile}/ckpt", "s1", write=True)
    # a read-only filesystem (root may write anywhere else): /proc takes no new files
    with pytest.raises(BenchctlError, match="--storage: /proc/benchctl-ckpt: cannot write to /proc"):
        storage.check("/proc/benchctl-ckpt", "s1", write=True)
    where = tmp_path / "new" / "ckpt"
    storage.check(f"file://{where}", "s1", write=True)
    assert not (tmp_path / "new").exists()  # checked in what exists already, nothing created or left


def test_a_new_sweep_whose_folder_on_the_storage_is_taken_is_refused(tmp_path):
    (tmp_path / "s1").mkdir()
    with pytest.raises(BenchctlError, match="s1 there already holds a sweep's checkpoints; choose another"):
        storage.check(str(tmp_path), "s1", write=True)
    storage.check(str(tmp_path), "s1", write=True, resume=True)  # its resume goes on there
    storage.check(str(tmp_path), "s2", write=False)
    assert sorted(os.listdir(tmp_path)) == ["s1"]


def test_rows_name_remote_checkpoints_by_uri_and_resume_finds_them_by_the_sweeps_storage():
    s3 = pafs.S3FileSystem(endpoint_override="127.0.0.1:9", scheme="http")  # no connection made
    assert storage.uri_of(s3, "bkt/pre/lab/t/checkpoint_000001") == "s3://bkt/pre/lab/t/checkpoint_000001"
    assert storage.uri_of(pafs.LocalFileSystem(), "/mnt/nfs/lab/t") == "/mnt/nfs/lab/t"
    fs, path = storage.checkpoint_location("s3://bkt/pre?endpoint_override=127.0.0.1:9&scheme=http",
                                           "s3://bkt/pre/lab/t/checkpoint_000001")  # fmt: skip
    assert fs.type_name == "s3" and path == "bkt/pre/lab/t/checkpoint_000001"
    fs, path = storage.checkpoint_location("file:///mnt/nfs", "/mnt/nfs/lab/t/checkpoint_000001")
    assert fs.type_name == "local" and path == "/mnt/nfs/lab/t/checkpoint_000001"


def test_storage_is_kept_by_a_resume_but_is_no_condition_of_the_results():
    relay = SweepSpec(name="x", models=("simple_cnn",), devices=("cpu",)).to_dict()
    nfs = SweepSpec(name="x", models=("simple_cnn",), devices=("cpu",), storage="/mnt/nfs")
    assert condition_differences(relay, nfs.to_dict()) == {}  # their numbers pool in one report
    assert spec_differences(relay, nfs) == ["storage: None -> '/mnt/nfs'"]  # its checkpoints lie elsewhere


def test_the_dry_run_says_how_the_sweep_checkpoints_and_where(tmp_path):
    args = ["sweep", "--models", "simple_cnn", "--devices", "cpu", "--epochs", "4", "--out", str(tmp_path),
            "--dry-run"]  # fmt: skip
    plain = runner.invoke(app, args)
    assert plain.exit_code == 0, plain.output
    assert "checkpoints: after every epoch; the latest kept per trial, on the driver's disk" in plain.output
    given = runner.invoke(app, [*args, "--checkpoint-every", "2", "--checkpoint-every-s", "90", "--storage",
                                str(tmp_path / "ckpt")])  # fmt: skip
    assert given.exit_code == 0, given.output
    said = "checkpoints: after every 2 epochs or 90 s since the last one, and after the last epoch; the"
    assert f"{said} latest kept per trial, in {tmp_path / 'ckpt'}" in given.output
    assert sorted(os.listdir(tmp_path)) == []  # a dry run writes nothing, not even a probe
