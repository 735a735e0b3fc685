"""The pure parts of the benchmark scripts in bench/ and of the H200 runbook's helpers in reports/h200/
(they run on the GPU machine, not in CI)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RUNBOOK = ROOT / "reports" / "h200"  # h200.sh and the one-off helpers only it runs


def load(name: str, folder: Path = BENCH):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fidelity_ratio_and_spread_follow_their_formulas():
    fidelity = load("fidelity")
    assert fidelity.ratio([100.0, 110.0, 90.0], [50.0, 50.0]) == pytest.approx(2.0)  # median / median
    runs = [
        [
            {"epoch": 1, "images_per_s": 1.0},
            {"epoch": 2, "images_per_s": 100.0},
            {"epoch": 3, "images_per_s": 100.0},
        ],
        [
            {"epoch": 1, "images_per_s": 1.0},
            {"epoch": 2, "images_per_s": 90.0},
            {"epoch": 3, "images_per_s": 90.0},
        ],
        [{"epoch": 1, "images_per_s": 1.0}, {"epoch": 2, "images_per_s": 95.0}],
    ]
    # per-run steady medians 100, 90, 95 (epoch 1 left out): (100 - 90) / 95
    assert fidelity.spread(runs) == pytest.approx(10 / 95)
    assert fidelity.spread(runs[:1]) is None  # one run: no spread


def test_fidelity_pools_every_repeat_of_a_cell():
    import pandas as pd

    fidelity = load("fidelity")
    group = pd.DataFrame(
        [
            {
                "repeat": r,
                "epoch": e,
                "warmup": e == 1,
                "images_per_s": ips,
                "torch_threads": 1,
                "data_workers": 0,
            }
            for r, per in enumerate([[1.0, 100.0, 104.0], [1.0, 90.0, 92.0]])
            for e, ips in enumerate(per, start=1)
        ]
    )
    plain = [[{"epoch": 1, "images_per_s": 1.0}, {"epoch": 2, "images_per_s": 95.0}]]
    row = fidelity._row("c", group, plain, None)
    assert row["benchctl_ips"] == pytest.approx(96.0)  # median of 90, 92, 100, 104 (warm-up left out)
    assert row["ratio"] == pytest.approx(96.0 / 95.0) and row["within_bar"]
    assert row["benchctl_repeats"] == 2
    assert row["benchctl_spread"] == pytest.approx((102 - 91) / 96.5)  # per-repeat medians 102 and 91


def test_fidelity_records_each_sides_host_steal():
    import pandas as pd

    fidelity = load("fidelity")
    group = pd.DataFrame(
        [
            {
                "repeat": 0,
                "epoch": e,
                "warmup": e == 1,
                "images_per_s": 100.0,
                "torch_threads": 1,
                "data_workers": 0,
                "host_steal_pct": steal,
            }
            for e, steal in [(1, 50.0), (2, 1.0), (3, 3.0)]
        ]  # fmt: skip
    )
    plain = [[{"epoch": 1, "images_per_s": 1.0, "host_steal_pct": 90.0},
              {"epoch": 2, "images_per_s": 95.0, "host_steal_pct": 8.0},
              {"epoch": 3, "images_per_s": 95.0, "host_steal_pct": None}]]  # fmt: skip
    row = fidelity._row("c", group, plain, None)
    assert row["benchctl_steal_pct"] == 2.0  # median of the steady epochs' 1 and 3; warm-up's 50 left out
    assert row["plain_steal_pct"] == 8.0  # the unknown epoch is skipped, epoch 1 left out
    old = fidelity._row(
        "c", group.drop(columns="host_steal_pct"), [[{"epoch": 2, "images_per_s": 9.0}]], None
    )
    assert old["benchctl_steal_pct"] is None and old["plain_steal_pct"] is None  # rows from before schema 4


@pytest.mark.slow  # the plain loop trains in a subprocess
def test_plain_loop_prints_each_epochs_speed_and_host_load():
    import json
    import subprocess
    import sys

    cmd = [
        sys.executable,
        str(BENCH / "plain_loop.py"),
        "--model",
        "simple_cnn",
        "--device",
        "cpu",
        "--threads",
        "1",
        "--pipeline",
        "resident",
        "--epochs",
        "2",
        "--max-steps",
        "8",
        "--batch-size",
        "64",
        "--train-size",
        "512",
    ]  # fmt: skip  (epochs of many clock ticks)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [r["epoch"] for r in rows] == [1, 2] and all(r["images"] == 512 for r in rows)
    for r in rows:
        assert r["images_per_s"] == pytest.approx(r["images"] / r["seconds"])
        assert 0.0 <= r["host_steal_pct"] < 100.0 and 0.0 < r["host_busy_pct"] <= 100.0


def test_fidelity_pairs_follow_their_formulas():
    import math

    pairs = load("fidelity_pairs")
    row = {"torch_threads": 1, "data_workers": 0}
    rounds = [
        [{**row, "cell": "a", "ratio": 0.9, "benchctl_ips": 90.0, "plain_ips": 100.0}],
        [{**row, "cell": "a", "ratio": 1.0, "benchctl_ips": 100.0, "plain_ips": 100.0},
         {**row, "cell": "b", "ratio": 1.02, "benchctl_ips": 51.0, "plain_ips": 50.0}],
        [{**row, "cell": "a", "ratio": 1.2, "benchctl_ips": 120.0, "plain_ips": 100.0}],
    ]  # fmt: skip
    a, b = pairs.pair_rows(rounds)
    assert a["pairs"] == 3 and a["pair_ratios"] == [0.9, 1.0, 1.2] and a["ratio"] == 1.0 and a["within_bar"]
    assert b["pairs"] == 1 and b["ratio"] == 1.02
    mean, low, high = pairs.geometric_ci([0.9, 1.0, 1.2])
    logs = [math.log(x) for x in (0.9, 1.0, 1.2)]
    centre = sum(logs) / 3
    sd = math.sqrt(sum((x - centre) ** 2 for x in logs) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, df=2)
    assert mean == pytest.approx(math.exp(centre))
    assert (low, high) == (pytest.approx(math.exp(centre - half)), pytest.approx(math.exp(centre + half)))
    assert math.isnan(pairs.geometric_ci([1.1])[1])  # one pair: no interval
    assert a["ratio_ci"] == [pytest.approx(math.exp(centre - half)), pytest.approx(math.exp(centre + half))]
    assert a["verdict"] == "yes" and b["verdict"] == "yes"  # b: one pair, inside the bar
    assert a["noise_floor"] == 0.0 and math.isnan(b["noise_floor"])  # a's plain loop: 100 img/s thrice


def test_fidelity_pairs_verdict_tells_a_gap_from_noise():
    pairs = load("fidelity_pairs")
    assert pairs.verdict(1.0, 0.5, 1.5) == "yes"  # inside the bar, however wide the interval
    assert pairs.verdict(0.90, 0.88, 0.92) == "NO"  # interval wholly below the bar: a resolved gap
    assert pairs.verdict(1.10, 1.04, 1.16) == "NO"  # wholly above
    assert pairs.verdict(0.94, 0.85, 1.00) == "unresolved"  # outside, but the interval reaches the bar
    assert pairs.verdict(0.94, float("nan"), float("nan")) == "unresolved"  # one pair: unknown interval


def test_fidelity_pairs_noise_floor_is_the_plain_loops_round_to_round_spread():
    import math
    import statistics

    pairs = load("fidelity_pairs")
    plain = [100.0, 110.0, 99.0, 120.0]
    steps = [math.log(110 / 100), math.log(99 / 110), math.log(120 / 99)]
    assert pairs.noise_floor(plain) == pytest.approx(statistics.stdev(steps))
    assert pairs.noise_floor([100.0, 100.0, 100.0]) == 0.0  # a steady host: no noise
    assert math.isnan(pairs.noise_floor([100.0, 110.0]))  # one step: no spread


def test_fidelity_pairs_writes_null_not_nan(tmp_path):
    import json

    pairs = load("fidelity_pairs")
    r = tmp_path / "r1"
    r.mkdir()
    row = {
        "cell": "a",
        "torch_threads": 1,
        "data_workers": 0,
        "ratio": 0.9,
        "benchctl_ips": 90.0,
        "plain_ips": 100.0,
    }
    (r / "fidelity.json").write_text(json.dumps([row]))
    pairs.main([str(r), "--out", str(tmp_path / "fidelity-pairs.json")])
    text = (tmp_path / "fidelity-pairs.json").read_text()
    assert "NaN" not in text
    (out,) = json.loads(text)
    assert out["ratio_ci"] == [None, None] and out["noise_floor"] is None and out["verdict"] == "unresolved"


def _trial(trial, cell, beside, uuid, cores, gpus=1):
    return {
        "trial": trial, "cell": cell, "status": "ok", "gpus_visible": gpus, "gpu_uuid": uuid,
        "nvml_index": int(uuid[-1]), "cuda_visible_devices": uuid[-1], "cpu_affinity": cores,
        "overlapped_with": beside,
    }  # fmt: skip


def test_multi_gpu_pairs_check_own_gpu_and_own_cores():
    import pandas as pd

    multi = load("multi_gpu", RUNBOOK)
    trials = pd.DataFrame(
        [
            _trial("a", "ca", "b", "GPU-0", "0-2"),
            _trial("b", "cb", "a,c", "GPU-1", "3-5"),  # beside a: own GPU, own cores
            _trial("c", "cc", "b,f", "GPU-1", "5-6"),  # beside b: same GPU, core 5 shared
            _trial("d", "cd", None, "GPU-0", "0"),  # alone
            _trial("e", "ce", None, "GPU-1", None),
            {**_trial("f", "cf", "c", "GPU-0", "7"), "status": "error"},  # failed beside c: not a pair
        ]
    )
    pairs = {tuple(p["trials"]): p for p in multi.concurrent_pairs(trials)}
    assert set(pairs) == {("a", "b"), ("b", "c")}
    assert pairs["a", "b"]["own_gpu"] and pairs["a", "b"]["own_cores"]
    assert not pairs["b", "c"]["own_gpu"] and pairs["b", "c"]["own_cores"] is False
    unpinned = trials.assign(
        cpu_affinity=[None, "3", None, None, None, None], gpus_visible=[2, 1, 1, 1, 1, 1]
    )
    ab = multi.concurrent_pairs(unpinned)[0]
    assert ab["own_cores"] is None and not ab["own_gpu"]  # a saw both GPUs: not its own one


def test_multi_gpu_speed_ratio_pools_both_lone_runs_and_skips_cells_never_shared():
    import pandas as pd

    multi = load("multi_gpu", RUNBOOK)

    def epochs(cell, ips):  # epoch 1 is warm-up and must not count
        return pd.DataFrame(
            {"cell": cell, "warmup": [True] + [False] * len(ips), "images_per_s": [1.0, *ips]}
        )

    alone = [epochs("ca", [100.0, 100.0]), epochs("ca", [80.0, 80.0])]
    together = pd.concat([epochs("ca", [90.0, 90.0]), epochs("cb", [10.0])])
    rows = multi.speed_rows(alone + [epochs("cb", [10.0])], together, paired_cells={"ca"})
    ca, cb = rows
    assert ca["alone_ips"] == 90.0 and ca["ratio"] == pytest.approx(1.0) and ca["ok"] is True
    assert cb["ran_beside_another"] is False and cb["ok"] is None
    slow = multi.speed_rows(alone, epochs("ca", [80.0]), paired_cells={"ca"})[0]
    assert slow["ratio"] == pytest.approx(80 / 90) and slow["ok"] is False  # below the 0.95 bar


def test_runbook_stops_a_call_at_a_failed_required_step(tmp_path):
    import yaml

    runbook = load("runbook")
    book = tmp_path / "book.yaml"
    bad = {"plain": {"name": "smoke", "args": "--model simple_cnn --device tpu", "required": True}}
    after = {"plain": {"name": "after", "args": "--help"}}
    book.write_text(yaml.safe_dump({"calls": {"c": [bad, after]}}))
    assert runbook.main([str(book), "c", str(tmp_path / "out")]) == 0
    log = (tmp_path / "out" / "call.log").read_text()
    assert "== plain smoke: exit 2" in log and "is required: the call stops here" in log
    assert "== plain after" not in log  # never started
    book.write_text(yaml.safe_dump({"calls": {"c": [{"plain": {**bad["plain"], "required": False}}, after]}}))
    assert runbook.main([str(book), "c", str(tmp_path / "out2")]) == 0
    assert "== plain after: exit 0" in (tmp_path / "out2" / "call.log").read_text()


@pytest.mark.slow  # waits on a runbook's steps
def test_runbook_cut_by_sigterm_stops_its_step_and_still_packs(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    import yaml

    book = tmp_path / "book.yaml"
    endless = {
        "plain": {
            "name": "endless",
            "args": "--model simple_cnn --device cpu --threads 1 --epochs 100000 --train-size 256",
        }
    }
    book.write_text(yaml.safe_dump({"calls": {"c": [endless]}}))
    out = tmp_path / "out"
    root = Path(__file__).resolve().parents[1]
    call = subprocess.Popen(
        [sys.executable, str(root / "bench" / "runbook.py"), str(book), "c", str(out)], cwd=root
    )
    deadline = time.monotonic() + 120
    while '"epoch": 2' not in ((out / "call.log").read_text() if (out / "call.log").exists() else ""):
        assert time.monotonic() < deadline and call.poll() is None, "the plain loop never reached epoch 2"
        time.sleep(0.5)
    call.send_signal(signal.SIGTERM)  # what the device tool does to a call that outlives its time
    assert call.wait(60) == 143
    log = (out / "call.log").read_text()
    assert "== plain endless: exit" in log  # the step was stopped and waited for, not orphaned
    assert (out / "results.tar.gz").is_file()


def test_scale_lab_counts_rows_lost_and_duplicated_by_trial_epoch():
    scale = load("scale_lab")
    rows = [("a", 1, 1), ("a", 1, 2), ("a", 2, 2), ("b", 1, 1), ("b", 1, 1)]  # a retried; b: epoch 1 twice
    assert scale.account(rows, trials=2, epochs=2) == {
        "rows_expected": 4,
        "rows_written": 5,
        "rows_duplicated": 1,  # (b, attempt 1, epoch 1) twice; a's second attempt is no duplicate
        "rows_lost": 1,  # b's epoch 2
    }
    assert scale.account([("a", 1, 1), ("a", 1, 2)], trials=1, epochs=2)["rows_lost"] == 0


def test_scale_lab_shapes_a_heterogeneous_lab_with_a_gpu_node_in_every_four():
    shape = load("scale_lab").lab_shape(8)
    assert [(n["num_cpus"], n["num_gpus"]) for n in shape] == [
        (4, 0), (3, 3), (2, 0), (4, 0), (2, 0), (3, 3), (4, 0), (2, 0)
    ]  # fmt: skip
