#!/usr/bin/env python3
"""Tree quality at equal nodes: games between two settings of our search.

    python3 scripts/search_quality_match.py -w nets/maia-1900.pb.gz -b cuda-fp16 \\
        --games 400 --nodes 800 --a "" --b "Threads=1" --parallel 4 --out DIR

Setting A (default: the engine's defaults, multi-threaded on a GPU) plays
setting B (default: `Threads 1`, which grows the reference search's trees)
at `go nodes N` for both. Openings: `--games / 2` seeded random openings of
`--opening-plies` plies (python-chess, captures and checks a little
preferred), each played twice with colours swapped. A game ends by
python-chess's rules (mate, stalemate, insufficient material, threefold
repetition and the 50-move rule claimed) or as a draw after `--max-plies`.
`--parallel P` runs P games at once (each with its own two engines on the
one network). Prints A's score, its Elo difference and the 95 % interval
(normal approximation over games) and how many openings' two games are
move for move the same (A played as B would have: the searches did not
differ there), and writes DIR/quality_match.json (with the device's name).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import pathlib
import random
import sys
import threading
import time

import chess

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def settings(text: str) -> dict:
    """'NAME=V,NAME2=V2' -> {NAME: V, ...} (values as the engine validates them)."""
    out = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, _, value = item.partition("=")
        out[name.strip()] = value.strip()
    return out


def openings(count: int, plies: int, seed: int) -> list[list[chess.Move]]:
    """`count` distinct seeded random openings of `plies` plies, none ending the game."""
    rng = random.Random(seed)
    found: list[list[chess.Move]] = []
    seen: set[str] = set()
    while len(found) < count:
        board = chess.Board()
        for _ in range(plies):
            moves = list(board.legal_moves)
            weights = [1.0 + 2.0 * board.is_capture(m) + board.gives_check(m) for m in moves]
            board.push(rng.choices(moves, weights)[0])
            if board.is_game_over():
                break
        key = board.fen()
        if board.is_game_over() or key in seen:
            continue
        seen.add(key)
        found.append(list(board.move_stack))
    return found


_LOCAL = threading.local()


def engine_pair(network, a: dict, b: dict):
    """This thread's engines for settings A and B, made once: a GPU backend
    keeps the streams an engine takes for as long as it lives."""
    if not hasattr(_LOCAL, "pair"):
        from lc0_rocm.engine import Engine
        _LOCAL.pair = (Engine(network, **a), Engine(network, **b))
    return _LOCAL.pair


def play(engines: dict, opening, nodes: int, max_plies: int) -> tuple[str, list[str]]:
    """One game between engines {colour: Engine}; returns (result from
    white's view: '1-0', '0-1', '1/2-1/2', the game's moves in UCI)."""
    for engine in engines.values():
        engine.new_game()
    board = chess.Board()
    for move in opening:
        board.push(move)
    while not board.is_game_over(claim_draw=True) and len(board.move_stack) < max_plies:
        result = engines[board.turn].search(board, nodes=nodes)
        if result.best_move is None:
            break
        board.push(result.best_move)
    outcome = board.outcome(claim_draw=True)
    return (outcome.result() if outcome else "1/2-1/2"), [m.uci() for m in board.move_stack]


def elo(score: float) -> float:
    score = min(max(score, 1e-6), 1 - 1e-6)
    return -400.0 * math.log10(1.0 / score - 1.0)


def summary(points: list[float]) -> dict:
    """A's score, Elo and its 95 % interval from per-game points (1, 0.5, 0)."""
    n = len(points)
    mean = sum(points) / n
    var = sum((p - mean) ** 2 for p in points) / max(1, n - 1)
    half = 1.96 * math.sqrt(var / n)
    return {"games": n, "wins": points.count(1.0), "draws": points.count(0.5), "losses": points.count(0.0),
            "score": mean, "elo": elo(mean), "elo_low": elo(mean - half), "elo_high": elo(mean + half)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-w", "--weights", required=True)
    parser.add_argument("-b", "--backend", default="auto")
    parser.add_argument("-o", "--backend-opts", default="")
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--nodes", type=int, default=800)
    parser.add_argument("--a", default="", help="setting A: NAME=V,... (default: the engine's defaults)")
    parser.add_argument("--b", default="Threads=1", help="setting B (default Threads=1)")
    parser.add_argument("--opening-plies", type=int, default=6)
    parser.add_argument("--max-plies", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--deadline", type=float, default=0,
                        help="seconds: start no game after this and report the games played (0: none)")
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    if args.games < 2 or args.games % 2:
        parser.error("--games must be even (each opening is played with both colours)")

    from lc0_rocm.network import load_network
    network = load_network(args.weights, backend=args.backend, backend_opts=args.backend_opts or None)
    a, b = settings(args.a), settings(args.b)
    jobs = []
    for k, opening in enumerate(openings(args.games // 2, args.opening_plies, args.seed)):
        jobs.append((2 * k, opening, True))       # A has white
        jobs.append((2 * k + 1, opening, False))  # A has black
    points: dict[int, float] = {}
    games: dict[int, list[str]] = {}
    lock = threading.Lock()
    started = time.monotonic()

    def run(job):
        index, opening, a_white = job
        if args.deadline and time.monotonic() - started > args.deadline:
            return
        engine_a, engine_b = engine_pair(network, a, b)
        engines = {chess.WHITE: engine_a if a_white else engine_b, chess.BLACK: engine_b if a_white else engine_a}
        result, moves = play(engines, opening, args.nodes, args.max_plies)
        white_points = {"1-0": 1.0, "0-1": 0.0}.get(result, 0.5)
        with lock:
            points[index] = white_points if a_white else 1.0 - white_points
            games[index] = moves
            done = len(points)
            if done % 20 == 0 or done == len(jobs):
                s = summary(list(points.values()))
                print(f"{done}/{len(jobs)} games, A scores {s['score']:.3f} ({s['elo']:+.0f} Elo, "
                      f"95 % {s['elo_low']:+.0f}..{s['elo_high']:+.0f}), {time.monotonic() - started:.0f} s",
                      flush=True)

    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.parallel)) as pool:
            for future in [pool.submit(run, job) for job in jobs]:
                future.result()
        device = (getattr(network.backend, "device_info", None) or {}).get("name", "")
    finally:
        network.close()
    # An opening whose two games are move for move the same: A played as B
    # would have (both colours), which says how far the settings' searches differ.
    same = sum(1 for k in range(len(jobs) // 2) if 2 * k in games and games.get(2 * k) == games.get(2 * k + 1))
    result = dict(summary([points[i] for i in sorted(points)]), planned=len(jobs), nodes=args.nodes, a=a, b=b,
                  same_game_pairs=same, seed=args.seed, weights=args.weights, backend=args.backend,
                  device=device, seconds=time.monotonic() - started)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "quality_match.json").write_text(json.dumps(result, indent=1))
    print(f"A ({args.a or 'defaults'}) vs B ({args.b}) at {args.nodes} nodes: {result['wins']}W "
          f"{result['draws']}D {result['losses']}L, score {result['score']:.3f}, Elo {result['elo']:+.1f} "
          f"(95 % {result['elo_low']:+.1f}..{result['elo_high']:+.1f}); openings whose two games are the "
          f"same: {same} of {len(jobs) // 2}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
