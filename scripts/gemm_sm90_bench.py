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
import sys

from bench_program import build_and_run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=256, help="positions (64 rows each); default 256")
    ap.add_argument("--reps", type=int, default=30, help="timed runs per variant; default 30")
    args = ap.parse_args(argv)
    if args.batch < 1 or args.reps < 1:
        ap.error("--batch and --reps must be positive")
    return build_and_run("gemm_sm90_bench", [str(args.batch), str(args.reps)], with_blas=True)


if __name__ == "__main__":
    sys.exit(main())
