"""A report folder is written whole: no file of an earlier report stays, a reader never sees half of
one, a pooled report has a folder of its own, and other files beside a report are kept."""

from __future__ import annotations

import os
import stat

import pytest

from orchestrator.report import build_report
from orchestrator.report.folder import publish
from tests.test_pool import fake_sweep, report


def listing(folder) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_a_pooled_report_goes_to_a_folder_of_its_own_and_leaves_each_sweeps_report_alone(tmp_path):
    a, b = fake_sweep(tmp_path, "a", epochs=3), fake_sweep(tmp_path, "b", epochs=2)
    assert report(a).exit_code == 0
    before = {name: (a / "report" / name).read_bytes() for name in ("report.md", "report.html")}
    result = report(a, b, "--pool")
    assert result.exit_code == 0, result.output
    pooled = tmp_path / "pooled-a-b"
    assert (pooled / "report.md").is_file() and (pooled / "figures").is_dir()
    assert f"a folder of its own, {pooled}; --out chooses another" in result.stdout
    assert {name: (a / "report" / name).read_bytes() for name in before} == before
    assert not (b / "report").exists()
    # sweeps of the same conditions, reported together: report-A-B, beside them too
    c = fake_sweep(tmp_path, "c", epochs=3)
    assert report(a, c).exit_code == 0 and (tmp_path / "report-a-c" / "report.md").is_file()


def test_sweeps_in_different_folders_need_out(tmp_path):
    a, b = fake_sweep(tmp_path / "x", "a"), fake_sweep(tmp_path / "y", "b")
    result = report(a, b)
    assert result.exit_code == 2 and "give --out DIR" in result.stderr
    assert report(a, b, "--out", tmp_path / "both").exit_code == 0


def test_a_report_in_fewer_formats_leaves_no_file_of_the_earlier_one(tmp_path):
    a = fake_sweep(tmp_path, "a")
    assert report(a, "--format", "md,html,csv").exit_code == 0
    full = listing(a / "report")
    assert {"report.md", "report.html", "summary.csv", "epochs.csv"} <= full
    assert report(a, "--format", "md,csv").exit_code == 0
    assert listing(a / "report") == full - {"report.html"}
    assert report(a, "--format", "html").exit_code == 0
    assert listing(a / "report") == full - {"report.md", "summary.csv", "epochs.csv"}
    assert not [p for p in tmp_path.rglob(".*") if p.name.startswith(".report")]  # no staging left
    mode = stat.S_IMODE(os.stat(a / "report").st_mode)
    assert mode == 0o777 & ~_umask()  # a plain folder, as mkdir makes it, not mkdtemp's 0700


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_other_files_beside_a_report_stay(tmp_path):
    a = fake_sweep(tmp_path, "a")
    shared = tmp_path / "reports" / "h200"
    (shared / "results").mkdir(parents=True)
    (shared / "README.md").write_text("# our notes\n")
    (shared / "figures").mkdir()
    (shared / "figures" / "old_figure.png").write_bytes(b"stale")
    assert report(a, "--out", shared, "--format", "md,html").exit_code == 0
    assert report(a, "--out", shared, "--format", "md").exit_code == 0
    assert (shared / "README.md").read_text() == "# our notes\n" and (shared / "results").is_dir()
    assert not (shared / "report.html").exists() and (shared / "report.md").is_file()
    assert not (shared / "figures" / "old_figure.png").exists()  # figures/ is the report's, whole


def test_a_failed_report_leaves_the_earlier_one_whole(tmp_path, monkeypatch):
    a = fake_sweep(tmp_path, "a")
    build_report([a], a / "report")
    before = {p: p.read_bytes() for p in (a / "report").rglob("*") if p.is_file()}

    def broken(staging):
        (staging / "report.md").write_text("half")
        raise RuntimeError("drawing failed")

    with pytest.raises(RuntimeError):
        publish(a / "report", broken)
    assert {p: p.read_bytes() for p in (a / "report").rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in a.iterdir() if p.name.startswith(".")) == []


def test_without_an_atomic_exchange_the_folder_is_swapped_by_two_renames(tmp_path, monkeypatch):
    from orchestrator.report import folder

    monkeypatch.setattr(folder, "_exchange", lambda a, b: False)
    out = tmp_path / "r"
    publish(out, lambda s: (s / "report.md").write_text("one"))
    publish(out, lambda s: (s / "report.html").write_text("two"))
    assert listing(out) == {"report.html"} and listing(tmp_path) == {"r", "r/report.html"}
