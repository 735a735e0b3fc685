import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from orchestrator.results.files import SCHEMA_VERSION, ResultsError, file_key, write_rows
from orchestrator.results.reader import read_results
from orchestrator.results.rows import EPOCH_SCHEMA
from orchestrator.results.sweepstate import planned_trials, unfinished_trials

ROW = {
    "sweep": "s",
    "cell": "simple_cnn/cpu/bs32/loader/fp32",
    "trial": "t",
    "attempt": 1,
    "model": "simple_cnn",
    "device": "cpu",
    "epoch": 2,
    "warmup": False,
    "epoch_s": 1.25,
    "extrapolated": True,
    "gpu_mem_peak_mb": None,
}


def test_round_trip_keeps_types_and_version(tmp_path):
    path = write_rows(tmp_path, "epochs", "k-a1", [ROW])
    table = pq.read_table(path)
    assert table.schema.metadata[b"benchctl.schema_version"] == SCHEMA_VERSION.encode()
    assert table.schema.field("epoch_s").type == pa.float64() and table.num_rows == 1
    epochs, trials = read_results(tmp_path)
    assert epochs.loc[0, "epoch_s"] == 1.25 and bool(epochs.loc[0, "extrapolated"]) is True
    assert list(epochs.columns) == EPOCH_SCHEMA.names and trials.empty
    assert ds.dataset(tmp_path / "epochs").to_table().num_rows == 1  # plain pyarrow reads it
    assert [p.name for p in (tmp_path / "epochs").iterdir()] == ["k-a1.parquet"]  # no temp file left


def test_file_key_is_a_safe_name():
    assert file_key("resnet18/gpu/bs128/loader/fp32/r0", 2) == "resnet18_gpu_bs128_loader_fp32_r0-a2"


def test_foreign_and_truncated_files_are_named(tmp_path):
    write_rows(tmp_path, "epochs", "good-a1", [ROW])
    foreign = tmp_path / "epochs" / "foreign.parquet"
    pq.write_table(pa.table({"x": [1]}), foreign)
    with pytest.raises(ResultsError, match="foreign.parquet: not a benchctl epochs file"):
        read_results(tmp_path)
    foreign.write_bytes(b"PAR1 truncated")
    with pytest.raises(ResultsError, match="foreign.parquet: not a readable Parquet file"):
        read_results(tmp_path)


def test_other_schema_version_is_refused(tmp_path):
    path = write_rows(tmp_path, "epochs", "k-a1", [ROW])
    table = pq.read_table(path)
    pq.write_table(
        table.replace_schema_metadata({b"benchctl.schema_version": b"99", b"benchctl.kind": b"epochs"}), path
    )
    with pytest.raises(ResultsError, match="schema version 99"):
        read_results(tmp_path)


def test_missing_or_empty_directories(tmp_path):
    with pytest.raises(ResultsError, match="does not exist"):
        read_results(tmp_path / "nope")
    with pytest.raises(ResultsError, match="holds no benchctl results"):
        read_results(tmp_path)


SPEC = {"name": "s", "models": ["simple_cnn", "resnet18"], "devices": ["cpu", "gpu"], "batch_sizes": [128],
        "pipelines": ["resident"], "precisions": ["fp32"], "repeats": 2, "per_class": False}  # fmt: skip


def test_planned_trials_are_the_specs_grid_in_trial_id_form():
    planned = planned_trials(SPEC)
    assert len(planned) == 2 * 2 * 2 and len(set(planned)) == 8
    assert (
        "resnet18/gpu/bs128/resident/fp32/r1" in planned
        and "simple_cnn/cpu/bs128/resident/fp32/r0" in planned
    )
    assert planned_trials({**SPEC, "per_class": True}) is None  # classes are known only at run time
    assert planned_trials({"name": "s"}) is None  # not a spec


