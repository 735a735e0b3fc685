"""The driver-side callbacks outside a live Tune run (the e2e tests cover them inside one).
Progress, the progress display, is tested in test_progress.py."""

from orchestrator.run.tune_glue import _last_error_line, start_phases


class _Trial:
    def __init__(self, text, error_file=None):
        self.text = text
        self.error_file = error_file

    def get_error(self):
        return self.text


def test_last_error_line_is_the_exception_line():
    text = "Failure # 1\nTraceback (most recent call last):\n  File x\n"
    text += "DeviceUnavailable: gpu trial got no CUDA\n\n"
    assert _last_error_line(_Trial(text)) == "DeviceUnavailable: gpu trial got no CUDA"
    assert _last_error_line(_Trial(None)) == "trial failed without an error message"


def test_last_error_line_reads_the_staged_error_file_first(tmp_path):
    # Tune writes error.txt to the driver's staging dir before the callbacks run; storage (get_error)
    # gets its copy later, so at callback time get_error() still returns None
    staged = tmp_path / "error.txt"
    staged.write_text("Failure # 1\nTraceback\nValueError: first\nFailure # 2\nTraceback\nKeyError: latest\n")
    assert _last_error_line(_Trial(None, error_file=str(staged))) == "KeyError: latest"
    assert _last_error_line(_Trial("OSError: stored", error_file=str(tmp_path / "gone"))) == "OSError: stored"


def test_a_trials_start_splits_into_phases_from_its_stamps():
    info = {
        "entered_at": 101.0,
        "start_times": {"spawn": 101.5, "main": 102.0, "imports": 105.0},
        "first_step_at": 107.0,
    }
    assert start_phases(100.0, info) == {
        "start_s": 7.0, "start_schedule_s": 1.0, "start_process_s": 0.5, "start_imports_s": 3.0,
        "start_model_s": 2.0,
    }  # fmt: skip
    # inline: no child, so no process or import phase; the model phase starts where the trial did
    inline = start_phases(100.0, {"entered_at": 101.0, "first_step_at": 104.0})
    assert inline["start_process_s"] is None and inline["start_imports_s"] is None
    assert inline["start_model_s"] == 3.0 and inline["start_s"] == 4.0
    assert start_phases(None, {})["start_s"] is None
