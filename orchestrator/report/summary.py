"""summary.json: the report's answers for scripts, also what `benchctl report --json` prints.

    from orchestrator.report.summary import summary, summary_json
    summary(model)["scaling"][0]["exponent"]     # model: report.model.build_model(...)

Top-level keys, each a list of rows (missing numbers are null, never NaN):
    speedups          analysis.answer.kind_speedups: model, params, cpu_class, gpu_class, kind (paper |
                      device | best), speedup, speedup_low, speedup_high, cpu_cell, gpu_cell, and each
                      side's epoch_s, acc, workers, cpus, accuracy check, note
    bottlenecks       analysis.bottleneck: cell, verdict, reason, the evidence (data_share, gpu_util_pct,
                      mfu, achieved_tflops, peak_tflops, epoch_s, images_per_s), what_if (null if none),
                      what_if_change, what_if_cell, what_if_factor
    scaling           analysis.scaling: the configuration, exponent, exponent_low, exponent_high,
                      intercept, n_models, models, verdict
    paper_scaling     one object: the same fit over the paper's three points (exponent_low/high null)
    time_to_accuracy  analysis.time_to_accuracy: model, kind, the configuration, cpu_cell, gpu_cell,
                      target_acc, target_source, cpu_s, gpu_s, speedup, cpu_epochs, gpu_epochs, runs
                      reached, converged_alike
    missing_cells     analysis.study.missing_cells: the explained study's cells not measured
    target_acc        the --target-acc given, or null (each pair's default)
    cells             the speedup table: what `--json` printed before summary.json (json.table_json: one
                      row per configuration and pair of variant cells, with each side's workers and
                      CPUs where a configuration was fed several ways)
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from orchestrator.report.json import table_json
from orchestrator.report.model import ReportModel

NOT_IN_JSON = ("band",)  # figure-only columns (the scaling band's arrays)


def _records(frame: pd.DataFrame) -> list[dict]:
    frame = frame.drop(columns=[c for c in NOT_IN_JSON if c in frame])
    return json.loads(frame.to_json(orient="records")) if len(frame) else []


def _clean(x):
    """NaN -> None, recursively (json.dumps would write NaN, which is not JSON)."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def summary(model: ReportModel) -> dict:
    x = model.explained
    return {
        "speedups": _records(x.speedups),
        "bottlenecks": _records(x.bottlenecks),
        "scaling": _records(x.scaling),
        "paper_scaling": _clean(x.paper_scaling),
        "time_to_accuracy": _records(x.time_to_accuracy),
        "missing_cells": _records(x.missing),
        "target_acc": x.target_acc,
        "cells": json.loads(table_json(model.table)),
    }


def summary_json(model: ReportModel) -> str:
    return json.dumps(summary(model), indent=2, allow_nan=False)


def write_summary(model: ReportModel, folder: Path) -> Path:
    path = folder / "summary.json"
    path.write_text(summary_json(model) + "\n", encoding="utf-8")
    return path
