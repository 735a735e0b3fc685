"""The driver-side callbacks outside a live Tune run (the e2e tests cover them inside one).
Progress, the progress display, is tested in test_progress.py."""

from orchestrator.tune_glue import _last_error_line


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
