#!/usr/bin/env python3
"""The native search's threads under ThreadSanitizer: builds the core with
-fsanitize=thread into a build cache of its own, then searches in a child
process that preloads the sanitizer's runtime (Python itself is not
instrumented; the core's threads and locks are): several search threads
picking at once on the `sim` backend's native slots, trees reused over a
game where two-fold draws must be undone, mating positions with children
made solid after 3 visits (what backups leave for an exclusive hold),
each tree checked at rest.
Exits non-zero when the sanitizer reports anything or a tree is unsound.

    python3 scripts/tsan_search.py [--threads 4] [--nodes 3000]
"""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Run in the child: the searches themselves.
CHILD = r"""
import sys
import chess
from lc0_rocm.engine import Engine
from lc0_rocm.network import load_network

threads, nodes = int(sys.argv[1]), int(sys.argv[2])
net = load_network(None, backend="sim", backend_opts="preset=maia-1900,pass_us=20,position_us=0.1")
# Every thread gathers from the first visit (ParallelSearchMinimumVisits 0).
threaded = dict(Threads=threads, MaxBatchesInFlight=threads, TaskWorkers=2, MinibatchSize=32, SmartPruningFactor=0)
engine = Engine(net, ParallelSearchMinimumVisits=0, **threaded)
deferred = 0
games = (("k7/8/p7/P7/8/8/8/K7 w - - 0 1", ["a1b1", "a8b8", "b1a1", "b8a8"]),   # kings shuffling
         (chess.STARTING_FEN, ["e2e4", "e7e5", "g1f3"]))
for fen, moves in games:
    board = chess.Board(fen)
    for uci in moves:                      # each search reuses the last one's tree
        engine.search(board, nodes=nodes)
        fault = engine._native.tree_fault()
        if fault:
            sys.exit(f"unsound tree after {board.fen()}: {fault}")
        deferred += engine._native.run_stats()["deferred_fixes"]
        board.push_uci(uci)
# Backups beside the pickers leave first visits to terminals and nodes to
# make solid for an exclusive hold at their end: mating positions, children
# made solid after 3 visits.
solid = Engine(net, ParallelSearchMinimumVisits=0, SolidTreeThreshold=3, **threaded)
for fen in ("6k1/8/6K1/8/8/8/8/5Q2 w - - 0 1", "8/8/4k3/8/2R5/8/4K3/8 w - - 0 1"):
    solid.search(chess.Board(fen), nodes=nodes)
    fault = solid._native.tree_fault()
    if fault:
        sys.exit(f"unsound tree after {fen} (solid after 3 visits): {fault}")
# A node limit the threads share out near its end (StrictNodes).
strict = Engine(net, ParallelSearchMinimumVisits=0, StrictNodes=True, **threaded)
if strict.search(chess.Board(), nodes=nodes).nodes > nodes + 2 * threads:
    sys.exit("StrictNodes passed its node limit by more than two visits a thread")
# One thread gathers until the root has nodes / 2 visits, then all of them.
ramp = Engine(net, ParallelSearchMinimumVisits=nodes // 2, **threaded)
ramp.search(chess.Board(), nodes=nodes)
fault = ramp._native.tree_fault()
if fault:
    sys.exit(f"unsound tree with the other threads joining midway: {fault}")
print(f"searched; two-fold draws undone after a shared pick: {deferred}")
"""


def sanitizer_runtime(compiler: str) -> str | None:
    """The path of libtsan.so for `compiler`, or None."""
    try:
        out = subprocess.run([compiler, "-print-file-name=libtsan.so"], capture_output=True, text=True,
                             timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out if out and os.path.isabs(out) and os.path.exists(out) else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--build-cache", help="where the sanitized core is built (default: a temporary folder)")
    args = ap.parse_args(argv)

    compiler = os.environ.get("TSAN_CXX", "g++")
    runtime = sanitizer_runtime(compiler)
    if runtime is None:
        print(f"tsan_search: {compiler} has no ThreadSanitizer runtime (libtsan.so)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="lc0rocm-tsan-") as tmp:
        env = dict(os.environ, CXX=f"{compiler} -fsanitize=thread -g -O1",
                   LC0ROCM_BUILD_CACHE=args.build_cache or tmp,
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        built = subprocess.run([sys.executable, "-c", "from lc0_rocm import native_core; print(native_core.build())"],
                               env=env, capture_output=True, text=True)
        if built.returncode != 0:
            print(f"tsan_search: building the sanitized core failed:\n{built.stderr[-3000:]}", file=sys.stderr)
            return 2
        env.update(LD_PRELOAD=runtime, TSAN_OPTIONS="report_signal_unsafe=0 exitcode=66")
        run = subprocess.run([sys.executable, "-c", CHILD, str(args.threads), str(args.nodes)], env=env,
                             capture_output=True, text=True)
    reports = run.stderr.count("WARNING: ThreadSanitizer")
    print(run.stdout.strip())
    if reports or run.returncode != 0:
        print(run.stderr[-6000:], file=sys.stderr)
        summaries = collections.Counter(line for line in run.stderr.splitlines() if line.startswith("SUMMARY:"))
        for line, count in summaries.most_common():
            print(f"{count} x {line}", file=sys.stderr)
        print(f"tsan_search: {reports} sanitizer report(s), exit code {run.returncode}", file=sys.stderr)
        return 1
    print("tsan_search: no sanitizer report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
