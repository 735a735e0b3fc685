"""orchestrator.report end to end on hand-made Parquet results in tmp_path.

.venv/bin/pytest -q tests/test_report.py
"""

from __future__ import annotations

import gc
import json
import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from orchestrator.analysis.speedups import bootstrap_speedup_ci
from orchestrator.cli import app
from orchestrator.report import build as report
from orchestrator.report import build_report, figures, sections
from orchestrator.report.drawing import FigureWorkers
from orchestrator.report.formats import fmt_params, fmt_pct, fmt_seconds, fmt_speedup, fmt_speedup_ci
from orchestrator.report.model import ReportModel, build_model
from orchestrator.results.files import ResultsError, file_key, write_rows
from trainables.flops import train_flops_per_image

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
WARMUP_S = 1e6  # would dominate any statistic it leaked into
PARAMS = {"simple_cnn": 500_000, "resnet18": 11_689_512, "resnet50": 25_557_032}
# the results fixture's resnet18 speedup with its interval, over the pooled steady epochs of each side
R18_CI = bootstrap_speedup_ci([30.0, 34.0, 32.0, 40.0], [4.0, 6.0, 5.0, 7.0])
R18_SPEEDUP = f"6.00x [{R18_CI[0]:.2f}–{R18_CI[1]:.2f}]"


def identity(model: str, device: str, repeat: int = 0, attempt: int = 1, **over) -> dict:
    config = {"batch_size": 128, "pipeline": "loader", "precision": "fp32", **over}
    trial = f"{model}/{device}/bs{config['batch_size']}/{config['pipeline']}/{config['precision']}/r{repeat}"
    row = {
        "sweep": "s1",
        "cell": trial.rsplit("/", 1)[0],
        "trial": trial,
        "attempt": attempt,
        "model": model,
        "params": PARAMS[model],
        "device": device,
        "device_name": "NVIDIA H200" if device == "gpu" else "Xeon 8480+",
        "host": "node1",
        "batch_size": 128,
        "pipeline": "loader",
        "precision": "fp32",
        "dataset": "cifar10",
        "repeat": repeat,
        "seed": repeat,
        "cpus_allotted": 8,
        "torch_threads": 8,
        "data_workers": 2,
    }
    row.update(over)
    return row


def write_run(results, model, device, epoch_s, repeat=0, accs=None, epoch_over=None, notes=None, **over):
    """One completed trial attempt: its epoch rows (epoch_over: column overrides) and its ok trial row
    (notes: its energy_notes)."""
    ident = identity(model, device, repeat, **over)
    accs = accs or [0.1 * (i + 1) for i in range(len(epoch_s))]
    rows = [
        {
            **ident,
            "epoch": i,
            "warmup": i == 1,
            "epoch_s": s,
            "measured_s": s,
            "data_s": s / 4,
            "compute_s": s / 2,
            "eval_s": 1.0,
            "steps": 391,
            "full_steps": 391,
            "extrapolated": False,
            "images": 50_000,
            "images_per_s": 50_000 / s,
            "train_loss": 1.0,
            "test_acc": acc,
            "eval_images": 10_000,
            "eval_partial": False,
        }
        for i, (s, acc) in enumerate(zip(epoch_s, accs, strict=True), start=1)
    ]
    rows = [{**row, **(epoch_over or {})} for row in rows]
    key = file_key(ident["trial"], ident["attempt"])
    write_rows(results, "epochs", key, rows)
    write_rows(results, "trials", key, [{**trial_row(ident, "ok"), "energy_notes": notes}])


def trial_row(ident: dict, status: str, error: str | None = None) -> dict:
    return {
        **ident,
        "status": status,
        "error": error,
        "cpu_model": "Intel Xeon Platinum 8480+",
        "gpu_name": "NVIDIA H200" if ident["device"] == "gpu" else None,
        "torch": "2.5.1",
        "torchvision": "0.20.1",
        "ray": "2.40.0",
        "python": "3.11.9",
        "git_commit": "abc1234",
    }


@pytest.fixture
def results(tmp_path):
    # resnet18: CPU steady epochs 30, 34 | 32, 40 -> median 33; GPU 4, 6 | 5, 7 -> median 5.5; speedup 6.00x
    # resnet50: CPU only (no GPU run): speedup "—"
    d = tmp_path / "results" / "s1"
    write_run(d, "resnet18", "cpu", [WARMUP_S, 30.0, 34.0], repeat=0, accs=[0.1, 0.2, 0.5])
    write_run(d, "resnet18", "cpu", [WARMUP_S, 32.0, 40.0], repeat=1, accs=[0.1, 0.2, 0.7])
    write_run(d, "resnet18", "gpu", [WARMUP_S, 4.0, 6.0], repeat=0)
    write_run(d, "resnet18", "gpu", [WARMUP_S, 5.0, 7.0], repeat=1)
    write_run(d, "resnet50", "cpu", [WARMUP_S, 5432.0])
    failed = identity("resnet50", "gpu")
    write_rows(d, "trials", file_key(failed["trial"], 1), [trial_row(failed, "error", "CUDA out of memory")])
    return d


