import pytest
import torch

from trainables.energy import EnergyMeter, _Rapl, host_load, read_cpu_times


def _domain(root, name, energy_uj, max_range=1000):
    d = root / name
    d.mkdir()
    (d / "energy_uj").write_text(f"{energy_uj}\n")
    (d / "max_energy_range_uj").write_text(f"{max_range}\n")
    return d


def test_rapl_sums_packages_and_handles_wraparound(tmp_path):
    p0 = _domain(tmp_path, "intel-rapl:0", 900)
    p1 = _domain(tmp_path, "intel-rapl:1", 100)
    _domain(tmp_path, "intel-rapl:0:0", 5)  # a sub-domain (core) is inside package 0: not counted twice
    rapl = _Rapl(str(tmp_path))
    assert [d for d, _ in rapl.domains] == [str(p0), str(p1)] and rapl.note is None
    rapl.start()
    (p0 / "energy_uj").write_text("50\n")  # wrapped: 900 -> 1000 -> 50 is 150 uJ
    (p1 / "energy_uj").write_text("400\n")  # 300 uJ
    assert rapl.stop() == (150 + 300) / 1e6


def test_no_rapl_is_none_with_a_reason(tmp_path):
    rapl = _Rapl(str(tmp_path))
    rapl.start()
    assert rapl.stop() is None and "RAPL" in rapl.note


def test_cpu_meter_never_reports_gpu_numbers():
    meter = EnergyMeter(torch.device("cpu"))
    meter.start()
    reading = meter.stop()
    assert reading.gpu_energy_j is None and reading.gpu_util_pct is None


def _stat(path, user, system, idle, steal, iowait=0):
    # the aggregate line with guest and guest_nice columns, then a per-CPU line that must be ignored
    path.write_text(
        f"cpu  {user} 0 {system} {idle} {iowait} 0 0 {steal} 7 0\ncpu0 1 1 1 1 1 1 1 1 1 1\nintr 5\n"
    )
    return str(path)


def test_host_load_follows_its_formula(tmp_path):
    stat = tmp_path / "stat"
    start = read_cpu_times(_stat(stat, user=100, system=50, idle=1000, steal=10))
    stop = read_cpu_times(_stat(stat, user=400, system=150, idle=1500, steal=60, iowait=100))
    # d: user 300 + system 100 = 400 busy; idle 500, iowait 100, steal 50: total 1050
    busy, steal = host_load(start, stop)
    assert busy == pytest.approx(100 * 400 / 1050) and steal == pytest.approx(100 * 50 / 1050)
    assert host_load(start, start) == (None, None)  # no tick passed


def test_host_load_short_stat_line_and_unreadable_file(tmp_path):
    old = tmp_path / "stat"
    old.write_text("cpu  1 2 3 4\n")  # an old kernel without iowait..steal columns
    assert read_cpu_times(str(old)) == {
        "user": 1, "nice": 2, "system": 3, "idle": 4, "iowait": 0, "irq": 0, "softirq": 0, "steal": 0
    }  # fmt: skip
    assert read_cpu_times(str(tmp_path / "missing")) is None


def test_meter_reads_host_load_from_its_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    meter = EnergyMeter(torch.device("cpu"), proc_stat=_stat(stat, user=0, system=0, idle=0, steal=0))
    meter.start()
    _stat(stat, user=30, system=10, idle=50, steal=10)
    reading = meter.stop()
    assert reading.host_busy_pct == pytest.approx(40.0) and reading.host_steal_pct == pytest.approx(10.0)


def test_meter_without_proc_stat_says_why(tmp_path):
    meter = EnergyMeter(torch.device("cpu"), proc_stat=str(tmp_path / "missing"))
    meter.start()
    reading = meter.stop()
    assert reading.host_busy_pct is None and reading.host_steal_pct is None
    assert any("host CPU load unreadable" in n for n in meter.notes)


def test_real_proc_stat_busy_while_computing():
    # this host's own counters while the test process multiplies matrices: some CPU time must be busy
    meter = EnergyMeter(torch.device("cpu"))
    meter.start()
    x = torch.randn(512, 512)
    for _ in range(200):
        x = torch.tanh(x @ x)
    reading = meter.stop()
    assert 0.0 < reading.host_busy_pct <= 100.0 and 0.0 <= reading.host_steal_pct < 100.0