def test_unfinished_trials_are_planned_ones_without_an_ok_attempt(tmp_path):
    import json

    import pandas as pd

    (tmp_path / "spec.json").write_text(json.dumps({"spec": SPEC}))
    ok = [t for t in planned_trials(SPEC) if not t.startswith("resnet18/gpu")]
    trials = pd.DataFrame(
        [{"sweep": "s", "trial": t, "status": "ok"} for t in ok]
        + [{"sweep": "s", "trial": "resnet18/gpu/bs128/resident/fp32/r0", "status": "error"}]
        + [{"sweep": "other", "trial": "resnet18/gpu/bs128/resident/fp32/r1", "status": "ok"}]
    )
    # r0 failed; r1 completed only in sweep "other": it fills the gap only if "other" ran under the same
    # conditions (its spec.json equal but for grid keys); without its spec or with other epochs it is missing
    r0, r1 = "resnet18/gpu/bs128/resident/fp32/r0", "resnet18/gpu/bs128/resident/fp32/r1"
    assert unfinished_trials(tmp_path, trials) == [r0, r1]
    other = tmp_path / "other"
    other.mkdir()
    (other / "spec.json").write_text(json.dumps({"spec": {**SPEC, "name": "other", "models": ["resnet18"]}}))
    assert unfinished_trials(tmp_path, trials, [tmp_path, other]) == [r0]  # grid keys may differ
    (other / "spec.json").write_text(json.dumps({"spec": {**SPEC, "name": "other", "epochs": 9}}))
    assert unfinished_trials(tmp_path, trials, [other]) == [r0, r1]  # SPEC has no epochs: the default, 10
    (other / "spec.json").write_text(json.dumps({"spec": {**SPEC, "name": "other", "epochs": 10}}))
    assert unfinished_trials(tmp_path, trials, [other]) == [r0]  # read as --resume reads it: the same
    (tmp_path / "spec.json").write_text(json.dumps({"spec": {**SPEC, "epochs": 3}}))
    assert unfinished_trials(tmp_path, trials, [other]) == [r0, r1]  # 3 epochs planned, 9 run: still missing
    own = pd.concat(
        [
            trials,
            pd.DataFrame([{"sweep": "s", "trial": "resnet18/gpu/bs128/resident/fp32/r1", "status": "ok"}]),
        ]
    )
    assert unfinished_trials(tmp_path, own) == ["resnet18/gpu/bs128/resident/fp32/r0"]
    assert unfinished_trials(tmp_path / "nowhere", trials) == []  # no spec.json: no claim


def test_file_missing_a_promised_column_is_one_line_exit_2(tmp_path):
    """A current-schema epochs file without eval_partial (hand-edited, or written by another tool with
    benchctl's metadata) is named with the missing column, exit 2: not a pandas KeyError traceback."""
    from typer.testing import CliRunner

    from orchestrator.cli import app
    from orchestrator.results.rows import promised_columns

    assert "eval_partial" in promised_columns("epochs", "1") and "restored" not in promised_columns(
        "epochs", "4"
    )
    write_rows(tmp_path, "epochs", "good-a1", [ROW])
    path = write_rows(tmp_path, "epochs", "bad-a1", [ROW])
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["eval_partial", "checkpoint_s"]), path)  # the metadata stays
    expected = rf"bad-a1.parquet: schema version {SCHEMA_VERSION} epochs file without column"
    with pytest.raises(ResultsError, match=expected):
        read_results(tmp_path)
    result = CliRunner().invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output
    assert "bad-a1.parquet" in lines[0] and "eval_partial, checkpoint_s" in lines[0]
    assert not (tmp_path / "rep").exists()


def test_older_version_without_newer_columns_reads_them_as_null(tmp_path):
    path = write_rows(tmp_path, "epochs", "old-a1", [ROW])
    table = pq.read_table(path)
    old = table.drop_columns(["restored", "checkpoint_s", "checkpoint_mb", "host_busy_pct", "host_steal_pct"])
    pq.write_table(
        old.replace_schema_metadata({b"benchctl.schema_version": b"3", b"benchctl.kind": b"epochs"}), path
    )
    epochs, _ = read_results(tmp_path)
    assert list(epochs.columns) == EPOCH_SCHEMA.names and epochs["checkpoint_s"].isna().all()


def test_a_column_stored_as_another_type_reads_as_the_schemas(tmp_path):
    """Files are read one by one and joined; the join gets the schema's types as a dataset scan gave them:
    an int64 batch_size (another writer) reads as int32 beside a normal file, a string one is named."""
    write_rows(tmp_path, "epochs", "good-a1", [ROW])
    path = write_rows(tmp_path, "epochs", "wide-a1", [dict(ROW, trial="u", batch_size=64)])
    table = pq.read_table(path)
    i = table.schema.get_field_index("batch_size")
    pq.write_table(table.set_column(i, "batch_size", table.column(i).cast(pa.int64())), path)
    epochs, _ = read_results(tmp_path)
    assert list(epochs.columns) == EPOCH_SCHEMA.names and len(epochs) == 2
    assert str(epochs["batch_size"].dtype) == "float64"  # int32 with a null, as before: pandas' float
    assert sorted(epochs["batch_size"].dropna()) == [64]
    pq.write_table(table.set_column(i, "batch_size", pa.array(["big"])), path)
    with pytest.raises(ResultsError, match="batch_size"):
        read_results(tmp_path)


def test_read_many_reads_only_the_trial_columns_asked_for(tmp_path):
    from orchestrator.results.reader import read_many

    write_rows(tmp_path, "epochs", "k-a1", [ROW])
    write_rows(tmp_path, "trials", "k-a1", [dict(ROW, status="ok", error=None)])
    epochs, trials = read_many([tmp_path, tmp_path], trial_columns=["trial", "status", "nonexistent"])
    assert list(trials.columns) == ["trial", "status"] and trials.to_dict("records") == [
        {"trial": "t", "status": "ok"}
    ]
    assert list(epochs.columns) == EPOCH_SCHEMA.names and len(epochs) == 1  # a directory given twice