def table_row(markdown: str, model: str, title: str = "Results") -> list[str]:
    results = markdown.split(f"\n## {title}\n")[1].split("\n## ")[0]
    lines = [line for line in results.splitlines() if line.startswith(f"| {model} |")]
    assert len(lines) == 1, lines
    return [c.strip() for c in lines[0].strip("|").split("|")]


def test_report_md_has_exact_speedup_and_figures(results, tmp_path):
    out = tmp_path / "out"
    rep = build_report([results], out)
    md = (out / "report.md").read_text()
    row = table_row(md, "resnet18")
    # model, params, batch, pipeline, precision, CPU s, GPU s, speedup, CPU acc, GPU acc, ...
    expected = ["resnet18", "11.7M", "128", "loader", "fp32", "33.0", "5.50", R18_SPEEDUP, "60.0%", "30.0%"]
    assert row[:10] == expected
    assert re.fullmatch(r"6\.00x \[\d+\.\d\d–\d+\.\d\d\]", row[7])  # the bracket is shown
    r18 = rep.table.set_index("model").loc["resnet18"]
    assert r18["speedup"] == 33.0 / 5.5
    assert (r18["speedup_low"], r18["speedup_high"]) == R18_CI
    assert r18["speedup_low"] < 6.0 < r18["speedup_high"]
    cpu_only = table_row(md, "resnet50")
    assert cpu_only[5:8] == ["5430", "—", "—"]
    assert "no GPU measurement" in md
    assert "](figures/speedup_vs_params.png)" in md and "](figures/epoch_time.png)" in md
    for name in ("speedup_vs_params.png", "epoch_time.png"):
        data = (out / "figures" / name).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 10_000
    assert rep.paths == [
        out / "report.md",
        out / "report.html",
        out / "summary.json",  # always, beside report.md (report.summary)
        out / "figures/speedup_vs_params.png",
        out / "figures/epoch_time.png",
        out / "figures/epoch_breakdown.png",
        out / "figures/accuracy_per_epoch.png",
    ]  # one batch size: no throughput_vs_batch.png
    assert not (out / "figures/throughput_vs_batch.png").exists()
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # staging cleaned up


def test_report_sections(results, tmp_path):
    md = build_report([results], tmp_path / "out") and (tmp_path / "out" / "report.md").read_text()
    assert md.startswith("# ") and "`s1`" in md.split("\n## ")[0]
    assert "## How to read this" in md and "warm-up" in md and "data-wait share" in md
    how = " ".join(md.split("## How to read this")[1].split("\n## ")[0].split())  # unwrapped
    assert "95% bootstrap interval" in how and "2000 times with a fixed seed" in how
    assert "**noisy**" in how and "more than 10% of their median" in how and "**single-sample**" in how
    paper = md.split("## Compared with the paper")[1].split("\n## ")[0]
    assert "40.6x" in paper and ">7x" in paper
    assert re.search(r"\| resnet18 \| 11\.7M \| >7x \| 11\.7M \| 6\.00x", paper)
    assert re.search(r"\| simple_cnn \|.*not measured", paper)
    env = md.split("## Environment")[1].split("\n## ")[0]
    for value in ("node1", "NVIDIA H200", "Xeon 8480+", "Intel Xeon Platinum 8480+", "2.5.1", "0.20.1"):
        assert value in env
    assert "2.40.0" in env and "abc1234" in env
    failures = md.split("## Failed trial attempts")[1]
    assert "resnet50/gpu/bs128/loader/fp32/r0" in failures and "CUDA out of memory" in failures
    assert str(WARMUP_S) not in md and "1e+06" not in md


def test_flags_reach_table_and_notes(tmp_path):
    d = tmp_path / "s"
    write_run(d, "resnet50", "cpu", [WARMUP_S, 5000.0], epoch_over={"extrapolated": True})
    write_run(d, "resnet50", "gpu", [130.0], epoch_over={"eval_partial": True})  # one epoch: warm-up only
    md = build_report([d], tmp_path / "out").paths[0].read_text()
    row = table_row(md, "resnet50")
    assert row[5:8] == ["5000", "130", "38.46x"]  # 5000 / 130 = 38.4615...
    assert row[7] == "38.46x"  # one sample per side: no interval, so no bracket
    assert row[-2:] == ["20.0%", "10.0%"]  # both sides capped: no "(capped)" marks
    assert table_row(md, "resnet50", "Details")[-1] == (
        "extrapolated (cpu), single-sample (cpu), warm-up only (gpu), partial-eval (gpu), single-sample (gpu)"
    )
    notes = md.split("## Notes")[1].split("\n## ")[0]
    assert "extrapolated (cpu)" in notes and "warm-up only (gpu)" in notes


