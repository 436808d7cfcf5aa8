"""scripts/pass_energy.py without a GPU: its arithmetic, its timing loop on a
fake backend and a fake NVML, and what it says where NVML is missing or
fails."""
import importlib.util
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_script():
    spec = importlib.util.spec_from_file_location("pass_energy", ROOT / "scripts" / "pass_energy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_summary_arithmetic():
    pe = load_script()
    r = pe.summarize(256, 10, 2.0, 1_400_000, [1500, 1600, 1700])
    assert r["nps"] == pytest.approx(1280.0)
    assert r["watts"] == pytest.approx(700.0)
    assert r["joules_per_pass"] == pytest.approx(140.0)
    assert r["uj_per_position"] == pytest.approx(140.0 / 256 * 1e6)
    assert r["sm_clock_mhz"] == 1600
    assert pe.summarize(1, 3, 1.0, 30, [])["sm_clock_mhz"] == 0


class FakeNvml:
    """Energy rises 7 mJ a forward call; the clock reads 1,650 MHz."""

    def __init__(self):
        self.mj = 0

    def energy_mj(self):
        return self.mj

    def sm_clock_mhz(self):
        return 1650


def test_measure_counts_the_timed_calls_only():
    pe = load_script()
    nvml = FakeNvml()
    calls = []

    def forward_into(masks, values, out):
        calls.append(len(masks))
        nvml.mj += 7
        out[0][:] = 0

    pool = (np.zeros((64, 112), np.uint64), np.zeros((64, 112), np.float32))
    r = pe.measure(nvml, forward_into, pool, 16, 0.12, np.empty)
    assert set(calls) == {16}
    assert r["calls"] >= 3 and r["calls"] < len(calls)          # the warm-up calls are not counted
    assert r["joules_per_pass"] == pytest.approx(0.007)
    assert r["uj_per_position"] == pytest.approx(7000 / 16)
    assert r["sm_clock_mhz"] in (0, 1650)                        # sampled every 50 ms: maybe none yet


def test_missing_nvml_is_said(monkeypatch, capsys):
    pe = load_script()

    def no_library(name):
        raise OSError(f"{name}: cannot open shared object file")
    monkeypatch.setattr(pe.ctypes, "CDLL", no_library)
    assert pe.main(["-w", "net.pb.gz"]) == 2
    assert "pass_energy: NVML (libnvidia-ml.so.1) not found" in capsys.readouterr().err


def test_nvml_loader_failure_and_status_are_errors():
    pe = load_script()

    def no_library(name):
        raise OSError("not here")
    with pytest.raises(pe.NvmlError, match="not found: not here"):
        pe.Nvml(0, loader=no_library)

    class FailingInit:
        def nvmlInit_v2(self):
            return 9
    with pytest.raises(pe.NvmlError, match="nvmlInit_v2 failed with NVML status 9"):
        pe.Nvml(0, loader=lambda name: FailingInit())


def test_unreadable_net_is_said(monkeypatch, tmp_path, capsys):
    pe = load_script()

    class Present:
        def __init__(self, index):
            pass
    monkeypatch.setattr(pe, "Nvml", Present)
    assert pe.main(["-w", str(tmp_path / "missing.pb.gz")]) == 2
    assert capsys.readouterr().err.startswith("pass_energy: ")


def test_bad_batches_are_refused(capsys):
    pe = load_script()
    with pytest.raises(SystemExit):
        pe.main(["-w", "net.pb.gz", "--batches", "64,x"])
    assert "--batches" in capsys.readouterr().err
