"""Builds and runs a benchmark program of native/bench on this machine's
NVIDIA sm_90 GPU, with the toolchain the library's build finds: the shared
part of scripts/gemm_sm90_bench.py and scripts/graph_launch_bench.py."""
from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from lc0_rocm.backends import native_build  # noqa: E402


def build_and_run(name: str, args: list[str], with_blas: bool = False) -> int:
    """Compiles native/bench/<name>.cu (with the library's headers and,
    if with_blas, cuBLAS) and runs it with `args`; its exit status, or 2
    where there is no sm_90 GPU, 1 where the compile fails."""
    return _build_and_run(name, args, with_blas, capture=False)[0]


def build_and_read(name: str, args: list[str], with_blas: bool = False) -> tuple[int, str]:
    """build_and_run, with the program's standard output returned instead of
    printed: (status, output); the output is empty where it did not run."""
    return _build_and_run(name, args, with_blas, capture=True)


def _build_and_run(name: str, args: list[str], with_blas: bool, capture: bool) -> tuple[int, str]:
    try:
        tc, arch = native_build.detect_target("nvidia")
    except native_build.NativeError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2, ""
    if arch != "sm_90":  # wgmma, cluster and dependent launches; the figures are H100s'
        print(f"{name}: needs an sm_90 GPU (this one is {arch})", file=sys.stderr)
        return 2, ""
    src = native_build.source_dir()
    with tempfile.TemporaryDirectory() as tmp:
        program = pathlib.Path(tmp) / name
        command = [tc.compiler, "-x", "cu", *native_build.nvidia_arch_flags(arch), native_build.CXX_STD, "-O3",
                   f"-I{src / 'src'}", f"-I{src / 'include'}", str(src / "bench" / f"{name}.cu"),
                   "-o", str(program)]
        if with_blas:
            command += [*[f"-I{d}" for d in tc.include_dirs], *[f"-L{d}" for d in tc.library_dirs],
                        *[f"-Xlinker=-rpath,{d}" for d in tc.library_dirs], *tc.libraries]
        built = subprocess.run(command, env=tc.run_env(), capture_output=True, text=True)
        if built.returncode != 0:
            print(f"{name}: compile failed:\n{built.stderr}", file=sys.stderr)
            return 1, ""
        # Captured: standard output only; the program's errors still reach the terminal.
        ran = subprocess.run([str(program), *args], **({"stdout": subprocess.PIPE, "text": True} if capture else {}))
        return ran.returncode, (ran.stdout or "") if capture else ""


def main(name: str, doc: str, options: tuple[tuple[str, int, str], ...], argv: list[str] | None = None,
         with_blas: bool = False) -> int:
    """A bench script's command line: `options` are (flag, default, help) of
    positive counts, passed to the program in that order; then
    build_and_run. `doc`: the script's docstring (its first paragraph is
    the description)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    for flag, default, text in options:
        ap.add_argument(flag, type=int, default=default, help=f"{text}; default {default}")
    values = [getattr(ap.parse_args(argv), flag[2:]) for flag, _, _ in options]
    if min(values) < 1:
        ap.error(" and ".join(flag for flag, _, _ in options) + " must be positive")
    return build_and_run(name, [str(v) for v in values], with_blas=with_blas)
