"""results.compact: a finished sweep's files gathered into compact/<kind>.parquet, a cache every reader
uses only for the files that still match its manifest; and a sweep stored compact (no per-trial files,
as reports/ keeps its studies), read from it whole (real pyarrow and pandas, no mocks)."""

import json
import os
import shutil

import pandas.testing as pdt
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.results.compact import compact, compact_path, restore_trial_files, stored_compact
from orchestrator.results.files import SCHEMA_VERSION, ResultsError, file_key, write_rows
from orchestrator.results.reader import read_kind, read_many, read_results
from orchestrator.results.sweepstate import progress

ROW = {"sweep": "s", "cell": "simple_cnn/cpu/bs32/loader/fp32", "model": "simple_cnn", "device": "cpu",
       "batch_size": 32, "compile": "off", "warmup": False, "extrapolated": False,
       "gpu_mem_peak_mb": None}  # fmt: skip


def trial(d, name, attempt=1, epochs=3, status="ok", scale=1.0):
    ident = dict(ROW, trial=f"simple_cnn/cpu/bs32/loader/fp32/{name}", attempt=attempt)
    key = file_key(ident["trial"], attempt)
    rows = [dict(ident, epoch=e, epoch_s=scale * (1 + e / 10)) for e in range(1, epochs + 1)]
    write_rows(d, "epochs", key, rows)
    write_rows(d, "trials", key, [dict(ident, status=status, epochs_done=epochs)])
    return d / "epochs" / f"{key}.parquet"


@pytest.fixture
def sweep(tmp_path):
    d = tmp_path / "s"
    for r in range(5):
        trial(d, f"r{r}", epochs=2 + r)
    # an older-schema file: fewer columns, read as nulls whether compacted or not
    path = trial(d, "r9")
    table = pq.read_table(path).drop_columns(["restored", "checkpoint_s", "checkpoint_mb", "compile"])
    pq.write_table(table.replace_schema_metadata({b"benchctl.schema_version": b"4",
                                                  b"benchctl.kind": b"epochs"}), path)  # fmt: skip
    return d


def assert_same(a, b):
    for x, y in zip(a, b, strict=True):
        pdt.assert_frame_equal(x, y)


def test_compacted_reads_give_identical_rows(sweep):
    before = read_results(sweep)
    columns = read_kind(sweep, "epochs", ["trial", "epoch_s", "compile"])
    assert compact(sweep) == {"epochs": 6, "trials": 6}
    assert compact_path(sweep, "epochs").is_file() and compact_path(sweep, "trials").is_file()
    assert len(list((sweep / "epochs").glob("*.parquet"))) == 6  # the sources stay
    assert_same(read_results(sweep), before)
    pdt.assert_frame_equal(read_kind(sweep, "epochs", ["trial", "epoch_s", "compile"]), columns)
    assert read_results(sweep)[0].compile.isna().sum() == 3  # the schema-4 file's rows
    # the compacted copy is really what is read: a source it holds (same name, size, mtime_ns) is not
    # opened, so one overwritten with junk of its size and given back its mtime goes unnoticed
    victim = sorted((sweep / "epochs").glob("*.parquet"))[0]
    st = victim.stat()
    victim.write_bytes(b"x" * st.st_size)
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert_same(read_results(sweep), before)


def test_several_directories_and_a_directory_twice(sweep, tmp_path):
    other = tmp_path / "o"
    trial(other, "r0", scale=3.0)
    before = read_many([sweep, other, sweep])
    compact(sweep)
    assert_same(read_many([sweep, other, sweep]), before)
    compact(other)
    assert_same(read_many([sweep, other]), before)


def test_a_file_added_after_compaction_is_read(sweep):
    compact(sweep)
    trial(sweep, "r0", attempt=2, epochs=4)  # a --resume's new attempt
    trial(sweep, "r7")  # sorts among the compacted files: the rows keep file order
    epochs, trials = read_results(sweep)
    assert len(trials) == 8 and len(epochs) == 2 + 3 + 4 + 5 + 6 + 3 + 4 + 3
    shutil.rmtree(sweep / "compact")
    assert_same(read_results(sweep), (epochs, trials))
    assert progress(sweep).attempts["simple_cnn/cpu/bs32/loader/fp32/r0"] == 2


def test_compacting_again_reuses_the_copy_and_adds_new_files(sweep):
    compact(sweep)
    trial(sweep, "r8")
    assert compact(sweep) == {"epochs": 7, "trials": 7}
    meta = pq.ParquetFile(compact_path(sweep, "trials")).schema_arrow.metadata
    assert b"r8-a1.parquet" in meta[b"benchctl.compact_sources"]
    expected = read_results(sweep)
    shutil.rmtree(sweep / "compact")
    assert_same(read_results(sweep), expected)


