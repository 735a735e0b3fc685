"""The driver-side callbacks outside a live Tune run (the e2e tests cover them inside one)."""

import pickle

from orchestrator.tune_glue import Progress, _last_error_line


class _Trial:
    def __init__(self, text, error_file=None):
        self.text = text
        self.error_file = error_file

    def get_error(self):
        return self.text


def test_progress_counts_and_prints_one_line_per_change(capsys):
    progress = Progress(total=3)
    progress.on_trial_start(0, [], None)
    progress.on_trial_recover(0, [], None)
    progress.on_trial_start(0, [], None)
    progress.on_trial_complete(0, [], None)
    progress.on_trial_start(0, [], None)
    progress.on_trial_error(0, [], None)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 6
    assert lines[-1].startswith("benchctl: 1/3 trials done · 0 running · 1 failed · 1 retried")


def test_progress_pickles_for_tune_state():
    assert pickle.loads(pickle.dumps(Progress(total=2))).total == 2


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
