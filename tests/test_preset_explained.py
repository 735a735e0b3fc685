"""Trial ids that name a DataLoader's non-default workers, so that one sweep can hold the explained study's
2- and 8-worker GPU cells; sweeps stored before that still read as complete.
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.results.reader import read_kind
from orchestrator.results.sweepstate import ids_before_workers, planned_trials, progress, unfinished_trials
from trainables.config import TrialConfig

ROOT = Path(__file__).resolve().parents[1]


def test_a_loader_cell_names_its_workers_only_where_they_are_not_the_default():
    assert TrialConfig(model="m", device="gpu").trial_id == "m/gpu/bs128/loader/fp32/r0"
    assert TrialConfig(model="m", device="gpu", workers=8).trial_id == "m/gpu/bs128/loader/fp32/w8/r0"
    assert TrialConfig(model="m", device="gpu", workers=8, pipeline="resident").trial_id == (
        "m/gpu/bs128/resident/fp32/r0"
    )


def test_a_sweep_stored_before_ids_named_workers_still_reads_as_complete():
    # the reference's what-if sweep ran `--workers 8 --gpu-cpus 9` when ids left workers out
    what_if = ROOT / "reports/h100-explained/results/h100-gpu-what-if"
    spec = json.loads((what_if / "spec.json").read_text())["spec"]
    assert planned_trials(spec) == ["simple_cnn/gpu/bs128/loader/fp32/w8/r0"]
    assert ids_before_workers(spec) == {"simple_cnn/gpu/bs128/loader/fp32/r0": planned_trials(spec)[0]}
    assert unfinished_trials(what_if, read_kind(what_if, "trials")) == []  # the report's view
    assert progress(what_if).done == frozenset(planned_trials(spec))  # a --resume's: nothing to run again
