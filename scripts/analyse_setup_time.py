#!/usr/bin/env python
"""The part of `analyse`'s set-up that comes before the network: reading and
planning the inputs and hashing the net for the run's manifest, one after
the other and overlapped (the hash on a thread of its own, as
analysis.runner.run does), rounds alternating, in one process.

    python scripts/analyse_setup_time.py --weights t82.pb.gz --rounds 5
"""
from __future__ import annotations

import argparse
import concurrent.futures
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lc0_rocm.analysis.inputs import Selection  # noqa: E402
from lc0_rocm.analysis.plan import build_plan, default_shard_size  # noqa: E402
from lc0_rocm.analysis.settings import NetSource  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", required=True)
    p.add_argument("--input", default=str(ROOT / "scripts" / "data" / "london-1851.pgn"))
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    source = NetSource(args.weights, "random")

    def plan():
        return build_plan([args.input], None, Selection(1, False), default_shard_size("search"))

    def sequential():
        plan()
        source.identity()

    def overlapped():
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            identity = pool.submit(source.identity)
            plan()
            identity.result()

    times: dict[str, list[float]] = {"hash": [], "plan": [], "sequential": [], "overlapped": []}
    steps = {"hash": source.identity, "plan": plan, "sequential": sequential, "overlapped": overlapped}
    for _ in range(args.rounds):
        for name, step in steps.items():
            t0 = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - t0)
    for name, values in times.items():
        print(f"{name:<11} median {statistics.median(values):.3f} s  ({', '.join(f'{v:.3f}' for v in values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
