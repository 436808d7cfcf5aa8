#!/usr/bin/env python
"""The Python time `analyse` spends reading each finished search's result
(ManySearch._collect: the native results, the Engine's result code, the
row of columns), per job, on the random backend with tiny searches so the
reading is what the clock sees; the best of --rounds runs of --rows
positions of the London 1851 games.

    python scripts/analyse_collect_time.py --rows 4000 --nodes 2 --rounds 4

One thread reads results for a process's searches (the GIL), so at N
positions/s this costs N x the figure of one core.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import chess.pgn  # noqa: E402

from lc0_rocm.analysis import many  # noqa: E402
from lc0_rocm.network import load_network  # noqa: E402


def game_rows(path: pathlib.Path, count: int) -> list[str]:
    """Every position of the games in order, as analysis rows (FEN moves ...)."""
    rows: list[str] = []
    with open(path) as f:
        while len(rows) < count:
            game = chess.pgn.read_game(f)
            if game is None:
                break
            start, moves = game.board().fen(), []
            for move in game.mainline_moves():
                moves.append(move.uci())
                rows.append(f"{start} moves {' '.join(moves)}")
    return rows[:count]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pgn", default=str(ROOT / "scripts" / "data" / "london-1851.pgn"))
    p.add_argument("--rows", type=int, default=4000)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--searches", type=int, default=8)
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args(argv)
    rows = game_rows(pathlib.Path(args.pgn), args.rows)
    engine = many.searcher(load_network(None, backend="random"), {}, searches=args.searches, nodes=args.nodes)
    spent = [0.0]
    collect = many.ManySearch._collect

    def timed(self, *a, **k):
        started = time.perf_counter()
        try:
            return collect(self, *a, **k)
        finally:
            spent[0] += time.perf_counter() - started

    many.ManySearch._collect = timed
    try:
        engine.run(rows[:200], nodes=args.nodes)          # warm: the core built, the buffers made
        per_job = []
        for _ in range(args.rounds):
            spent[0] = 0.0
            engine.run(rows, nodes=args.nodes)
            per_job.append(1e6 * spent[0] / len(rows))
    finally:
        many.ManySearch._collect = collect
        engine.close()
    print(f"reading results: {min(per_job):.1f} us a job (best of {args.rounds}; "
          f"{', '.join(f'{v:.1f}' for v in per_job)}), {len(rows)} rows at {args.nodes} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