def test_a_changed_source_is_read_fresh_not_the_stale_copy(sweep):
    compact(sweep)
    path = trial(sweep, "r2", epochs=4, scale=5.0)  # rewritten: other rows, size and mtime
    epochs, _ = read_results(sweep)
    assert sorted(epochs[epochs.trial.str.endswith("r2")].epoch_s) == [5.5, 6.0, 6.5, 7.0]
    # same size, only the mtime moved: still read fresh
    trial(sweep, "r3", epochs=5, scale=2.0)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    epochs, _ = read_results(sweep)
    assert epochs[epochs.trial.str.endswith("r3")].epoch_s.max() == pytest.approx(3.0)
    expected = read_results(sweep)
    shutil.rmtree(sweep / "compact")
    assert_same(read_results(sweep), expected)


def test_a_copied_directory_still_uses_its_compacted_files(sweep, tmp_path, monkeypatch):
    """A copy that does not keep mtimes (git, tar's seconds, cp without -p) still matches the manifest by
    the files' bytes; a copied file whose bytes changed is read fresh."""
    from orchestrator.results import compact as results  # read_dir reads each file it opens

    compact(sweep)
    expected = read_results(sweep)
    copy = tmp_path / "copy"
    shutil.copytree(sweep, copy, copy_function=shutil.copyfile)  # new mtimes
    opened = []
    real = results.read_checked
    monkeypatch.setattr(results, "read_checked", lambda path, *a: opened.append(path) or real(path, *a))
    assert_same(read_results(copy), expected)
    assert opened == []  # every row from the compacted files
    trial(copy, "r4", epochs=6, scale=1.5)  # same size as before, other bytes
    epochs, _ = read_results(copy)
    # the epochs file's bytes changed: read; its trials row was rewritten with the same bytes: still held
    key = file_key("simple_cnn/cpu/bs32/loader/fp32/r4", 1)
    assert [os.path.relpath(p, copy) for p in opened] == [f"epochs/{key}.parquet"]
    assert epochs[epochs.trial.str.endswith("r4")].epoch_s.max() == pytest.approx(1.5 * 1.6)


def test_a_deleted_source_drops_its_rows(sweep):
    compact(sweep)
    (sweep / "epochs" / f"{file_key('simple_cnn/cpu/bs32/loader/fp32/r1', 1)}.parquet").unlink()
    epochs, _ = read_results(sweep)
    assert not epochs.trial.str.endswith("r1").any() and len(epochs) == 2 + 4 + 5 + 6 + 3


def test_a_damaged_source_after_compaction_is_named(sweep):
    compact(sweep)
    victim = sorted((sweep / "epochs").glob("*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:100])
    with pytest.raises(ResultsError, match=f"{victim.name}: not a readable Parquet file"):
        read_results(sweep)
    with pytest.raises(ResultsError, match=victim.name):  # and compaction refuses, writing nothing
        compact(sweep)


@pytest.mark.parametrize(
    "damage",
    ["truncate", "garbage", "foreign", "manifest", "version"],
)
def test_a_damaged_compacted_file_is_ignored_for_the_sources(sweep, damage):
    """The documented choice: the compacted file is only a cache, so one that cannot be trusted whole is
    ignored and every source file is read (same rows); `benchctl compact` rebuilds it."""
    expected = read_results(sweep)
    compact(sweep)
    path = compact_path(sweep, "epochs")
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:-200])
    elif damage == "garbage":  # the footer intact, the data pages overwritten
        data = bytearray(path.read_bytes())
        data[8:4000] = b"\xff" * 3992
        path.write_bytes(bytes(data))
    elif damage == "foreign":
        pq.write_table(pa.table({"x": [1]}), path)
    else:
        table = pq.read_table(path)
        meta = dict(table.schema.metadata)
        if damage == "manifest":  # one row more than the file holds
            sources = json.loads(meta[b"benchctl.compact_sources"])
            sources[0][3] += 1
            meta[b"benchctl.compact_sources"] = json.dumps(sources).encode()
        else:
            meta[b"benchctl.schema_version"] = b"1"
        pq.write_table(table.replace_schema_metadata(meta), path)
    assert_same(read_results(sweep), expected)
    compact(sweep)  # rebuilt
    assert_same(read_results(sweep), expected)


def test_a_crash_while_compacting_leaves_a_temp_file_never_read(sweep, monkeypatch):
    expected = read_results(sweep)

    def crash(table, where, **kw):
        with open(where, "wb") as f:
            f.write(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", crash)  # dies mid-write: the temp file is left half written
    with pytest.raises(OSError, match="disk full"):
        compact(sweep)
    monkeypatch.undo()
    assert not compact_path(sweep, "epochs").exists()
    # a temp file a killed process left (write_atomic's name) is never read
    (sweep / "compact").mkdir(exist_ok=True)
    (sweep / "compact" / ".epochs.parquet.12345.tmp").write_bytes(b"PAR1 half a file")
    assert_same(read_results(sweep), expected)
    compact(sweep)
    assert_same(read_results(sweep), expected)


def test_a_source_missing_promised_columns_is_still_named(sweep):
    compact(sweep)
    path = trial(sweep, "r1")
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["eval_partial"]), path)  # the metadata stays
    with pytest.raises(ResultsError, match=rf"r1-a1.parquet: schema version {SCHEMA_VERSION} epochs file"):
        read_results(sweep)


