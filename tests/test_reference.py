"""The committed reference results (reports/*/results/*) load with today's code and render a report."""

from pathlib import Path

import pytest

from orchestrator.report import build_report
from orchestrator.results.compact import stored_compact
from orchestrator.results.reader import read_results

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_DIRS = sorted(p for p in ROOT.glob("reports/*/results/*") if (p / "spec.json").is_file())


def test_there_is_a_reference():
    assert REFERENCE_DIRS, "no committed reference results under reports/*/results/"


def test_committed_sweeps_are_stored_compact():
    # reports/README.md: one epochs and one trials file per sweep, no per-trial files (issue 33)
    sweeps = sorted(p.parent for p in ROOT.glob("reports/**/spec.json"))
    assert len(sweeps) >= len(REFERENCE_DIRS)
    loose = [str(d.relative_to(ROOT)) for d in sweeps if not stored_compact(d)]
    assert loose == [], "commit sweeps as `benchctl compact DIR` leaves them, without epochs/ and trials/"


# each renders a whole report of a committed sweep (~2-4 s): the fast tier renders the first one
@pytest.mark.parametrize(
    "results",
    [pytest.param(d, marks=() if i == 0 else pytest.mark.slow) for i, d in enumerate(REFERENCE_DIRS)],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_reference_results_load_and_render(results, tmp_path):
    epochs, trials = read_results(results)
    assert not epochs.empty and (trials.status == "ok").any()
    gpu = epochs[epochs.device == "gpu"]
    # a GPU row must say which GPU it ran on: never a CPU measurement labelled GPU
    assert gpu.device_name.str.contains("NVIDIA|AMD|GPU", regex=True).all()
    report = build_report([results], tmp_path)
    assert (tmp_path / "report.md").read_text().count("|") > 10
    assert (tmp_path / "figures" / "speedup_vs_params.png").stat().st_size > 0
    assert report.terminal_text
