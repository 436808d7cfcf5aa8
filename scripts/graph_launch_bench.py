#!/usr/bin/env python3
"""The host time of launching a captured CUDA graph, by the kinds of node a
forward pass's graph holds (plain kernels, large parameters, memsets,
cluster, cooperative and dependent launches, shared-memory sizes in turns),
measured without a profiler: a profiler's trace inflates it.

    python3 scripts/graph_launch_bench.py --nodes 200

Compiles native/bench/graph_launch_bench.cu with the toolchain the
library's build finds, then runs it. docs/history/benchmarks-2026-11.md
("The graph launch") has figures. NVIDIA sm_90 (H100, H200) only.
"""
from __future__ import annotations

import sys

import bench_program

OPTIONS = (("--nodes", 200, "kernels (or memsets) a graph"), ("--reps", 50, "timed launches a graph"))


def main(argv: list[str] | None = None) -> int:
    return bench_program.main("graph_launch_bench", __doc__, OPTIONS, argv)


if __name__ == "__main__":
    sys.exit(main())
