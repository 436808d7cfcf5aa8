#!/usr/bin/env python3
"""The library's own Hopper product (native/src/kernels/gemm_sm90.hip) against
cuBLAS, one encoder product of t82 and bt4 at a time, outside the forward
pass: float sums (its cooperative schedule) and half sums (its wide
ping-pong schedule), plain and with the FFN's bias and activation in the
epilogue.

    python3 scripts/gemm_sm90_bench.py --batch 256

Compiles native/bench/gemm_sm90_bench.cu (which takes gemm_sm90's source in)
with the toolchain the library's build finds, then runs it: per product and
variant, microseconds, TFLOP/s and the relative difference from cuBLAS's
output. NVIDIA sm_90 (H100, H200) only; native/docs/GEMM_SM90.md has figures.
"""
from __future__ import annotations

import sys

import bench_program

OPTIONS = (("--batch", 256, "positions (64 rows each)"), ("--reps", 30, "timed runs per variant"))


def main(argv: list[str] | None = None) -> int:
    return bench_program.main("gemm_sm90_bench", __doc__, OPTIONS, argv, with_blas=True)


if __name__ == "__main__":
    sys.exit(main())
