"""scripts/cpu_profile.py: gperftools' profiler around native searches. The
profiler is not part of the package; where it is missing the script says
so and stops, and where it is installed a profile names the core's own
functions (the library still loaded when the profile is written)."""
import ctypes.util
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cpu_profile.py"


def test_a_missing_profiler_is_named_and_nothing_runs(tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPT), "--profiler", str(tmp_path / "libprofiler.so"),
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "cannot load" in run.stderr and "libprofiler.so" in run.stderr
    assert "Traceback" not in run.stderr
    assert not list(tmp_path.glob("*.prof"))


@pytest.mark.skipif(ctypes.util.find_library("profiler") is None or
                    not (shutil.which("google-pprof") or shutil.which("pprof")),
                    reason="gperftools (libprofiler and pprof) is not installed here")
def test_a_profile_names_the_search_functions(tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPT), "-b", "random", "--threads", "2", "--positions", "1",
                          "--movetime", "0.5", "--searches", "1", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "lc0core::search::Search::pick_node" in (tmp_path / "cpu_pos1.txt").read_text()


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build a stand-in profiler")
def test_libraries_beside_an_unpacked_profiler_are_loaded_with_it(tmp_path):
    # A stand-in for an unpacked libprofiler whose dependency (libunwind in
    # Debian's package) sits beside it, outside the dynamic linker's paths.
    (tmp_path / "dep.cpp").write_text('extern "C" int stand_in_dependency() { return 7; }\n')
    (tmp_path / "prof.cpp").write_text('extern "C" int stand_in_dependency();\n'
                                       'extern "C" int ProfilerStart(const char*) { return stand_in_dependency(); }\n'
                                       'extern "C" void ProfilerStop() {}\n')
    subprocess.run(["g++", "-shared", "-fPIC", "-Wl,-soname,libstandin.so.8", "-o",
                    str(tmp_path / "libstandin.so.8"), str(tmp_path / "dep.cpp")], check=True)
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(tmp_path / "libprofiler.so.0"), str(tmp_path / "prof.cpp"),
                    str(tmp_path / "libstandin.so.8")], check=True)
    probe = (f"import runpy; m = runpy.run_path({str(SCRIPT)!r}); "
             f"print(m['load_profiler']({str(tmp_path / 'libprofiler.so.0')!r}).ProfilerStart(b'x'))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "7"
