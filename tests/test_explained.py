"""Issue 32: the explained answer (three speedups, verdicts, scaling, time to accuracy, summary.json) on
hand-made results whose answers are known.

PYTHONPATH=$PWD .venv/bin/python -m pytest -q tests/test_explained.py
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from orchestrator.analysis import bounds, study
from orchestrator.analysis.answer import kind_speedups
from orchestrator.analysis.explained import explain
from orchestrator.analysis.scaling import GROWS, fit
from orchestrator.analysis.speedups import bootstrap_speedup_ci, speedup_table
from orchestrator.analysis.stats import PAPER_POINTS
from orchestrator.analysis.variants import variants
from orchestrator.cli import app
from orchestrator.plan import study as plan_study
from orchestrator.report import build_report, figures
from orchestrator.results.files import file_key, write_rows

PARAMS = {"simple_cnn": 500_000, "resnet18": 11_689_512, "resnet50": 25_557_032}
TRUE_EXPONENT = 0.5  # the ladder's speedups: 2x * (params / 500k) ** 0.5
GPU_S = 2.0
JITTER = (0.996, 1.0, 1.004, 0.998, 1.002)  # steady epochs a side: +-0.4% around the median
WARMUP = 3.0  # the warm-up epoch takes this many steady epochs' time
# test accuracy after each of the 6 epochs: with target 0.5, the CPU reaches it at epoch 4, the GPU at 3
CPU_ACC = [0.20, 0.30, 0.45, 0.55, 0.60, 0.62]
GPU_ACC = [0.25, 0.40, 0.52, 0.58, 0.61, 0.63]


def ladder_speedup(model: str) -> float:
    return 2.0 * (PARAMS[model] / PARAMS["simple_cnn"]) ** TRUE_EXPONENT


def epoch_rows(model, device, steady_s, accs, repeat=0, data_share=0.05, util=None, sweep="s1", **over):
    """One finished run: a warm-up epoch, then the steady epochs `steady_s`; `over` overrides identity
    columns (pipeline, precision, compile, data_workers, cpus_allotted, ...)."""
    ident = dict(
        model=model, device=device, batch_size=128, pipeline="loader", precision="fp32", compile="off"
    )
    ident |= dict(data_workers=2, cpus_allotted=15 if device == "cpu" else 3) | over
    step = "compiled" if ident["compile"] == "on" else "eager"
    trial = (
        f"{model}/{device}/{ident['pipeline']}/{ident['precision']}/{step}/w{ident['data_workers']}/r{repeat}"
    )
    times = [WARMUP * steady_s[0]] + list(steady_s)
    base = dict(
        sweep=sweep, cell=trial.rsplit("/", 1)[0], trial=trial, attempt=1, params=PARAMS[model],
        device_name="NVIDIA H200" if device == "gpu" else "Xeon 8480+",
        hw_class="gpu:H200" if device == "gpu" else "cpu:Xeon-16c", host="node1", dataset="cifar10",
        repeat=repeat, seed=repeat, torch_threads=13, **ident,
    )  # fmt: skip
    return [
        dict(
            base, epoch=i, warmup=i == 1, epoch_s=s, measured_s=s, data_s=data_share * s, compute_s=0.9 * s,
            eval_s=1.0, steps=391, full_steps=391, extrapolated=False, images=50_000,
            images_per_s=50_000 / s, test_acc=acc, eval_partial=False, gpu_util_pct=util,
        )
        for i, (s, acc) in enumerate(zip(times, accs, strict=True), start=1)
    ]  # fmt: skip


def ladder_rows(repeats: int = 2) -> list[dict]:
    rows = []
    for model, r in itertools.product(PARAMS, range(repeats)):
        jitter = JITTER[r:] + JITTER[:r]  # each repeat in another order
        cpu = [ladder_speedup(model) * GPU_S * j for j in jitter]
        rows += epoch_rows(model, "cpu", cpu, CPU_ACC, repeat=r)
        rows += epoch_rows(model, "gpu", [GPU_S * j for j in jitter], GPU_ACC, repeat=r, util=80.0)
    return rows


def write(results, rows: list[dict]) -> None:
    for (trial, attempt), group in pd.DataFrame(rows).groupby(["trial", "attempt"], sort=False):
        records = group.to_dict("records")
        key = file_key(trial, attempt)
        write_rows(results, "epochs", key, records)
        trial_row = {k: records[0][k] for k in records[0] if k not in ("epoch", "warmup", "epoch_s")}
        write_rows(results, "trials", key, [dict(trial_row, status="ok")])


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    """The ladder written as results, reported once with --target-acc 0.5: (report, out dir, summary)."""
    root = tmp_path_factory.mktemp("ladder")
    results = root / "results" / "s1"
    write(results, ladder_rows())
    out = root / "report"
    rep = build_report([results], out, formats=["md"], target_acc=0.5)
    return rep, out, json.loads((out / "summary.json").read_text())


def test_summary_json_exponent_and_its_interval(ladder):
    rep, out, summary = ladder
    assert list(summary) == [
        "speedups", "bottlenecks", "scaling", "paper_scaling", "time_to_accuracy", "missing_cells",
        "target_acc", "cells",
    ]  # fmt: skip
    [row] = [r for r in summary["scaling"] if r["pipeline"] == "loader"]
    assert (row["batch_size"], row["precision"], row["compile"], row["n_models"]) == (128, "fp32", "off", 3)
    assert row["exponent"] == pytest.approx(TRUE_EXPONENT, abs=1e-3)
    assert row["exponent_low"] < TRUE_EXPONENT < row["exponent_high"]
    assert row["exponent_high"] - row["exponent_low"] < 0.02  # +-0.4% epoch noise: a narrow interval
    assert row["verdict"] == GROWS
    # the paper's three points, fitted the same way, under their own key, without an interval
    paper = summary["paper_scaling"]
    b = np.polyfit(np.log([p[2] for p in PAPER_POINTS]), np.log([p[3] for p in PAPER_POINTS]), 1)[0]
    assert paper["exponent"] == pytest.approx(b) and paper["exponent_low"] is None and paper["n_models"] == 3
    md = (out / "report.md").read_text()
    answer = md.split("## The answer")[1].split("\n## ")[0]
    assert f"b = {row['exponent']:.2f} [{row['exponent_low']:.2f}–{row['exponent_high']:.2f}]" in answer
    assert "the data show the speedup growing with model size" in answer
    assert f"b = {paper['exponent']:.2f} (one number per model, so no interval)" in answer


def test_three_speedups_name_their_cells_with_the_tables_interval(ladder):
    rep, _out, summary = ladder
    paper = [r for r in summary["speedups"] if r["kind"] == "paper"]
    assert [r["model"] for r in paper] == list(PARAMS)
    cells = {r["model"]: r for r in summary["cells"]}  # the speedup table, as --json printed it before
    for r in paper:
        assert r["speedup"] == pytest.approx(ladder_speedup(r["model"]), rel=1e-9)
        assert (r["speedup"], r["speedup_low"], r["speedup_high"]) == tuple(
            cells[r["model"]][k] for k in ("speedup", "speedup_low", "speedup_high")
        )
        assert r["cpu_cell"] == f"{r['model']}/cpu:Xeon-16c/bs128/loader/fp32/eager (2 workers, 15 CPUs)"
        assert r["gpu_cell"] == f"{r['model']}/gpu:H200/bs128/loader/fp32/eager (2 workers, 3 CPUs)"
    device = [r for r in summary["speedups"] if r["kind"] == "device"]
    assert all(r["speedup"] is None and "no CPU device cell" in r["note"] for r in device)
    best = [r for r in summary["speedups"] if r["kind"] == "best"]
    assert all(r["cpu_accuracy_check"] == "is the paper cell" for r in best)  # nothing faster was measured
    missing = {(m["model"], m["kind"], m["device"]) for m in summary["missing_cells"]}
    assert ("resnet50", "device", "gpu") in missing and ("resnet50", "paper", "gpu") not in missing


def test_time_to_accuracy_ratio_and_epochs_to_target(ladder):
    _rep, _out, summary = ladder
    assert summary["target_acc"] == 0.5
    rows = {r["model"]: r for r in summary["time_to_accuracy"] if r["kind"] == "paper"}
    assert set(rows) == set(PARAMS)
    for model, r in rows.items():
        assert (r["target_acc"], r["target_source"]) == (0.5, "--target-acc")
        assert (r["cpu_epochs"], r["gpu_epochs"]) == (4, 3)  # CPU_ACC and GPU_ACC reach 0.5 there
        # the warm-up epoch counted: WARMUP x the first steady epoch, then the steady ones, per repeat
        runs = [JITTER[r:] + JITTER[:r] for r in range(2)]
        cpu = np.median([ladder_speedup(model) * GPU_S * (WARMUP * j[0] + sum(j[:3])) for j in runs])
        gpu = np.median([GPU_S * (WARMUP * j[0] + sum(j[:2])) for j in runs])
        assert r["cpu_s"] == pytest.approx(cpu) and r["gpu_s"] == pytest.approx(gpu)
        assert r["speedup"] == pytest.approx(cpu / gpu)
        assert r["converged_alike"] is False  # 4 vs 3 epochs, with no spread between repeats


def test_default_target_and_converging_alike():
    rows = ladder_rows()
    for row in rows:  # the GPU's curve as the CPU's: both reach every target at the same epoch
        row["test_acc"] = CPU_ACC[row["epoch"] - 1] if row["device"] == "gpu" else row["test_acc"]
    tta = explain(pd.DataFrame(rows)).time_to_accuracy
    r = tta[(tta["model"] == "resnet18") & (tta["kind"] == "paper")].iloc[0]
    assert r["target_source"] == "default" and r["target_acc"] == pytest.approx(0.62 - 0.01)
    assert (r["cpu_epochs"], r["gpu_epochs"], r["converged_alike"]) == (6, 6, True)


def test_json_prints_the_same_object_as_summary_json(tmp_path):
    results = tmp_path / "results" / "s1"
    write(results, ladder_rows())
    out = tmp_path / "r"
    result = CliRunner().invoke(
        app, ["report", str(results), "--out", str(out), "--json", "--target-acc", "0.5"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads((out / "summary.json").read_text())


# ---- verdicts and what-ifs on hand-made cells -------------------------------------------------------


def bottleneck_rows() -> list[dict]:
    """simple_cnn GPU: the paper cell waits for data 60% (input-bound) and the same cell with 8 workers
    and 9 CPUs runs 3.3x faster; resnet50 GPU resident: 3% data wait, GPU 30% busy (launch-bound), and
    its compiled twin runs 2x faster."""
    rows = []
    for r in range(2):
        rows += epoch_rows("simple_cnn", "gpu", [6.6, 6.6], [0.3, 0.5, 0.6], r, data_share=0.6, util=10.0)
        rows += epoch_rows(
            "simple_cnn", "gpu", [2.0, 2.0], [0.3, 0.5, 0.6], r, data_share=0.1, util=70.0,
            data_workers=8, cpus_allotted=9,
        )  # fmt: skip
        rows += epoch_rows("simple_cnn", "cpu", [30.0, 30.0], [0.3, 0.5, 0.6], r)
        for step, s in (("off", 4.0), ("on", 2.0)):
            rows += epoch_rows(
                "resnet50", "gpu", [s, s], [0.3, 0.5, 0.6], r, data_share=0.03, util=30.0,
                pipeline="resident", compile=step, data_workers=0, cpus_allotted=1,
            )  # fmt: skip
    return rows


def test_verdicts_evidence_and_what_if_links():
    table = explain(pd.DataFrame(bottleneck_rows())).bottlenecks.set_index("cell")
    paper = "simple_cnn/gpu:H200/bs128/loader/fp32/eager (2 workers, 3 CPUs)"
    fed = "simple_cnn/gpu:H200/bs128/loader/fp32/eager (8 workers, 9 CPUs)"
    eager = "resnet50/gpu:H200/bs128/resident/fp32/eager (1 CPU)"
    compiled = "resnet50/gpu:H200/bs128/resident/fp32/compiled (1 CPU)"
    assert table.loc[paper, "verdict"] == bounds.INPUT and table.loc[paper, "data_share"] == pytest.approx(
        0.6
    )
    assert table.loc[paper, "gpu_util_pct"] == 10.0 and table.loc[paper, "mfu"] > 0
    assert table.loc[paper, "what_if_cell"] == fed and table.loc[paper, "what_if_change"] == "workers"
    assert table.loc[paper, "what_if_factor"] == pytest.approx(3.3)
    assert table.loc[paper, "what_if"] == (
        f"with 8 loader workers (9 CPUs) this cell runs 3.3x faster: 2 s/epoch instead of 6.6 (cell {fed})"
    )
    assert table.loc[eager, "verdict"] == bounds.LAUNCH
    assert table.loc[eager, "what_if_cell"] == compiled and table.loc[
        eager, "what_if_factor"
    ] == pytest.approx(2)
    assert table.loc[eager, "what_if"].startswith("compiled it runs 2.0x faster")
    assert pd.isna(table.loc[compiled, "what_if"])  # nothing measured that differs from it in one way
    assert table.loc["simple_cnn/cpu:Xeon-16c/bs128/loader/fp32/eager (2 workers, 15 CPUs)", "verdict"] == (
        bounds.COMPUTE
    )
    # the paper speedup takes the paper cell (2 workers), not the faster 8-worker one
    paper_row = kind_speedups(variants(pd.DataFrame(bottleneck_rows()))).iloc[0]
    assert paper_row["gpu_cell"] == paper and paper_row["speedup"] == pytest.approx(30.0 / 6.6)


def test_a_cell_without_a_what_if_shows_a_dash_in_the_verdicts(tmp_path):
    write(tmp_path / "res", bottleneck_rows())
    built = build_report([tmp_path / "res"], tmp_path / "r", formats=["md"])
    compiled = "resnet50/gpu:H200/bs128/resident/fp32/compiled (1 CPU)"
    md = (tmp_path / "r" / "report.md").read_text()
    [line] = [x for x in md.splitlines() if x.startswith(f"| {compiled} | launch-bound")]
    assert line.endswith("| — |") and "nan" not in line
    [row] = [b for b in json.loads(built.summary_json)["bottlenecks"] if b["cell"] == compiled]
    assert row["what_if"] is None


def test_rows_without_the_cell_columns_are_explained_not_refused(tmp_path):
    """A result with no batch_size, pipeline or precision (hand-made, or older than the columns) reads
    back with NaN cell keys, which the report's tables keep (group-bys with dropna=False); so does the
    answer, rather than failing the report."""
    for d in ("cpu", "gpu"):
        row = dict(sweep="s", model="simple_cnn", device=d, trial=f"t{d}", epoch=2, epoch_s=1.0)
        write_rows(tmp_path / "res", "epochs", f"k{d}-a1", [row])
    built = build_report([tmp_path / "res"], tmp_path / "r")
    summary = json.loads(built.summary_json)
    assert len(summary["bottlenecks"]) == 2
    assert all(s["speedup"] is None for s in summary["speedups"])  # no cell is the study's


def test_verdict_thresholds_are_the_ones_the_flags_use():
    share, util = bounds.INPUT_BOUND_SHARE, bounds.LAUNCH_BOUND_UTIL_PCT
    assert bounds.verdict("gpu", share + 0.01, 90.0)[0] == bounds.INPUT
    assert bounds.verdict("gpu", share, util - 1)[0] == bounds.LAUNCH  # exactly at the share: not input-bound
    assert bounds.verdict("gpu", 0.05, util)[0] == bounds.COMPUTE
    assert bounds.verdict("gpu", 0.05, None)[0] == bounds.NOT_INPUT
    assert bounds.verdict("cpu", 0.05, None)[0] == bounds.COMPUTE
    assert bounds.verdict("cpu", math.nan)[0] == bounds.UNKNOWN
    assert bounds.launch_bound(util - 1, share) and not bounds.launch_bound(util - 1, share + 0.01)


def test_best_is_the_fastest_cell_within_the_accuracy_bound_with_a_tost():
    rows = []
    for r in range(3):  # 3 repeats: enough for the TOST
        rows += epoch_rows("resnet18", "gpu", [8.0, 8.0], [0.5, 0.7, 0.80 + 0.001 * r], r)
        rows += epoch_rows("resnet18", "cpu", [40.0, 40.0], [0.5, 0.7, 0.80], r)
        kw = dict(pipeline="resident", data_workers=0, cpus_allotted=1)
        rows += epoch_rows("resnet18", "gpu", [2.0, 2.0], [0.5, 0.7, 0.795 + 0.001 * r], r, **kw)  # -0.4 pts
        fast = dict(kw, precision="amp", compile="on")
        rows += epoch_rows("resnet18", "gpu", [1.0, 1.0], [0.5, 0.7, 0.77], r, **fast)  # 3 points lower
    best = kind_speedups(variants(pd.DataFrame(rows))).set_index("kind").loc["best"]
    assert best["gpu_cell"] == "resnet18/gpu:H200/bs128/resident/fp32/eager (1 CPU)"
    assert best["speedup"] == pytest.approx(40.0 / 2.0)
    assert "TOST (±1.5 points): equivalent" in best["gpu_accuracy_check"]
    assert best["cpu_accuracy_check"] == "is the paper cell"


def test_a_shorter_best_cell_is_held_to_the_paper_cells_accuracy_at_its_last_epoch():
    """A CPU candidate run for 4 of the paper cell's 6 epochs ends at 0.545: 7.5 points below the paper
    cell's final 0.62, but 0.5 below the paper cell's 0.55 at epoch 4, so it counts; a faster one ending
    3 points below that (0.52) does not."""
    gpu = epoch_rows("resnet18", "gpu", [2.0] * 5, GPU_ACC)
    paper = epoch_rows("resnet18", "cpu", [40.0] * 5, CPU_ACC)
    kw = dict(pipeline="resident", data_workers=0, cpus_allotted=16)
    near = epoch_rows("resnet18", "cpu", [20.0] * 3, CPU_ACC[:3] + [0.545], precision="amp", **kw)
    far = epoch_rows("resnet18", "cpu", [10.0] * 3, CPU_ACC[:3] + [0.52], compile="on", **kw)
    best = kind_speedups(variants(pd.DataFrame(gpu + paper + near + far))).set_index("kind").loc["best"]
    assert best["cpu_cell"] == "resnet18/cpu:Xeon-16c/bs128/resident/amp/eager (16 CPUs)"
    assert best["speedup"] == pytest.approx(20.0 / 2.0)
    check = best["cpu_accuracy_check"]
    assert check.startswith("-0.5 points vs paper cell at epoch 4 (the best cell's last)")
    assert "too few runs for the TOST" in check


# ---- the study's cells, declared once --------------------------------------------------------------


def test_grids_hold_exactly_the_studys_cells():
    planned = set()
    for _kinds, s in plan_study.grids():
        for device, pipeline, precision, step in itertools.product(
            s["devices"], s["pipelines"], s["precisions"], s["compiles"]
        ):
            planned.add((device, pipeline, precision, step, s.get("workers"), s.get("gpu_cpus")))
    expected = {(c.device, c.pipeline, c.precision, c.compile, c.workers, c.gpu_cpus) for c in study.STUDY}
    assert planned == expected


def test_a_cpu_cell_with_fewer_cores_than_the_papers_workers_plus_one_is_still_its_paper_cell():
    # 2 cores: the paper's 2 workers run as 1 (TrialConfig.data_workers), one core left for torch
    two_cores = dict(data_workers=1, cpus_allotted=2)
    rows = epoch_rows("simple_cnn", "cpu", [30.0, 30.0], [0.5, 0.6, 0.7], **two_cores)
    rows += epoch_rows("simple_cnn", "cpu", [20.0, 20.0], [0.5, 0.6, 0.7], pipeline="resident", **two_cores)
    cells = variants(pd.DataFrame(rows)).cells
    measured = study.measured_cells(cells)
    assert [(r.kind, r.cell) for r in measured.itertuples()] == [
        ("paper", "simple_cnn/cpu:Xeon-16c/bs128/loader/fp32/eager (1 workers, 2 CPUs)"),
        ("device", "simple_cnn/cpu:Xeon-16c/bs128/resident/fp32/eager (2 CPUs)"),
    ]
    missing = study.missing_cells(cells)
    mine = missing[(missing["model"] == "simple_cnn").to_numpy()]
    assert set(zip(mine["kind"], mine["device"], strict=True)) == {
        ("paper", "gpu"),
        ("device", "gpu"),
        ("best", "gpu"),
        ("best", "cpu"),
        ("what-if", "gpu"),
    }
    # 3 cores or more: the paper cell has its 2 workers, and a 1-worker cell is not it
    one_worker = epoch_rows(
        "simple_cnn", "cpu", [30.0, 30.0], [0.5, 0.6, 0.7], data_workers=1, cpus_allotted=4
    )
    assert study.measured_cells(variants(pd.DataFrame(one_worker)).cells).empty


# ---- figures: compile separates lines and slots (every axis of AXES) ------------------------------


@pytest.fixture
def captured(monkeypatch):
    figs = []
    original = figures.save

    def keep(fig, path, **kwargs):
        figs.append(fig)
        return original(fig, path, **kwargs)

    monkeypatch.setattr(figures, "save", keep)
    return figs


def test_compile_separates_lines_and_slots(tmp_path, captured):
    config = dict(batch_size=128, pipeline="resident", precision="fp32", cpu_class="c", gpu_class="g")
    table = pd.DataFrame(
        [
            dict(config, model=m, params=PARAMS[m], compile=step, speedup=s * (2 if step == "on" else 1))
            for m, s in (("simple_cnn", 2.0), ("resnet18", 6.0))
            for step in ("off", "on")
        ]
    )
    figures.speedup_vs_params(table, tmp_path / "s.png")
    ours = [line for line in captured[0].axes[0].get_lines() if line.get_label().startswith("ours")]
    assert [line.get_label() for line in ours] == [
        "ours: batch 128, resident, fp32",
        "ours: batch 128, resident, fp32, compiled",
    ]
    assert [list(line.get_ydata()) for line in ours] == [[2.0, 6.0], [4.0, 12.0]]
    cells = pd.DataFrame(
        [
            dict(model="simple_cnn", params=1, device="gpu", batch_size=128, pipeline="resident",
                 precision="fp32", compile=step, epoch_s=s, warmup_only=False, device_names="H200")
            for step, s in (("off", 2.0), ("on", 1.0))
        ]
    )  # fmt: skip
    layout = figures.cell_layout(cells)
    assert len(layout.placed) == 2 and layout.labels == [
        "GPU\nbs128\nresident\nfp32",
        "GPU\nbs128\nresident\nfp32\ncompiled",
    ]
    assert figures.CONFIG_AXES == ["batch_size", "pipeline", "precision", "compile"]


def test_the_fitted_line_and_band_are_drawn(ladder, captured, tmp_path):
    rep, _out, _summary = ladder
    figures.speedup_vs_params(rep.model.table, tmp_path / "s.png", rep.model.explained.scaling)
    ax = captured[0].axes[0]
    fitted = [line for line in ax.get_lines() if line.get_label().startswith("fit at")]
    assert len(fitted) == 1 and "params^0.50" in fitted[0].get_label()
    assert ax.collections  # the shaded band (and the error bars)


def test_bootstrap_ci_is_unchanged_by_the_ratios_refactor():
    # bootstrap_speedup_ci takes its percentiles of bootstrap_speedup_ratios: same numbers as before
    low, high = bootstrap_speedup_ci([30.0, 34.0, 32.0, 40.0], [4.0, 6.0, 5.0, 7.0])
    assert low < 6.0 < high
    b, _a = fit([1e6, 1e7], [2.0, 20.0])
    assert b == pytest.approx(1.0)


def test_results_rows_pair_variant_cells_not_pooled_ones():
    """One CPU cell and a GPU cell run with 2 and with 8 loader workers: the speedup table has a row per
    variant pair (the answer's cells and numbers), names the variant, and flags nothing "mixed"."""
    from orchestrator.report.json import for_scripts
    from orchestrator.report.model import ReportModel
    from orchestrator.report.tables import HEADLINE, columns, rows

    hand = []
    for r in range(2):
        hand += epoch_rows("simple_cnn", "cpu", [30.0, 31.0], [0.3, 0.5, 0.6], r)
        hand += epoch_rows("simple_cnn", "gpu", [6.6, 6.7], [0.3, 0.5, 0.6], r)
        hand += epoch_rows(
            "simple_cnn", "gpu", [2.0, 2.1], [0.3, 0.5, 0.6], r, data_workers=8, cpus_allotted=9
        )
    epochs = pd.DataFrame(hand)
    table = speedup_table(epochs)
    assert len(table) == 2
    assert list(table["gpu_workers"]) == [2, 8] and list(table["gpu_cpus"]) == [3, 9]
    assert list(table["cpu_workers"]) == [2, 2] and list(table["cpu_cpus"]) == [15, 15]
    cpu = [30.0, 31.0, 30.0, 31.0]
    for row, gpu in zip(table.itertuples(), ([6.6, 6.7] * 2, [2.0, 2.1] * 2), strict=True):
        assert row.speedup == pytest.approx(np.median(cpu) / np.median(gpu))
        assert (row.speedup_low, row.speedup_high) == bootstrap_speedup_ci(cpu, gpu)
        assert row.gpu_n == 4 and "mixed" not in row.flags
    # the same numbers as the answer's pair table gives the same two cells
    pairs = explain(epochs).pairs
    assert list(pairs["speedup"]) == list(table["speedup"])
    model = ReportModel.of_table(table)
    assert model.several_variants
    shown = columns(model, HEADLINE)
    rendered = rows(model, shown)
    fed = shown.index("GPU fed by")
    assert [r[fed] for r in rendered] == ["2 workers, 3 CPUs", "8 workers, 9 CPUs"]
    assert {"cpu_workers", "gpu_cpus"} <= set(for_scripts(table).columns)
    # one variant a cell: no variant columns shown or written, as before variants were told apart
    single = speedup_table(epochs[(epochs["data_workers"] == 2).to_numpy()])
    assert len(single) == 1 and not ReportModel.of_table(single).several_variants
    assert "GPU fed by" not in columns(ReportModel.of_table(single), HEADLINE)
    assert "cpu_workers" not in for_scripts(single).columns
