"""orchestrator.report.narrative: each sentence of "What this shows" fires exactly when its condition holds.

.venv/bin/python -m pytest -q tests/test_narrative.py
"""

from __future__ import annotations

import math

import pandas as pd

from orchestrator.analysis.stats import INPUT_BOUND_SHARE
from orchestrator.report import narrative
from orchestrator.report.model import ReportModel
from orchestrator.report.narrative import what_this_shows

of_table = ReportModel.of_table  # the sentences read a model; these tests start from a speedup table

PARAMS = {"simple_cnn": 500_000, "resnet18": 11_689_512, "resnet50": 25_557_032}
NAN = math.nan


def row(model: str, speedup: float, gpu_data_share: float = 0.1, flags: str = "", **over) -> dict:
    return {
        "model": model,
        "batch_size": 128,
        "pipeline": "loader",
        "precision": "fp32",
        "params": PARAMS[model],
        "speedup": speedup,
        "gpu_data_share": gpu_data_share,
        "flags": flags,
        **over,
    }


def table(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def test_range_names_the_spread_and_the_largest():
    t = table(row("simple_cnn", 2.0), row("resnet18", 6.5), row("resnet50", 14.7))
    text = narrative.range_sentence(of_table(t))
    assert text == (
        "Across the 3 cells measured on both devices, the GPU speedup ranges from 2.00x for simple_cnn "
        "to 14.70x for resnet50; resnet50 has the largest."
    )


def test_range_one_pair_and_none():
    one = narrative.range_sentence(of_table(table(row("resnet18", 6.5), row("resnet50", NAN))))
    assert one == "The one cell measured on both devices, resnet18, has a speedup of 6.50x."
    none = narrative.range_sentence(of_table(table(row("resnet50", NAN))))
    assert none.startswith("No cell was measured on both CPU and GPU")


def test_names_carry_the_config_only_when_several():
    t = table(row("resnet18", 6.5), row("resnet18", 9.3, pipeline="resident"))
    assert "9.30x for resnet18/bs128/resident/fp32" in narrative.range_sentence(of_table(t))


def test_slower_fires_only_below_one():
    assert narrative.slower_sentence(of_table(table(row("simple_cnn", 1.0), row("resnet18", 6.5)))) == ""
    text = narrative.slower_sentence(of_table(table(row("simple_cnn", 0.8), row("resnet18", 6.5))))
    assert text == "The GPU was slower than the CPU for simple_cnn (0.80x)."


def test_input_bound_fires_above_the_threshold_only():
    at = table(row("simple_cnn", 2.0, gpu_data_share=INPUT_BOUND_SHARE), row("resnet18", 6.0, NAN))
    assert narrative.input_bound_sentence(of_table(at)) == ""  # exactly at the threshold is not above it
    t = table(row("simple_cnn", 2.0, gpu_data_share=0.45), row("resnet18", 6.0, gpu_data_share=0.2))
    text = narrative.input_bound_sentence(of_table(t))
    assert "more than 30% of the epoch in simple_cnn (45%)" in text and "resnet18" not in text
    assert "this cell is input-bound" in text and "limited by the input pipeline, not the device" in text
    two = narrative.input_bound_sentence(of_table(
        table(row("simple_cnn", 2.0, gpu_data_share=0.45), row("resnet18", 6.0, gpu_data_share=0.31))
    ))
    assert "simple_cnn (45%) and resnet18 (31%)" in two and "these cells are input-bound" in two


def test_trend_grows_monotonically_like_the_paper():
    t = table(row("resnet50", 14.7), row("simple_cnn", 2.0), row("resnet18", 6.5))  # any order
    assert narrative.trend_sentences(of_table(t)) == [
        "Speedup grows with parameter count (simple_cnn 2.00x → resnet18 6.50x → resnet50 14.70x), "
        "as in the paper (~2x → >7x → 40.6x)."
    ]


def test_trend_not_monotone_unlike_the_paper():
    t = table(row("simple_cnn", 5.0), row("resnet18", 9.3), row("resnet50", 8.0))
    [text] = narrative.trend_sentences(of_table(t))
    assert text.startswith("Speedup does not grow steadily with parameter count (simple_cnn 5.00x → ")
    assert "unlike the paper" in text


def test_trend_per_config_and_skipped_without_two_sizes():
    assert narrative.trend_sentences(of_table(table(row("resnet18", 6.5), row("resnet50", NAN)))) == []
    t = table(
        row("simple_cnn", 2.0),
        row("resnet18", 6.5),
        row("simple_cnn", 9.0, pipeline="resident"),
        row("resnet18", 8.0, pipeline="resident"),
        row("resnet50", 7.0, batch_size=256),  # alone in its config: not judged
    )
    grows, not_grows = narrative.trend_sentences(of_table(t))
    assert "at batch 128, loader, fp32 (simple_cnn 2.00x → resnet18 6.50x)" in grows
    assert "at batch 128, resident, fp32 (simple_cnn 9.00x → resnet18 8.00x)" in not_grows
    assert "batch 256" not in grows + not_grows


def test_flagged_lists_timing_flags_only():
    clean = table(row("resnet18", 6.5, flags="partial-eval (gpu)"))
    assert narrative.flagged_sentence(of_table(clean)) == ""
    t = table(
        row("simple_cnn", 2.0),
        row("resnet18", 6.5, flags="noisy (gpu)"),
        row("resnet50", 38.0, flags="extrapolated (cpu), partial-eval (gpu), single-sample (gpu)"),
    )
    assert narrative.flagged_sentence(of_table(t)) == (
        "Some epoch times are less certain: noisy (gpu) in resnet18; extrapolated (cpu) and "
        "single-sample (gpu) in resnet50 (see How to read this and Notes)."
    )


def test_flagged_groups_a_flag_every_cell_carries():
    both = "extrapolated (cpu), single-sample (cpu)"
    t = table(row("simple_cnn", 2.0, flags=both), row("resnet18", 6.5, flags=both + ", noisy (gpu)"))
    assert narrative.flagged_sentence(of_table(t)) == (
        "Some epoch times are less certain: extrapolated (cpu) and single-sample (cpu) in all 2 cells; "
        "noisy (gpu) in resnet18 (see How to read this and Notes)."
    )


def test_paragraph_joins_what_applies_in_order():
    t = table(
        row("simple_cnn", 0.9, gpu_data_share=0.5),
        row("resnet18", 6.5, flags="noisy (cpu)"),
        row("resnet50", 14.7),
    )
    text = what_this_shows(of_table(t))
    order = [
        "ranges from 0.90x",
        "slower than the CPU",
        "input-bound",
        "grows with parameter",
        "less certain",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    quiet = what_this_shows(of_table(table(row("resnet18", 6.5))))
    assert quiet == "The one cell measured on both devices, resnet18, has a speedup of 6.50x."
    assert narrative.section(of_table(t)).startswith("## What this shows\n\n")
