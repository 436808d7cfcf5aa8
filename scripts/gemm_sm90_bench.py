#!/usr/bin/env python3
"""The library's own Hopper product (native/src/kernels/gemm_sm90.hip) against
cuBLAS, one encoder product of t82 and bt4 at a time, outside the forward
pass: its cooperative and ping-pong schedules, alone or in pairs, plain and
with the FFN's bias and activation in the epilogue.

    python3 scripts/gemm_sm90_bench.py --batch 256

Compiles native/bench/gemm_sm90_bench.cu (which takes gemm_sm90's source in)
with the toolchain the library's build finds, then runs it: per product and
variant, microseconds, TFLOP/s and the relative difference from cuBLAS's
output. NVIDIA sm_90 (H100, H200) only; native/GEMM_SM90.md has figures.
"""
from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from lc0_rocm.backends import native  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=256, help="positions (64 rows each); default 256")
    ap.add_argument("--reps", type=int, default=30, help="timed runs per variant; default 30")
    args = ap.parse_args(argv)
    try:
        tc, arch = native.detect_target("nvidia")
    except native.NativeError as e:
        print(f"gemm_sm90_bench: {e}", file=sys.stderr)
        return 2
    if arch != "sm_90":
        print(f"gemm_sm90_bench: needs an sm_90 GPU (this one is {arch})", file=sys.stderr)
        return 2
    src = native.source_dir()
    with tempfile.TemporaryDirectory() as tmp:
        program = pathlib.Path(tmp) / "gemm_sm90_bench"
        compile_cmd = [tc.compiler, "-x", "cu", *native.nvidia_arch_flags(arch), native.CXX_STD, "-O3",
                       f"-I{src / 'src'}", f"-I{src / 'include'}", *[f"-I{d}" for d in tc.include_dirs],
                       str(src / "bench" / "gemm_sm90_bench.cu"), "-o", str(program),
                       *[f"-L{d}" for d in tc.library_dirs], *[f"-Xlinker=-rpath,{d}" for d in tc.library_dirs],
                       *tc.libraries]
        built = subprocess.run(compile_cmd, env=tc.run_env(), capture_output=True, text=True)
        if built.returncode != 0:
            print(f"gemm_sm90_bench: compile failed:\n{built.stderr}", file=sys.stderr)
            return 1
        return subprocess.run([str(program), str(args.batch), str(args.reps)]).returncode


if __name__ == "__main__":
    sys.exit(main())
