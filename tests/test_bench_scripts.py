"""Host-side parts of the native bench scripts (no GPU): scripts/bench_program.py
builds native/bench/<name>.cu with the toolchain the library's build finds
and runs it; scripts/gemm_sm90_bench.py, scripts/graph_launch_bench.py and
scripts/energy_floor.py turn their options into its arguments. The compiler
and the program are faked; what is checked is what would run, and what the
scripts answer."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "scripts"))  # the scripts import bench_program as a sibling

import bench_program  # noqa: E402
import energy_floor  # noqa: E402
import gemm_sm90_bench  # noqa: E402
import graph_launch_bench  # noqa: E402
from lc0_rocm.backends import native, native_build  # noqa: E402
from lc0_rocm.makenet.attention import BT4, T82  # noqa: E402

FAKE_TOOLCHAIN = native_build.Toolchain(vendor="nvidia", compiler="/opt/cuda/bin/nvcc", include_dirs=("/opt/blas/include",),
                                        library_dirs=("/opt/blas/lib",), libraries=("-lcublas",))


def fake_target(arch):
    def detect(vendor=None, arch_asked=None):
        assert vendor == "nvidia"
        return FAKE_TOOLCHAIN, arch
    return detect


class FakeRuns:
    """subprocess.run for the compile (first call) and the program (second)."""

    def __init__(self, compile_status=0, program_status=0, compile_stderr=""):
        self.calls = []
        self.statuses = [(compile_status, compile_stderr), (program_status, "")]

    def __call__(self, command, **kwargs):
        status, stderr = self.statuses[len(self.calls)]
        self.calls.append(command)
        return subprocess.CompletedProcess(command, status, stdout="", stderr=stderr)


def test_no_gpu_is_said_and_nothing_runs(monkeypatch, capsys):
    def no_gpu(vendor=None, arch=None):
        raise native_build.NoGpuError({"nvidia": "nvidia-smi not found"})
    runs = FakeRuns()
    monkeypatch.setattr(bench_program.native_build, "detect_target", no_gpu)
    monkeypatch.setattr(bench_program.subprocess, "run", runs)
    assert bench_program.build_and_run("graph_launch_bench", ["200", "50"]) == 2
    assert "graph_launch_bench:" in capsys.readouterr().err
    assert runs.calls == []


def test_other_gpus_than_sm_90_are_refused(monkeypatch, capsys):
    runs = FakeRuns()
    monkeypatch.setattr(bench_program.native_build, "detect_target", fake_target("sm_80"))
    monkeypatch.setattr(bench_program.subprocess, "run", runs)
    assert bench_program.build_and_run("gemm_sm90_bench", ["256", "30"], with_blas=True) == 2
    assert "needs an sm_90 GPU (this one is sm_80)" in capsys.readouterr().err
    assert runs.calls == []


@pytest.mark.parametrize("name, with_blas", [("graph_launch_bench", False), ("gemm_sm90_bench", True)])
def test_the_named_program_is_compiled_for_sm_90a_and_run_with_the_arguments(monkeypatch, name, with_blas):
    runs = FakeRuns(program_status=3)
    monkeypatch.setattr(bench_program.native_build, "detect_target", fake_target("sm_90"))
    monkeypatch.setattr(bench_program.subprocess, "run", runs)
    assert bench_program.build_and_run(name, ["64", "7"], with_blas=with_blas) == 3  # the program's status
    compile_command, program_command = runs.calls
    assert compile_command[0] == FAKE_TOOLCHAIN.compiler
    assert {"arch=compute_90a,code=sm_90a", "-DLC0ROCM_SM90A", native_build.CXX_STD} <= set(compile_command)
    source = pathlib.Path(next(a for a in compile_command if a.endswith(".cu")))
    assert source.name == f"{name}.cu" and source.is_file()
    assert source.parent == native_build.source_dir() / "bench"
    blas = {"-I/opt/blas/include", "-L/opt/blas/lib", "-lcublas"}
    if with_blas:
        assert blas <= set(compile_command)
    else:
        assert not blas & set(compile_command)
    program = compile_command[compile_command.index("-o") + 1]
    assert program_command == [program, "64", "7"]


def test_a_failed_compile_shows_the_compiler_and_runs_nothing(monkeypatch, capsys):
    runs = FakeRuns(compile_status=1, compile_stderr="error: no such file check_cuda.cuh")
    monkeypatch.setattr(bench_program.native_build, "detect_target", fake_target("sm_90"))
    monkeypatch.setattr(bench_program.subprocess, "run", runs)
    assert bench_program.build_and_run("graph_launch_bench", ["1", "1"]) == 1
    assert "compile failed" in capsys.readouterr().err and len(runs.calls) == 1


def test_build_and_read_returns_the_programs_output(monkeypatch):
    seen = []

    def run(command, **kwargs):
        seen.append(kwargs)
        text = "fp16 matrix rate 747.5 TFLOP/s\n" if len(seen) == 2 else ""
        return subprocess.CompletedProcess(command, 0, stdout=text if kwargs.get("stdout") else None, stderr="")
    monkeypatch.setattr(bench_program.native_build, "detect_target", fake_target("sm_90"))
    monkeypatch.setattr(bench_program.subprocess, "run", run)
    assert bench_program.build_and_read("matrix_rate_bench", ["8192", "20"], with_blas=True) == (
        0, "fp16 matrix rate 747.5 TFLOP/s\n")
    assert seen[1] == {"stdout": subprocess.PIPE, "text": True}  # standard output only: errors still show
    seen.clear()
    assert bench_program.build_and_run("matrix_rate_bench", ["8192", "20"], with_blas=True) == 0
    assert seen[1] == {}  # printed as it runs


def record_runs(monkeypatch):
    """The (name, arguments, with_blas) of each build_and_run the scripts ask for."""
    seen = []
    monkeypatch.setattr(bench_program, "build_and_run",
                        lambda name, args, with_blas=False: seen.append((name, args, with_blas)) or 0)
    return seen


def test_graph_launch_bench_options(monkeypatch):
    seen = record_runs(monkeypatch)
    assert graph_launch_bench.main(["--nodes", "10", "--reps", "5"]) == 0
    assert graph_launch_bench.main([]) == 0
    assert seen == [("graph_launch_bench", ["10", "5"], False), ("graph_launch_bench", ["200", "50"], False)]
    for bad in (["--nodes", "0"], ["--reps", "-1"]):
        with pytest.raises(SystemExit) as e:
            graph_launch_bench.main(bad)
        assert e.value.code == 2
    assert len(seen) == 2


def test_gemm_sm90_bench_options(monkeypatch):
    seen = record_runs(monkeypatch)
    assert gemm_sm90_bench.main(["--batch", "64"]) == 0
    assert seen == [("gemm_sm90_bench", ["64", "30"], True)]
    for bad in (["--batch", "0"], ["--reps", "0"]):
        with pytest.raises(SystemExit) as e:
            gemm_sm90_bench.main(bad)
        assert e.value.code == 2
    assert len(seen) == 1


def test_energy_floor_passes_the_nets_shapes(monkeypatch):
    seen = record_runs(monkeypatch)
    assert energy_floor.main(["--net", "bt4", "--batch", "256", "--seconds", "2"]) == 0
    assert energy_floor.main([]) == 0
    hidden, dense1, gen = BT4.smolgen
    bt4 = [BT4.embedding, BT4.heads, BT4.dff, BT4.layers, hidden, dense1, gen, 256, 2]
    hidden, dense1, gen = T82.smolgen
    t82 = [T82.embedding, T82.heads, T82.dff, T82.layers, hidden, dense1, gen, 512, 3]
    assert seen == [("energy_floor_bench", [str(v) for v in bt4], True),
                    ("energy_floor_bench", [str(v) for v in t82], True)]
    assert t82[:4] == [768, 24, 1024, 15]  # the shapes BENCHMARKS.md's figures name
    for bad in (["--batch", "0"], ["--seconds", "0"], ["--net", "maia"]):
        with pytest.raises(SystemExit) as e:
            energy_floor.main(bad)
        assert e.value.code == 2
    assert len(seen) == 2


@pytest.mark.parametrize("script", ["gpu_first_use", "gemm_tune_state"])
def test_gpu_timing_script_without_a_gpu_says_why(make_test_net, script):
    """A script that times the GPU (first use; the tuner's choices cold and
    hot) where no GPU backend is usable (CI): exit 2 with the backend's
    reason, no traceback. (Its timings need a GPU.)"""
    if native.is_available("cuda-fp16")[0]:
        pytest.skip("a GPU backend is usable here: the script times it instead")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / f"{script}.py"), "-w",
                           str(make_test_net("tiny-resnet")), "-b", "cuda-fp16"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"{script}: cuda-fp16:") and "Traceback" not in proc.stderr
