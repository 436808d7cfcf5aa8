"""Perft speed of the native core (single thread, bulk counting at the last
ply), with python-chess's speed on a smaller depth for scale.

    python3 scripts/bench_perft.py [--repeat 3] [--no-python]

Prints one line per position: nodes, the best wall and CPU time of the
repeats, and nodes per second by each (CPU time is the fairer figure on a
shared, loaded machine).
"""
from __future__ import annotations

import argparse
import platform
import sys
import time

import chess

from lc0_rocm import native_core, native_rules

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
CASES = [  # name, FEN, depth, expected nodes (chessprogramming.org)
    ("start", None, 6, 119060324),
    ("kiwipete", KIWIPETE, 5, 193690690),
    ("position 3", "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 7, 178633661),
]


def best_time(fn, repeat: int) -> tuple[float, float, int]:
    """(best wall seconds, best CPU seconds, fn's result)."""
    wall, cpu, result = float("inf"), float("inf"), 0
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.thread_time()
        result = fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.thread_time() - start_cpu)
    return wall, cpu, result


def line(kind: str, name: str, depth: int, nodes: int, wall: float, cpu: float) -> str:
    return (f"{kind:7s} {name:10s} depth {depth}: {nodes:>11d} nodes  wall {wall:7.3f} s "
            f"{nodes / wall / 1e6:8.2f} M/s  cpu {cpu:7.3f} s {nodes / cpu / 1e6:8.2f} M/s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-python", action="store_true", help="skip python-chess")
    args = parser.parse_args()
    start = time.perf_counter()
    native_core.load()
    print(f"# core loaded (built if needed) in {time.perf_counter() - start:.2f} s: {native_core.build()}")
    print(f"# {platform.machine()} {native_core._cpu_name()}, python {platform.python_version()}")
    ok = True
    for name, fen, depth, expected in CASES:
        wall, cpu, nodes = best_time(lambda: native_rules.perft(fen, depth), args.repeat)
        ok &= nodes == expected
        print(line("native", name, depth, nodes, wall, cpu) + ("" if nodes == expected else f"  WRONG, expected {expected}"))
    if not args.no_python:
        for name, fen, depth in (("start", None, 4), ("kiwipete", KIWIPETE, 3)):
            board = chess.Board(fen) if fen else chess.Board()
            wall, cpu, nodes = best_time(lambda: native_rules.python_perft(board, depth), 1)
            print(line("python", name, depth, nodes, wall, cpu) + "  (python-chess, same bulk counting)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
