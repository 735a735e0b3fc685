"""ResultsWriter (orchestrator/run/tune_glue.py) driven by stand-in Tune trials, without a Ray cluster:
each attempt's two files, their status as it ends, attempt numbers across a retry and a --resume, the
checkpoint a row names, and the trials that shared a host. The e2e tests cover it inside a live Tune run."""

import json

import pyarrow.parquet as pq

from orchestrator.plan.trial_plan import TrialPlan
from orchestrator.run.tune_glue import INFO_KEY, ResultsWriter
from trainables.config import TrialConfig


class _Trial:
    def __init__(self, tid: str, plan: TrialPlan, error: str | None = None):
        self.trial_id, self.config, self.error_file, self._error = tid, plan.tune_config(), None, error

    def get_error(self):
        return self._error


class _Checkpoint:
    """What the writer reads of Tune's Checkpoint: its path and the filesystem it lies on."""

    def __init__(self, path):
        import pyarrow.fs as pafs

        self.path, self.filesystem = str(path), pafs.LocalFileSystem()


def _plan(model: str, tiny) -> TrialPlan:
    return TrialPlan(trial=TrialConfig(model=model, epochs=2, **tiny), sweep="s")


def _result(epoch: int, host: str | None = None) -> dict:
    out = {"epoch": epoch, "epoch_s": 1.5 * epoch, "loss": 1.0 / epoch}
    if host:
        out[INFO_KEY] = json.dumps({"host": host, "params": 7, "start_method": "fresh"})
    return out


def _rows(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def test_each_attempt_is_one_record_written_as_it_goes(tmp_path, tiny):
    a, b = _plan("simple_cnn", tiny), _plan("resnet18", tiny)
    writer = ResultsWriter(tmp_path, {"git_commit": "abc"}, prior_attempts={a.trial.trial_id: 2})
    ta, tb = _Trial("t1", a, error="ValueError: boom"), _Trial("t2", b)
    writer.on_trial_start(0, [], ta)
    writer.on_trial_start(0, [], tb)
    writer.on_trial_result(0, [], ta, _result(1, host="h"))
    writer.on_trial_result(0, [], tb, _result(1, host="h"))
    writer.on_checkpoint(0, [], ta, _Checkpoint(tmp_path / ".tune" / "ck1"))
    partial = _rows(tmp_path / "trials" / "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a3.parquet")[0]
    assert partial["status"] == "partial" and partial["attempt"] == 3  # a --resume's numbering goes on
    assert partial["checkpoint"] == ".tune/ck1" and partial["checkpoint_epoch"] == 1
    writer.on_trial_recover(0, [], ta)  # a failed attempt; Tune retries it as a new one
    failed = _rows(tmp_path / "trials" / "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a3.parquet")[0]
    assert failed["status"] == "error" and failed["error"] == "ValueError: boom"
    assert failed["overlapped_with"] == b.trial.trial_id and failed["git_commit"] == "abc"
    writer.on_trial_start(0, [], ta)
    writer.on_trial_result(0, [], ta, _result(1, host="h"))
    writer.on_trial_result(0, [], ta, _result(2))
    writer.on_trial_complete(0, [], ta)
    writer.on_trial_result(0, [], tb, _result(2))
    writer.on_trial_complete(0, [], tb)
    retry = _rows(tmp_path / "trials" / "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a4.parquet")[0]
    assert retry["status"] == "ok" and retry["epochs_done"] == 2 and retry["checkpoint"] is None
    assert retry["host"] == "h" and retry["params"] == 7 and retry["start_method"] == "fresh"
    assert retry["started_at"] is not None and retry["ended_at"] >= retry["started_at"]
    assert retry["overlapped_with"] == b.trial.trial_id
    epochs = _rows(tmp_path / "epochs" / "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a4.parquet")
    assert [r["epoch"] for r in epochs] == [1, 2] and {r["attempt"] for r in epochs} == {4}
    other = _rows(tmp_path / "trials" / "resnet18_cpu_bs32_loader_fp32_w0_r0-a1.parquet")[0]
    assert other["overlapped_with"] == a.trial.trial_id and other["epochs_done"] == 2
    assert sorted(p.name for p in writer.written) == sorted(
        [
            "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a3.parquet",
            "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a3.parquet",
            "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a4.parquet",
            "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a4.parquet",
            "resnet18_cpu_bs32_loader_fp32_w0_r0-a1.parquet",
            "resnet18_cpu_bs32_loader_fp32_w0_r0-a1.parquet",
        ]
    )


def test_an_attempt_that_ended_before_its_neighbour_reported_still_names_it(tmp_path, tiny):
    # b starts while a runs, but its host is known only from its first report, after a has ended
    a, b = _plan("simple_cnn", tiny), _plan("resnet18", tiny)
    writer = ResultsWriter(tmp_path, {})
    ta, tb = _Trial("t1", a), _Trial("t2", b)
    writer.on_trial_start(0, [], ta)
    writer.on_trial_result(0, [], ta, _result(1, host="h"))
    writer.on_trial_start(0, [], tb)
    writer.on_trial_complete(0, [], ta)
    first = _rows(tmp_path / "trials" / "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a1.parquet")[0]
    assert first["overlapped_with"] is None and first["status"] == "ok"
    writer.on_trial_result(0, [], tb, _result(1, host="h"))
    first = _rows(tmp_path / "trials" / "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a1.parquet")[0]
    assert first["overlapped_with"] == b.trial.trial_id and first["status"] == "ok"
    writer.on_trial_complete(0, [], tb)
    second = _rows(tmp_path / "trials" / "resnet18_cpu_bs32_loader_fp32_w0_r0-a1.parquet")[0]
    assert second["overlapped_with"] == a.trial.trial_id
    # a later attempt on another host, or one started after a ended, leaves the row alone
    tc = _Trial("t3", _plan("resnet50", tiny))
    writer.on_trial_start(0, [], tc)
    writer.on_trial_result(0, [], tc, _result(1, host="h"))
    first = _rows(tmp_path / "trials" / "simple_cnn_cpu_bs32_loader_fp32_w0_r0-a1.parquet")[0]
    assert first["overlapped_with"] == b.trial.trial_id
    names = [p.name for p in writer.written if p.parent.name == "trials"]
    assert len(names) == len(set(names))  # a rewritten row is listed once
