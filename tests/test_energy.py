import torch

from trainables.energy import EnergyMeter, _Rapl


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
