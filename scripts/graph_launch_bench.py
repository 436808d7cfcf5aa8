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
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from lc0_rocm.backends import native  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=200, help="kernels (or memsets) a graph; default 200")
    ap.add_argument("--reps", type=int, default=50, help="timed launches a graph; default 50")
    args = ap.parse_args(argv)
    if args.nodes < 1 or args.reps < 1:
        ap.error("--nodes and --reps must be positive")
    try:
        tc, arch = native.detect_target("nvidia")
    except native.NativeError as e:
        print(f"graph_launch_bench: {e}", file=sys.stderr)
        return 2
    if arch != "sm_90":  # cluster and dependent launches need sm_90; the figures are an H100's
        print(f"graph_launch_bench: needs an sm_90 GPU (this one is {arch})", file=sys.stderr)
        return 2
    src = native.source_dir()
    with tempfile.TemporaryDirectory() as tmp:
        program = pathlib.Path(tmp) / "graph_launch_bench"
        compile_cmd = [tc.compiler, "-x", "cu", *native.nvidia_arch_flags(arch), native.CXX_STD, "-O2",
                       str(src / "bench" / "graph_launch_bench.cu"), "-o", str(program)]
        built = subprocess.run(compile_cmd, env=tc.run_env(), capture_output=True, text=True)
        if built.returncode != 0:
            print(f"graph_launch_bench: compile failed:\n{built.stderr}", file=sys.stderr)
            return 1
        return subprocess.run([str(program), str(args.nodes), str(args.reps)]).returncode


if __name__ == "__main__":
    sys.exit(main())
