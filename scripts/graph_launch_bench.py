#!/usr/bin/env python3
"""The host time of launching a captured CUDA graph, by the kinds of node a
forward pass's graph holds (plain kernels, large parameters, memsets,
cluster, cooperative and dependent launches, shared-memory sizes in turns),
measured without a profiler: a profiler's trace inflates it.

    python3 scripts/graph_launch_bench.py --nodes 200

Compiles native/bench/graph_launch_bench.cu with the toolchain the
library's build finds, then runs it. BENCHMARKS.md ("The graph
launch") has figures. NVIDIA sm_90 (H100, H200) only.
"""
from __future__ import annotations

import argparse
import sys

from bench_program import build_and_run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=200, help="kernels (or memsets) a graph; default 200")
    ap.add_argument("--reps", type=int, default=50, help="timed launches a graph; default 50")
    args = ap.parse_args(argv)
    if args.nodes < 1 or args.reps < 1:
        ap.error("--nodes and --reps must be positive")
    return build_and_run("graph_launch_bench", [str(args.nodes), str(args.reps)])


if __name__ == "__main__":
    sys.exit(main())