def test_capped_cpu_accuracy_beside_a_full_gpu_one_is_not_comparable(tmp_path):
    d = tmp_path / "s"
    capped = {"extrapolated": True, "steps": 10}  # --max-steps: fewer steps, so a lower accuracy
    for repeat in range(3):
        write_run(d, "resnet50", "cpu", [WARMUP_S, 5000.0], repeat, [0.1, 0.31], epoch_over=capped)
        write_run(d, "resnet50", "gpu", [WARMUP_S, 130.0], repeat, [0.5, 0.97])
    md = build_report([d], tmp_path / "out").paths[0].read_text()
    assert table_row(md, "resnet50")[-2:] == ["31.0% (capped)", "97.0%"]
    parity = table_row(md, "resnet50", "Accuracy parity")
    assert parity[4:8] == ["31.00% (capped)", "97.00%", "—", "—"]  # no diff, no interval
    assert parity[8] == "not comparable (CPU capped)"  # not "not shown equivalent" with 3+3 runs


def test_pairs_only_within_matching_precision(tmp_path):
    d = tmp_path / "s"
    write_run(d, "resnet18", "cpu", [WARMUP_S, 300.0])
    write_run(d, "resnet18", "gpu", [WARMUP_S, 10.0], precision="amp")
    md = build_report([d], tmp_path / "out").paths[0].read_text()
    rows = [r for r in md.split("\n## Results\n")[1].split("\n## ")[0].splitlines()[3:] if r.startswith("|")]
    cells = sorted([c.strip() for c in line.strip("|").split("|")][4:8] for line in rows)
    assert cells == [["amp", "—", "10.0", "—"], ["fp32", "300", "—", "—"]]
    assert "only GPU measured" in md and "only CPU measured" in md


def test_terminal_text(results, tmp_path):
    text = build_report([results], tmp_path / "out").terminal_text
    lines = text.splitlines()
    assert lines[0].split() == [
        "model",
        "params",
        "batch",
        "pipeline",
        "precision",
        "CPU",
        "s",
        "GPU",
        "s",
        "speedup",
        "CPU",
        "acc",
        "GPU",
        "acc",
    ]  # the headline: energy, data-wait and flags are in the report's Details
    r18 = next(line for line in lines if line.startswith("resnet18"))
    assert r18.split() == [
        "resnet18",
        "11.7M",
        "128",
        "loader",
        "fp32",
        "33.0",
        "5.50",
        *R18_SPEEDUP.split(),  # "6.00x", "[low–high]"
        "60.0%",
        "30.0%",
    ]
    assert len({len(line) for line in lines[:4]}) == 1  # aligned: header, rule and rows are equally wide


def test_several_results_dirs_are_concatenated(results, tmp_path):
    other = tmp_path / "results" / "s2"
    write_run(other, "simple_cnn", "cpu", [WARMUP_S, 8.0], sweep="s2")
    write_run(other, "simple_cnn", "gpu", [WARMUP_S, 4.0], sweep="s2")
    rep = build_report([results, other], tmp_path / "out")
    assert rep.table["model"].tolist() == ["simple_cnn", "resnet18", "resnet50"]
    md = (tmp_path / "out" / "report.md").read_text()
    assert table_row(md, "simple_cnn")[5:8] == ["8.00", "4.00", "2.00x"]
    assert "`s1`" in md and "`s2`" in md


