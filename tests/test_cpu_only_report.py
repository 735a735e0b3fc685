"""A report of CPU cells only: no GPU column, section or term that cannot apply, a way to a speedup,
and an accuracy figure with chance marked on an axis that does not magnify noise."""

from __future__ import annotations

import pytest

from orchestrator.analysis.stats import accuracy_curves
from orchestrator.report import build_report, epoch_figures
from orchestrator.report.model import chance_pct
from orchestrator.report.narrative import CPU_ONLY
from tests.test_figures import captured, epochs  # noqa: F401  (captured: a fixture)
from tests.test_report import write_run


@pytest.fixture
def cpu_only(tmp_path):
    d = tmp_path / "s1"
    write_run(d, "simple_cnn", "cpu", [100.0, 30.0, 31.0], accs=[0.097, 0.12, 0.105])
    write_run(d, "resnet18", "cpu", [100.0, 60.0, 62.0], accs=[0.1, 0.11, 0.099])
    return d


def test_a_cpu_only_report_leaves_out_what_needs_a_gpu_and_says_how_to_get_a_speedup(cpu_only, tmp_path):
    built = build_report([cpu_only], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    header = md.split("## Results")[1].split("\n")[2]
    assert "CPU epoch s" in header and "CPU acc" in header
    assert "GPU" not in header and "speedup" not in header
    for gone in ("## Compute efficiency", "## Accuracy parity", "## Compared with the paper",
                 "launch-bound", "GPU J/epoch", "MFU", "GPU class / CPU class"):  # fmt: skip
        assert gone not in md, gone
    details = md.split("## Details")[1].split("\n## ")[0]
    assert "GPU" not in details and "CPU data-wait" in details
    shows = " ".join(md.split("## What this shows")[1].split("\n## ")[0].split())
    assert "`--devices cpu,gpu`" in shows and "machine with a GPU" in shows
    assert CPU_ONLY in built.terminal_text and "GPU" not in built.terminal_text.splitlines()[0]
    answer = md.split("## The answer")[1].split("\n## ")[0]  # the verdicts alone, in CPU terms
    assert "no GPU speedup to explain" in answer and "| cell | verdict | data-wait | evidence |" in answer
    how = md.split("## How to read this")[1].split("\n## ")[0]
    assert "**data-wait share**" in how and "warm-up" in how and "**speedup**" not in how


def test_a_report_with_a_gpu_side_keeps_them(cpu_only, tmp_path):
    write_run(cpu_only, "simple_cnn", "gpu", [50.0, 5.0, 5.5])
    build_report([cpu_only], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Compute efficiency" in md and "launch-bound" in md and CPU_ONLY not in md
    assert "speedup" in md.split("## Results")[1].split("\n")[2]


def test_the_accuracy_figure_marks_chance_and_starts_at_zero(tmp_path, captured):  # noqa: F811
    near_chance = epochs().assign(test_acc=lambda e: 0.1 + 0.01 * (e["epoch"] % 2), dataset="synthetic")
    epoch_figures.accuracy_per_epoch(
        accuracy_curves(near_chance), tmp_path / "a.png", chance_pct(near_chance)
    )
    panels = [ax for ax in captured[0].axes if ax.get_title()]
    chance = [ln for ln in panels[0].get_lines() if ln.get_label() == "chance (10%)"]
    assert len(chance) == 1 and list(chance[0].get_ydata()) == [10, 10]
    low, high = panels[0].get_ylim()
    assert low == 0 and high >= 20  # 10-11% is a flat line near chance, not a trend over the whole axis
    # learning curves far above chance keep their range; folder data (class count unknown) draw no chance
    learnt = epochs().assign(dataset="folder:/data/x")
    epoch_figures.accuracy_per_epoch(accuracy_curves(learnt), tmp_path / "b.png", chance_pct(learnt))
    panels = [ax for ax in captured[1].axes if ax.get_title()]
    assert {ln.get_label() for ln in panels[0].get_lines()} == {"CPU", "GPU"}
    assert panels[0].get_ylim()[1] >= 100 * epochs()["test_acc"].max()
