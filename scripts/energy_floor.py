#!/usr/bin/env python3
"""What an attention net's encoder products alone cost in energy on this GPU:
the board's idle draw, the products of one pass (Q|K|V with smolgen's
compress, output, FFN first and second, smolgen's dense1, dense2 and
generator; cuBLAS, half in and out, float accumulation) replayed for a few
seconds, the same products with half accumulation (as lc0's cuda backend
computes its fp16 products), device-to-device copies (joules a byte), and
an 8192^3 product: the GPU's fp16 matrix rate as a short burst from rest
and held at the cap (scripts/gpu_bench.py turns the burst rate into issue
9's compute ceilings).

    python3 scripts/energy_floor.py --net t82 --batch 512 --seconds 3

From batch ~64 the H100 runs at its power cap, where a pass's speed is its
energy (docs/history/benchmarks-2026-11.md, "The GPU at its power cap"). The products are work no
kernel change removes: the positions a second they reach alone, at the cap,
bound the whole pass's. Compiles native/bench/energy_floor_bench.cu with the
toolchain the library's build finds, then runs it; NVML's energy counter
from the driver's libnvidia-ml. NVIDIA sm_90 (H100, H200) only.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import bench_program

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from lc0_rocm.makenet.attention import BT4, T82  # noqa: E402

NETS = {"t82": T82, "bt4": BT4}


def program_args(net: str, batch: int, seconds: int) -> list[str]:
    """energy_floor_bench's arguments: the net's shape, then batch and seconds."""
    shape = NETS[net]
    hidden, dense1, gen = shape.smolgen
    return [str(v) for v in (shape.embedding, shape.heads, shape.dff, shape.layers, hidden, dense1, gen, batch,
                             seconds)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--net", choices=sorted(NETS), default="t82", help="the make-net preset's shapes; default t82")
    ap.add_argument("--batch", type=int, default=512, help="positions (64 rows each); default 512")
    ap.add_argument("--seconds", type=int, default=3, help="timed seconds a phase; default 3")
    args = ap.parse_args(argv)
    if args.batch < 1 or args.seconds < 1:
        ap.error("--batch and --seconds must be positive")
    return bench_program.build_and_run("energy_floor_bench", program_args(args.net, args.batch, args.seconds),
                                       with_blas=True)


if __name__ == "__main__":
    sys.exit(main())