def test_foreign_parquet_names_the_file(results, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = results / "epochs" / "stray.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), bad)
    with pytest.raises(ResultsError, match="stray.parquet"):
        build_report([results], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_truncated_parquet_names_the_file(results, tmp_path):
    victim = sorted((results / "epochs").glob("*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:100])
    with pytest.raises(ResultsError, match=re.escape(victim.name)):
        build_report([results], tmp_path / "out")


def test_empty_dir_and_missing_dir(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsError, match="no benchctl results"):
        build_report([tmp_path / "empty"], tmp_path / "out")
    with pytest.raises(ResultsError, match="does not exist"):
        build_report([tmp_path / "nope"], tmp_path / "out")
    with pytest.raises(ResultsError):
        build_report([], tmp_path / "out")


def test_only_failed_trials_gives_no_completed_epochs(tmp_path):
    d = tmp_path / "s"
    ident = identity("resnet18", "gpu")
    write_rows(d, "trials", file_key(ident["trial"], 1), [trial_row(ident, "error", "boom")])
    with pytest.raises(ResultsError, match="no completed epochs"):
        build_report([d], tmp_path / "out")


def test_report_command_pauses_the_cyclic_gc_while_it_builds(results, tmp_path, monkeypatch):
    """`benchctl report` builds with gc paused and enables it again after, also when the build fails."""
    seen = []
    build = report.build_report

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return build(*args, **kwargs)

    monkeypatch.setattr(report, "build_report", spy)
    assert gc.isenabled()
    ok = CliRunner().invoke(app, ["report", str(results), "--out", str(tmp_path / "out")])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "out" / "report.md").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    failed = CliRunner().invoke(app, ["report", str(empty), "--out", str(tmp_path / "none")])
    assert failed.exit_code == 2, failed.output
    assert seen == [False, False]
    assert gc.isenabled()


def test_failure_while_drawing_leaves_nothing_written(results, tmp_path, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(figures, "epoch_time", broken)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        build_report([results], out)
    assert list(out.rglob("*")) == []


def test_figures_drawn_by_the_workers_are_those_drawn_here(results):
    parts = []
    model = build_model([results], on_cells=parts.append)
    (part,) = parts  # the per-cell parts, before the speedups: the same as the model's
    assert part.table.empty and part.summary is model.summary and part.accuracy is model.accuracy
    assert (part.batch_sizes, part.chance_pct) == (model.batch_sizes, model.chance_pct)
    keys = ["speedup", "epoch_time", "breakdown"]
    with FigureWorkers() as workers:  # forked workers where this machine has 2+ cores
        workers.draw(part, keys[1:])
        workers.draw(model, keys[:1])
        forked = workers.pngs()
    with FigureWorkers(workers=0) as none:  # drawn in this process
        none.draw(model, keys)
        here = none.pngs()
    assert sorted(forked) == sorted(keys) and all(png.startswith(b"\x89PNG") for png in forked.values())
    assert forked == here


def test_formatting():
    assert [fmt_seconds(x) for x in (5432.1, 134.4, 33.0, 5.5, 0.012345, 0.0)] == [
        "5430",
        "134",
        "33.0",
        "5.50",
        "0.0123",
        "0",
    ]
    assert fmt_seconds(float("nan")) == "—" and fmt_seconds(None) == "—"
    assert fmt_speedup(7.123) == "7.12x" and fmt_speedup(float("nan")) == "—"
    assert fmt_pct(0.6) == "60.0%" and fmt_pct(None) == "—"
    assert fmt_params(11_689_512) == "11.7M" and fmt_params(500_000) == "0.5M" and fmt_params(62_006) == "62k"
    assert report.DASH == "—"


# ---- energy ------------------------------------------------------------------------------------------

ENERGY_HEADER = ["GPU J/epoch", "GPU util", "energy speedup"]


def results_header(markdown: str, title: str = "Results") -> list[str]:
    results = markdown.split(f"\n## {title}\n")[1].split("\n## ")[0]
    line = next(line for line in results.splitlines() if line.startswith("| model |"))
    return [c.strip() for c in line.strip("|").split("|")]


def energy_cells(markdown: str, model: str) -> list[str]:
    header = results_header(markdown, "Details")  # energy is a detail, not the headline
    row = table_row(markdown, model, "Details")
    return [row[header.index(name)] for name in ENERGY_HEADER]


def test_energy_columns_with_all_counters(tmp_path):
    # CPU: 3000 J (RAPL) per epoch; GPU: 800 J (NVML) + 200 J (RAPL) per epoch -> energy speedup 3000/1000
    d = tmp_path / "s"
    write_run(d, "resnet18", "cpu", [WARMUP_S, 30.0, 34.0], epoch_over={"cpu_energy_j": 3000.0})
    gpu_energy = {"gpu_energy_j": 800.0, "cpu_energy_j": 200.0, "gpu_util_pct": 45.4}
    write_run(d, "resnet18", "gpu", [WARMUP_S, 4.0, 6.0], epoch_over=gpu_energy)
    rep = build_report([d], tmp_path / "out")
    md = rep.paths[0].read_text()
    assert ENERGY_HEADER[0] in results_header(md, "Details") and ENERGY_HEADER[0] not in results_header(md)
    assert energy_cells(md, "resnet18") == ["800", "45%", "3.00x"]
    assert rep.table.iloc[0]["energy_speedup"] == 3000.0 / 1000.0
    assert table_row(md, "resnet18")[7].split()[0] == "6.40x"  # time speedup 32 / 5 unchanged
    assert "energy speedup" in md.split("## How to read this")[1].split("\n## ")[0]
    assert "energy notes (why an energy column is empty): none" in md


def test_energy_speedup_dash_when_gpu_side_lacks_cpu_energy(tmp_path):
    d = tmp_path / "s"
    rapl = "RAPL energy counters not readable on this host"
    nvml = "NVML energy unavailable (NVMLError: Not Supported)"
    write_run(d, "resnet18", "cpu", [WARMUP_S, 30.0, 34.0], epoch_over={"cpu_energy_j": 3000.0})
    for repeat in (0, 1):  # the same reason in two trials is listed once
        over = {"gpu_energy_j": 800.0 + repeat * 100, "gpu_util_pct": 40.0}
        write_run(d, "resnet18", "gpu", [WARMUP_S, 4.0], repeat=repeat, epoch_over=over, notes=rapl)
    write_run(d, "resnet50", "gpu", [WARMUP_S, 9.0], notes=f"{rapl}; {nvml}")
    md = build_report([d], tmp_path / "out").paths[0].read_text()
    assert energy_cells(md, "resnet18") == ["850", "40%", "—"]  # GPU J median(800, 900); no 3000/850
    assert energy_cells(md, "resnet50") == ["—", "—", "—"]
    env = md.split("## Environment")[1].split("\n## ")[0]
    assert env.count(rapl) == 1 and env.count(nvml) == 1


def test_report_without_energy_columns_shows_dashes(results, tmp_path):
    md = build_report([results], tmp_path / "out").paths[0].read_text()
    assert results_header(md, "Details")[6:9] == ENERGY_HEADER
    assert energy_cells(md, "resnet18") == ["—", "—", "—"]


# ---- fidelity ----------------------------------------------------------------------------------------

FIDELITY = [
    {
        "cell": "resnet18/gpu/bs128/loader/fp32",
        "torch_threads": 8,
        "data_workers": 4,
        "benchctl_ips": 8012.4,
        "plain_ips": 8100.0,
        "ratio": 8012.4 / 8100.0,  # 0.98918... -> 0.989
        "within_bar": True,
        "plain_epochs": [{"epoch": 1, "images_per_s": 5000.0}, {"epoch": 2, "images_per_s": 8100.0}],
    },
    {
        "cell": "resnet18/cpu/bs128/loader/fp32",
        "torch_threads": 16,
        "data_workers": 2,
        "benchctl_ips": 900.0,
        "plain_ips": 1000.0,
        "ratio": 0.9,
        "within_bar": False,
        "plain_epochs": [],
    },
]


def fidelity_section(markdown: str) -> str:
    return markdown.split("## Fidelity: benchctl vs a plain PyTorch loop")[1].split("\n## ")[0]


def test_fidelity_section_from_fidelity_json(results, tmp_path):
    (results / "fidelity.json").write_text(json.dumps(FIDELITY, indent=2))
    md = build_report([results], tmp_path / "out").paths[0].read_text()
    section = fidelity_section(md)
    assert "median benchctl steady-state images/s / median plain-loop images/s" in section
    assert "| cell | threads | workers | benchctl img/s | plain img/s | ratio | within 0.97–1.03 |" in section
    assert "| resnet18/gpu/bs128/loader/fp32 | 8 | 4 | 8012 | 8100 | 0.989 | yes |" in section
    assert "| resnet18/cpu/bs128/loader/fp32 | 16 | 2 | 900 | 1000 | 0.900 | NO |" in section
    assert md.index("## Fidelity") < md.index("## Environment")


def test_fidelity_section_shows_a_paired_verdict(results, tmp_path):
    # bench/fidelity_pairs.py rows carry a verdict: outside the bar but not resolved from the host's noise
    row = {**FIDELITY[1], "verdict": "unresolved", "ratio_ci": [0.8, 1.01], "pairs": 6}
    (results / "fidelity-pairs.json").write_text(json.dumps([FIDELITY[0], row]))
    section = fidelity_section(build_report([results], tmp_path / "out").paths[0].read_text())
    assert "| resnet18/cpu/bs128/loader/fp32 | 16 | 2 | 900 | 1000 | 0.900 | unresolved |" in section
    assert "| 0.989 | yes |" in section  # a row without a verdict keeps yes/NO
    assert '"unresolved" means' in section


def test_no_fidelity_section_without_fidelity_json(results, tmp_path):
    (results / "fidelity.txt").write_text("not json")  # only fidelity*.json is read
    md = build_report([results], tmp_path / "out").paths[0].read_text()
    assert "Fidelity" not in md


def test_fidelity_files_of_several_dirs_are_all_shown(results, tmp_path):
    other = tmp_path / "results" / "s2"
    write_run(other, "simple_cnn", "gpu", [WARMUP_S, 4.0], sweep="s2")
    (results / "fidelity.json").write_text(json.dumps(FIDELITY[:1]))
    (other / "fidelity-cpu.json").write_text(json.dumps(FIDELITY[1:]))
    md = build_report([results, other, results], tmp_path / "out").paths[0].read_text()
    section = fidelity_section(md)
    assert section.count("| resnet18/gpu/bs128/loader/fp32 | 8 | 4 | 8012 | 8100 | 0.989 | yes | s1/") == 1
    assert "| 900 | 1000 | 0.900 | NO | s2/fidelity-cpu.json |" in section


@pytest.mark.parametrize(
    "content",
    [
        "[{not json",
        json.dumps({"cell": "x"}),  # an object, not a list
        json.dumps([{k: v for k, v in FIDELITY[0].items() if k != "ratio"}]),  # a key missing
        json.dumps([{**FIDELITY[0], "plain_ips": "8100"}]),  # a number as a string
        json.dumps([{**FIDELITY[0], "within_bar": "yes"}]),
        json.dumps([{**FIDELITY[0], "torch_threads": True}]),
        json.dumps(["resnet18"]),
        json.dumps([{**FIDELITY[0], "verdict": "maybe"}]),
    ],
    ids=[
        "syntax",
        "not-a-list",
        "missing-key",
        "str-number",
        "str-bool",
        "bool-int",
        "not-an-object",
        "bad-verdict",
    ],  # fmt: skip
)
def test_malformed_fidelity_json_names_the_file(results, tmp_path, content):
    (results / "fidelity-gpu.json").write_text(content)
    with pytest.raises(ResultsError, match="fidelity-gpu.json"):
        build_report([results], tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ---- accuracy parity and compute efficiency ------------------------------------------------------------


def section(markdown: str, title: str) -> str:
    return markdown.split(f"\n## {title}\n")[1].split("\n## ")[0]


def section_row(markdown: str, title: str, *first: str) -> list[str]:
    prefix = "| " + " | ".join(first) + " |"
    lines = [line for line in section(markdown, title).splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, lines
    return [c.strip() for c in lines[0].strip("|").split("|")]


def test_accuracy_parity_with_three_repeats(tmp_path):
    # final accuracies CPU 80.0, 80.2, 80.4 and GPU 80.5, 80.7, 80.9 (%): diff +0.50 pp, s = 0.2 each side,
    # se = sqrt(2 * 0.04 / 3) = 0.163299, df = 4: 95% CI 0.50 +/- 2.776445 * 0.163299 = [+0.05, +0.95];
    # the 90% interval 0.50 +/- 2.131847 * 0.163299 = [0.152, 0.848] lies inside +/- 1 pp: equivalent
    d = tmp_path / "s"
    for r, (cpu, gpu) in enumerate([(0.800, 0.805), (0.802, 0.807), (0.804, 0.809)]):
        write_run(d, "resnet18", "cpu", [WARMUP_S, 30.0], repeat=r, accs=[0.9, cpu])  # last epoch counts
        write_run(d, "resnet18", "gpu", [WARMUP_S, 5.0], repeat=r, accs=[0.1, gpu])
    md = build_report([d], tmp_path / "out").paths[0].read_text()
    row = section_row(md, "Accuracy parity", "resnet18", "128", "loader", "fp32")
    assert row[4:] == ["80.20%", "80.70%", "+0.50", "[+0.05, +0.95]", "equivalent", "3/3"]
    text = " ".join(section(md, "Accuracy parity").split())
    assert "±1 pp" in text and "Welch t interval" in text and "90% interval" in text


def test_accuracy_parity_with_two_repeats_gives_no_verdict(results, tmp_path):
    # the fixture's resnet18: CPU final 50%, 70% (s^2 = 200, v = 100); GPU 30%, 30% (v = 0): diff -30 pp,
    # se = 10, df = 100^2 / (100^2 / 1) = 1, t(0.975, 1) = 12.7062: [-157.06, +97.06]
    md = build_report([results], tmp_path / "out").paths[0].read_text()
    row = section_row(md, "Accuracy parity", "resnet18")
    assert row[4:] == ["60.00%", "30.00%", "-30.00", "[-157.06, +97.06]", "n<3", "2/2"]
    assert "| resnet50 |" not in section(md, "Accuracy parity")  # CPU only: nothing to compare


def test_compute_efficiency_per_cell(results, tmp_path):
    md = build_report([results], tmp_path / "out").paths[0].read_text()
    gflop = train_flops_per_image("resnet18") / 1e9  # ~0.217 GFLOP per training image at 32x32
    # images/s = 50,000 / epoch_s over the steady epochs: GPU 50,000 / (4, 6, 5, 7) -> median of
    # 12500, 8333.3, 10000, 7142.9 = 9166.7; CPU 50,000 / (30, 34, 32, 40) -> median 1516.5
    gpu_ips = (50_000 / 6 + 50_000 / 5) / 2
    cpu_ips = (50_000 / 34 + 50_000 / 32) / 2
    gpu = section_row(md, "Compute efficiency", "resnet18", "128", "loader", "fp32", "GPU")
    achieved = gflop * gpu_ips / 1000
    assert gpu[5:] == [
        "NVIDIA H200",
        fmt_seconds(gflop),
        fmt_seconds(gpu_ips),
        fmt_seconds(achieved),
        "67 (FP32)",  # fp32 -> the H200's FP32 non-tensor peak
        fmt_pct(achieved / 67),
    ]
    assert 1.9 < achieved < 2.1 and fmt_pct(achieved / 67) == "3.0%"
    cpu = section_row(md, "Compute efficiency", "resnet18", "128", "loader", "fp32", "CPU")
    assert cpu[5:] == ["Xeon 8480+", fmt_seconds(gflop), fmt_seconds(cpu_ips)]  + [
        fmt_seconds(gflop * cpu_ips / 1000), "—", "—",
    ]  # fmt: skip
    assert "TF32" in section(md, "Compute efficiency")  # the fp32 caveat is stated


def test_parity_and_efficiency_with_one_device_and_missing_columns(tmp_path):
    # an older or partial result: no throughput, no device name, no accuracy recorded
    d = tmp_path / "s"
    missing = {"images_per_s": None, "device_name": None, "test_acc": None}
    write_run(d, "resnet50", "gpu", [WARMUP_S, 9.0], epoch_over=missing, precision="amp")
    write_run(d, "simple_cnn", "gpu", [WARMUP_S, 2.0], precision="amp")
    md = build_report([d], tmp_path / "out").paths[0].read_text()
    assert section_row(md, "Compute efficiency", "simple_cnn")[9] == "989.5 (BF16)"  # amp: the BF16 peak
    assert "nothing to compare" in section(md, "Accuracy parity")
    row = section_row(md, "Compute efficiency", "resnet50", "128", "loader", "amp", "GPU")
    assert row[5] == "—" and row[7:] == ["—", "—", "—", "—"]
    assert float(row[6]) == pytest.approx(train_flops_per_image("resnet50") / 1e9, rel=0.01)


# ---- "What this shows" and the figure list --------------------------------------------------------------


def test_what_this_shows_follows_the_table(results, tmp_path):
    md = build_report([results], tmp_path / "out").paths[0].read_text()
    assert md.index("\n## Results\n") < md.index("\n## What this shows\n") < md.index("\n## Figures\n")
    shows = md.split("\n## What this shows\n")[1].split("\n## ")[0]
    assert "The one cell measured on both devices, resnet18, has a speedup of 6.00x." in shows
    figures_md = md.split("\n## Figures\n")[1].split("\n## ")[0]
    for key, path in report.FIGURES.items():
        assert (f"]({path})" in figures_md) == (key != "throughput")  # one batch size: no throughput figure
        assert (report.CAPTIONS[key][1] in figures_md) == (key != "throughput")


def test_throughput_figure_only_with_several_batch_sizes(results, tmp_path):
    out = tmp_path / "out"
    other = tmp_path / "results" / "s2"
    write_run(other, "resnet18", "gpu", [WARMUP_S, 3.0], sweep="s2", batch_size=512)
    build_report([results, other], out)
    md = (out / "report.md").read_text()
    assert "](figures/throughput_vs_batch.png)" in md
    assert (out / "figures/throughput_vs_batch.png").read_bytes()[:8] == PNG_MAGIC
    build_report([results], out)  # one batch size again: the stale figure goes with its listing
    assert "throughput_vs_batch" not in (out / "report.md").read_text()
    assert not (out / "figures/throughput_vs_batch.png").exists()


# ---- hardware classes ------------------------------------------------------------------------------------

EPYC, XEON, H200, A100 = "cpu:EPYC-7763-64c", "cpu:Xeon-Platinum-8480+-16c", "gpu:H200", "gpu:A100"


def write_class_run(results, model, hw_class, epoch_s, repeat=0, **over):
    """A run pinned to a hardware class (`sweep --per-class`): the class stands in the cell and trial ids."""
    cell = f"{model}/{hw_class}/bs128/loader/fp32"
    device = hw_class.split(":", 1)[0]
    write_run(
        results,
        model,
        device,
        epoch_s,
        repeat,
        hw_class=hw_class,
        cell=cell,
        trial=f"{cell}/r{repeat}",
        **over,
    )


def two_cpu_classes(tmp_path):
    # resnet18: EPYC steady 20, 24 | 21, 23 -> median 22; Xeon 60, 64 | 61, 63 -> median 62;
    # H200 4, 6 | 5, 5 -> median 5: speedups 22 / 5 = 4.40x and 62 / 5 = 12.40x (pooled CPUs would give 8.40x)
    d = tmp_path / "classes"
    for repeat, (epyc, xeon, h200) in enumerate(
        [((20.0, 24.0), (60.0, 64.0), (4.0, 6.0)), ((21.0, 23.0), (61.0, 63.0), (5.0, 5.0))]
    ):
        write_class_run(d, "resnet18", EPYC, [WARMUP_S, *epyc], repeat)
        write_class_run(d, "resnet18", XEON, [WARMUP_S, *xeon], repeat)
        write_class_run(d, "resnet18", H200, [WARMUP_S, *h200], repeat)
    return d


def test_speedup_by_hardware_class_matrix(tmp_path):
    rep = build_report([two_cpu_classes(tmp_path)], tmp_path / "out")
    md = rep.paths[0].read_text()
    gpu = [4.0, 6.0, 5.0, 5.0]
    epyc = fmt_speedup_ci(22.0 / 5.0, *bootstrap_speedup_ci([20.0, 24.0, 21.0, 23.0], gpu))
    xeon = fmt_speedup_ci(62.0 / 5.0, *bootstrap_speedup_ci([60.0, 64.0, 61.0, 63.0], gpu))
    assert epyc.startswith("4.40x [") and xeon.startswith("12.40x [")
    assert (
        md.index("\n## What this shows\n")
        < md.index("\n## Speedup by hardware class\n")
        < md.index("\n## Figures\n")
    )
    matrix = section(md, "Speedup by hardware class")
    assert "never pooled" in matrix
    assert "### resnet18 (batch 128, loader, fp32)" in matrix
    assert f"| GPU class / CPU class | {EPYC} | {XEON} |" in matrix
    assert f"| {H200} | {epyc} | {xeon} |" in matrix
    assert "8.40x" not in md  # the pooled CPU median never appears
    # the results table has a row per hardware pair, naming the classes
    header = results_header(md)
    assert header[5:7] == ["CPU class", "GPU class"]
    results = md.split("\n## Results\n")[1].split("\n## ")[0]
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in results.splitlines()
        if line.startswith("| resnet18 |")
    ]
    assert [r[5:10] for r in rows] == [[EPYC, H200, "22.0", "5.00", epyc], [XEON, H200, "62.0", "5.00", xeon]]
    assert "**CPU class / GPU class**" in section(md, "How to read this")
    shows = section(md, "What this shows")
    assert (
        f"4.40x for resnet18 ({H200} vs {EPYC})" in shows
        and f"12.40x for resnet18 ({H200} vs {XEON})" in shows
    )
    # terminal: class columns after precision; --json: cpu_class / gpu_class on every row
    lines = rep.terminal_text.splitlines()
    assert lines[0].split()[5:9] == ["CPU", "class", "GPU", "class"]
    assert [line.split()[5:8] for line in lines[2:4]] == [[EPYC, H200, "22.0"], [XEON, H200, "62.0"]]
    rows_json = json.loads(report.table_json(rep.table))
    assert [(r["cpu_class"], r["gpu_class"], r["speedup"]) for r in rows_json] == [
        (EPYC, H200, 22.0 / 5.0), (XEON, H200, 62.0 / 5.0),
    ]  # fmt: skip


def test_no_matrix_section_with_one_class_a_side(results, tmp_path):
    d = tmp_path / "one"
    write_class_run(d, "resnet18", EPYC, [WARMUP_S, 30.0, 34.0])
    write_class_run(d, "resnet18", H200, [WARMUP_S, 4.0, 6.0])
    rep = build_report([d], tmp_path / "out")
    md = rep.paths[0].read_text()
    assert "\n## Speedup by hardware class\n" not in md
    assert table_row(md, "resnet18")[5:10] == [
        EPYC,
        H200,
        "32.0",
        "5.00",
        fmt_speedup_ci(6.4, *bootstrap_speedup_ci([30.0, 34.0], [4.0, 6.0])),
    ]
    assert f"({H200} vs {EPYC})" not in md  # one hardware pair: names stay short
    assert rep.table[["cpu_class", "gpu_class"]].values.tolist() == [[EPYC, H200]]
    # results without classes (schema 1): no section, no class columns, no class bullet
    old = build_report([results], tmp_path / "old")
    old_md = old.paths[0].read_text()
    assert "Speedup by hardware class" not in old_md and "CPU class" not in old_md  # nor the bullet
    assert "class" not in old.terminal_text
    assert old.table["cpu_class"].tolist() == ["", ""] and old.table["gpu_class"].tolist() == ["", ""]


def test_class_matrix_section_shows_a_dash_for_a_pair_without_speedup():
    nan = float("nan")
    base = {"model": "resnet50", "batch_size": 256, "pipeline": "resident", "precision": "amp"}
    cols = ["cpu_class", "gpu_class", "speedup", "speedup_low", "speedup_high"]
    values = [
        (EPYC, H200, 12.34, 11.9, 12.8),
        (EPYC, A100, 7.0, nan, nan),  # one sample a side: no interval
        (XEON, H200, 30.0, 29.0, 31.0),
        (XEON, A100, nan, nan, nan),  # e.g. a GPU median of 0: no speedup
    ]
    table = pd.DataFrame(
        [{**base, **dict(zip(cols, v, strict=True)), "cpu_n": 4, "gpu_n": 4} for v in values]
    )
    text = sections.class_matrix_section(ReportModel.of_table(table))
    assert "### resnet50 (batch 256, resident, amp)" in text
    assert f"| GPU class / CPU class | {EPYC} | {XEON} |" in text
    assert f"| {A100} | 7.00x | — |" in text  # rows sorted by class name: A100 before H200
    assert f"| {H200} | 12.34x [11.90–12.80] | 30.00x [29.00–31.00] |" in text
    assert text.index(A100 + " |") < text.index(H200 + " |")
    missing = sections.class_matrix_section(ReportModel.of_table(table.iloc[:3]))  # XEON x A100 never ran
    assert f"| {A100} | 7.00x | — |" in missing


def test_planned_trials_without_a_result_are_counted_and_named(results, tmp_path):
    spec = {"name": "s1", "models": ["resnet18", "resnet50"], "devices": ["cpu", "gpu"], "batch_sizes": [128],
            "pipelines": ["loader"], "precisions": ["fp32"], "repeats": 2, "per_class": False}  # fmt: skip
    (results / "spec.json").write_text(json.dumps({"spec": spec}))
    build_report([results], tmp_path / "rep", formats=("md",))
    md = (tmp_path / "rep" / "report.md").read_text()
    # resnet50: cpu r1, gpu r0 (failed) and gpu r1 never completed; resnet18 all four did
    assert "; 3 planned trial(s) have no result (see Notes)." in md
    note = next(line for line in md.splitlines() if "planned in s1/spec.json" in line)
    assert note.startswith("- 3 trial(s) planned in s1/spec.json have no completed attempt")
    for t in (
        "resnet50/cpu/bs128/loader/fp32/r1",
        "resnet50/gpu/bs128/loader/fp32/r0",
        "resnet50/gpu/bs128/loader/fp32/r1",
    ):
        assert f"`{t}`" in note
    assert "resnet18/" not in note and "--resume --name s1" in note
