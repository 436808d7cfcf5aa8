"""Clock games: lc0-rocm against lc0 through python-chess clocks (issue 69).

    python3 scripts/clock_match.py --tc 0.3+0 --tc 1+0.01 --tc 3+0 --games 20 \
        --ponder off --ponder on [--weights PATH] [--lc0 lc0] [--json out.json]

Each game pits our engine (`python -m lc0_rocm`, --backend, default cpu)
against lc0 (`lc0 --backend=eigen` by default, the oracle's v0.32.1 binary),
both with the same net (maia-1900 where the tests find it), colours
alternating, openings of 2-5 random plies (seeded per game, the same for
both colours of a pair). The referee is python-chess: each `play` is timed
on the wall clock and taken off the mover's clock, the increment added
after; a move that comes after its side's clock ran out is a forfeit and
ends the game. With --ponder on both engines ponder (python-chess sends
`go ponder` and `ponderhit` or `stop`). Games longer than --max-plies are
adjudicated drawn.

Reported per engine and setting: forfeits, games, moves, median and 95th
percentile time per move, and the median and worst time per move once fewer
than 200 ms were left on the mover's clock (the move cycle's own cost).
Exit status 1 when our engine forfeited more games than lc0 in any setting.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import random
import statistics
import subprocess
import sys
import time

import chess
import chess.engine

ROOT = pathlib.Path(__file__).resolve().parent.parent
LOW_CLOCK_S = 0.2


@dataclasses.dataclass
class Side:
    name: str
    forfeits: int = 0
    games: int = 0
    times: list = dataclasses.field(default_factory=list)       # seconds per move
    low_times: list = dataclasses.field(default_factory=list)   # ... with < LOW_CLOCK_S left

    def summary(self) -> dict:
        def q(values, frac):
            return round(sorted(values)[min(len(values) - 1, int(frac * len(values)))] * 1000, 1) if values else None
        return {"engine": self.name, "forfeits": self.forfeits, "games": self.games,
                "moves": len(self.times),
                "median_ms": round(statistics.median(self.times) * 1000, 1) if self.times else None,
                "p95_ms": q(self.times, 0.95),
                "low_clock_moves": len(self.low_times),
                "low_clock_median_ms": round(statistics.median(self.low_times) * 1000, 1) if self.low_times else None,
                "low_clock_max_ms": round(max(self.low_times) * 1000, 1) if self.low_times else None}


def parse_tc(text: str) -> tuple[float, float]:
    base, _, inc = text.partition("+")
    return float(base), float(inc or 0)


def opening(seed: int) -> list[chess.Move]:
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(rng.randint(2, 5)):
        board.push(rng.choice(list(board.legal_moves)))
    return list(board.move_stack)


def play_game(engines: dict, white: str, tc: tuple[float, float], ponder: bool, moves0,
              max_plies: int, sides: dict, game_id) -> str:
    """One game; returns its result ("1-0", "0-1", "1/2-1/2", or "forfeit <name>")."""
    base, inc = tc
    board = chess.Board()
    for move in moves0:
        board.push(move)
    names = {chess.WHITE: white, chess.BLACK: next(n for n in engines if n != white)}
    clocks = {chess.WHITE: base, chess.BLACK: base}
    while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
        mover = board.turn
        name = names[mover]
        limit = chess.engine.Limit(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                                   white_inc=inc, black_inc=inc)
        left = clocks[mover]
        start = time.monotonic()
        result = engines[name].play(board, limit, ponder=ponder, game=game_id)
        used = time.monotonic() - start
        sides[name].times.append(used)
        if left < LOW_CLOCK_S:
            sides[name].low_times.append(used)
        clocks[mover] = left - used
        if clocks[mover] < 0:
            sides[name].forfeits += 1
            return f"forfeit {name}"
        clocks[mover] += inc
        if result.move is None:
            break
        board.push(result.move)
    outcome = board.outcome(claim_draw=True)
    return outcome.result() if outcome else "1/2-1/2"


def run(args) -> list[dict]:
    weights = args.weights
    if weights is None:
        sys.path.insert(0, str(ROOT))
        from tests.conftest import find_maia
        weights = find_maia()
        if weights is None:
            raise SystemExit("maia-1900 not found: pass --weights (or `lc0-rocm fetch-net maia-1900`)")
    ours_cmd = [sys.executable, "-m", "lc0_rocm", f"--weights={weights}", f"--backend={args.backend}"]
    if args.log:
        ours_cmd.append(f"--logfile={args.log}")
    lc0_cmd = [args.lc0, f"--weights={weights}", "--backend=eigen"]
    rows = []
    for tc_text in args.tc:
        tc = parse_tc(tc_text)
        for ponder_text in args.ponder:
            ponder = ponder_text == "on"
            sides = {"lc0-rocm": Side("lc0-rocm"), "lc0": Side("lc0")}
            engines = {"lc0-rocm": chess.engine.SimpleEngine.popen_uci(ours_cmd, cwd=str(ROOT)),
                       "lc0": chess.engine.SimpleEngine.popen_uci(lc0_cmd, stderr=subprocess.DEVNULL)}
            results = []
            try:
                for engine in engines.values():   # the net loads before any clock runs
                    engine.play(chess.Board(), chess.engine.Limit(nodes=1))
                for game in range(args.games):
                    white = "lc0-rocm" if game % 2 == 0 else "lc0"
                    res = play_game(engines, white, tc, ponder, opening(args.seed + game // 2),
                                    args.max_plies, sides, game_id=object())
                    for side in sides.values():
                        side.games += 1
                    results.append(res)
                    if args.verbose:
                        print(f"  {tc_text} ponder {ponder_text} game {game + 1}: white {white}: {res}", flush=True)
            finally:
                for engine in engines.values():
                    engine.quit()
            for side in sides.values():
                row = {"tc": tc_text, "ponder": ponder_text, **side.summary()}
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tc", action="append", help="base+increment in seconds (repeatable; default 0.3+0, 1+0.01, 3+0)")
    parser.add_argument("--ponder", action="append", choices=["off", "on"], help="repeatable; default off and on")
    parser.add_argument("--games", type=int, default=20, help="games per setting (default 20)")
    parser.add_argument("--weights", help="net for both engines (default maia-1900)")
    parser.add_argument("--backend", default="cpu", help="our backend (default cpu)")
    parser.add_argument("--lc0", default="lc0", help="lc0 binary (default: lc0 on PATH)")
    parser.add_argument("--max-plies", type=int, default=240)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per game")
    parser.add_argument("--log", help="our engine's LogFile (every UCI line, time-stamped)")
    args = parser.parse_args(argv)
    args.tc = args.tc or ["0.3+0", "1+0.01", "3+0"]
    args.ponder = args.ponder or ["off", "on"]
    rows = run(args)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    worse = [(r["tc"], r["ponder"]) for r in rows if r["engine"] == "lc0-rocm"
             and r["forfeits"] > next(o["forfeits"] for o in rows
                                      if o["engine"] == "lc0" and (o["tc"], o["ponder"]) == (r["tc"], r["ponder"]))]
    if worse:
        print(f"lc0-rocm forfeited more games than lc0 at {worse}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
