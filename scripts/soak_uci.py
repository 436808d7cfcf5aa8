"""UCI self-play soak: many games through one real engine process.

    python3 scripts/soak_uci.py --games 200 --nodes 8-16 --weights nets/maia-1900.pb.gz

One `python -m lc0_rocm` process plays every game against itself (`ucinewgame`,
`position startpos moves ...`, `go nodes N` with N drawn from --nodes), as a
GUI does. Every `go` must get exactly one `bestmove` (within --timeout
seconds), every move must be legal, every `isready` a `readyok`. The
engine's resident memory (VmRSS) is printed every --every games, so a leak
shows as a growing column. Exit status 0 when nothing failed.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

import chess

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # uci_pipe beside this script
from uci_pipe import UciPipe  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--nodes", default="8-16", help="nodes per move, N or LO-HI (drawn per move)")
    parser.add_argument("--weights", help="network file (default: the engine's own discovery)")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--max-plies", type=int, default=300, help="adjudicate a draw after this many plies")
    parser.add_argument("--every", type=int, default=10, help="print RSS every this many games")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for any answer")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    lo, _, hi = args.nodes.partition("-")
    lo, hi = int(lo), int(hi or lo)
    rng = random.Random(args.seed)

    eng = UciPipe([sys.executable, "-m", "lc0_rocm"], args.timeout)
    failures = []
    start = time.monotonic()
    gos = plies_total = 0
    results = {"1-0": 0, "0-1": 0, "1/2-1/2": 0, "*": 0}
    try:
        eng.send("uci")
        eng.until("uciok")
        if args.weights:
            eng.send(f"setoption name WeightsFile value {args.weights}")
        eng.send(f"setoption name Backend value {args.backend}")
        eng.send("isready")
        errors = [l for l in eng.until("readyok") if l.startswith("info string error")]
        if errors:
            raise RuntimeError(f"the engine cannot play: {errors}")
        print(f"{'games':>6} {'plies':>7} {'gos':>7} {'rss_mib':>8} {'elapsed_s':>9}", flush=True)
        print(f"{0:6d} {0:7d} {0:7d} {eng.rss_mib():8.1f} {0:9.1f}", flush=True)
        for game in range(1, args.games + 1):
            board = chess.Board()
            eng.send("ucinewgame")
            eng.send("isready")
            eng.until("readyok")
            while not board.is_game_over(claim_draw=True) and board.ply() < args.max_plies:
                moves = " ".join(m.uci() for m in board.move_stack)
                eng.send("position startpos" + (f" moves {moves}" if moves else ""))
                eng.send(f"go nodes {rng.randint(lo, hi)}")
                gos += 1
                lines = eng.until("bestmove")
                errors = [l for l in lines if l.startswith("info string error")]
                if errors:
                    failures.append(f"game {game} ply {board.ply()}: {errors}")
                text = lines[-1].split()[1]
                try:
                    move = chess.Move.from_uci(text)
                except ValueError:
                    move = None
                if move is None or move not in board.legal_moves:
                    failures.append(f"game {game} ply {board.ply()}: illegal bestmove {text} in {board.fen()}")
                    break
                board.push(move)
            # a second bestmove for one go would show up before the next readyok
            eng.send("isready")
            extra = [l for l in eng.until("readyok") if l.startswith("bestmove")]
            if extra:
                failures.append(f"game {game}: extra bestmove lines {extra}")
            plies_total += board.ply()
            results[board.result(claim_draw=True) if board.is_game_over(claim_draw=True) else "*"] += 1
            if game % args.every == 0 or game == args.games:
                print(f"{game:6d} {plies_total:7d} {gos:7d} {eng.rss_mib():8.1f} "
                      f"{time.monotonic() - start:9.1f}", flush=True)
    except RuntimeError as e:
        failures.append(str(e))
    finally:
        eng.quit()
    print(f"results {results} (* = adjudicated at {args.max_plies} plies); "
          f"{gos} go, {len(failures)} failures", flush=True)
    for failure in failures[:20]:
        print("FAIL", failure, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