def test_compact_command(sweep, tmp_path):
    result = CliRunner().invoke(app, ["compact", str(sweep)])
    assert result.exit_code == 0, result.output
    assert "6 epochs and 6 trials files compacted" in result.output
    assert compact_path(sweep, "epochs").is_file()
    for bad, why in [(tmp_path / "nope", "does not exist"), (tmp_path, "holds no benchctl results")]:
        result = CliRunner().invoke(app, ["compact", str(bad)])
        assert result.exit_code == 2 and why in result.output
        assert len([line for line in result.output.splitlines() if line.strip()]) == 1


def stored(d):
    """`d` as a committed study keeps it (reports/): compact/ and spec.json, no per-trial file."""
    compact(d)
    for kind in ("epochs", "trials"):
        shutil.rmtree(d / kind)
    assert stored_compact(d)
    return d


def test_a_sweep_stored_compact_reads_as_it_did_with_its_files(sweep):
    before = read_results(sweep)
    columns = read_kind(sweep, "epochs", ["trial", "epoch_s", "compile"])
    state = progress(sweep)
    assert not stored_compact(sweep)  # per-trial files: compact/ would only be a cache
    stored(sweep)
    assert_same(read_results(sweep), before)
    pdt.assert_frame_equal(read_kind(sweep, "epochs", ["trial", "epoch_s", "compile"]), columns)
    assert progress(sweep) == state  # what --resume plans from
    # compacting again keeps the only copy as it is
    held = {k: compact_path(sweep, k).read_bytes() for k in ("epochs", "trials")}
    assert compact(sweep) == {"epochs": 6, "trials": 6}
    assert {k: compact_path(sweep, k).read_bytes() for k in ("epochs", "trials")} == held
    result = CliRunner().invoke(app, ["compact", str(sweep)])
    assert result.exit_code == 0 and "6 epochs and 6 trials files compacted" in result.output


def test_a_file_beside_a_stored_compact_sweep_makes_the_old_rules_hold(sweep):
    # one per-trial file and the compacted files are a cache again: files it lists that are gone drop out
    stored(sweep)
    trial(sweep, "r7")
    epochs, trials = read_results(sweep)
    assert list(trials.trial) == ["simple_cnn/cpu/bs32/loader/fp32/r7"] and len(epochs) == 3


def test_a_damaged_stored_compact_file_is_named_not_skipped(sweep):
    path = compact_path(stored(sweep), "epochs")
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(ResultsError, match="compact/epochs.parquet: not a readable Parquet file"):
        read_results(sweep)


def test_restoring_the_trial_files_of_a_stored_compact_sweep(sweep):
    before = read_results(sweep)
    names = {k: sorted(p.name for p in (sweep / k).glob("*.parquet")) for k in ("epochs", "trials")}
    assert restore_trial_files(stored(sweep)) == 12
    assert not stored_compact(sweep) and not (sweep / ".restore").exists()
    assert {k: sorted(p.name for p in (sweep / k).glob("*.parquet")) for k in ("epochs", "trials")} == names
    assert_same(read_results(sweep), before)
    shutil.rmtree(sweep / "compact")  # the restored files on their own: the same rows
    assert_same(read_results(sweep), before)
    assert restore_trial_files(sweep) == 0  # not stored compact: nothing to do


def test_report_compare_and_ls_on_stored_compact_sweeps(tmp_path):
    from test_compare import A_SECONDS, fake_sweep

    a = fake_sweep(tmp_path / "runs", "a", A_SECONDS)
    b = fake_sweep(tmp_path / "runs", "b", {k: 2 * v for k, v in A_SECONDS.items()})
    runner = CliRunner()

    def outputs():
        report = runner.invoke(app, ["report", str(a), "--out", str(tmp_path / "rep"), "--format", "md"])
        compared = runner.invoke(app, ["compare", str(a), str(b), "--format", "none"])
        listed = runner.invoke(app, ["ls", str(tmp_path / "runs")])
        assert report.exit_code == compared.exit_code == listed.exit_code == 0, report.output
        return (tmp_path / "rep" / "report.md").read_text(), compared.stdout, listed.stdout

    before = outputs()
    stored(a), stored(b)
    assert outputs() == before
    assert "1/4" not in before[2] and "3/4" in before[2]  # ls: 3 of the 4 planned trials done
