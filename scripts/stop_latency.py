#!/usr/bin/env python
"""How soon `stop` is answered: a real engine process searching `go
infinite` gets `stop` after a random wait, and the time from writing `stop`
to reading `bestmove` is taken at the pipe (a reader thread stamps each
line as it arrives), as a GUI sees it.

    python3 scripts/stop_latency.py --weights nets/t82.pb.gz --backend cuda-fp16 --tries 30

Positions: lc0's benchmark positions in turn (`go infinite` from each, so the
search is in full flight: batches at the network, others being gathered).
Prints each try and the median, 90th percentile and maximum in ms; with
--json, writes them. --lc0 CMD times any UCI command line the same way.
Exit status 0 when every `stop` got a legal bestmove.
"""
from __future__ import annotations

import argparse
import json
import random
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import chess

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lc0_rocm.bench import POSITIONS, board_for  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))   # uci_pipe beside this script
from uci_pipe import UciPipe  # noqa: E402


def measure(command: list[str], options: dict, tries: int, seed: int, wait: tuple[float, float]) -> list[dict]:
    rng = random.Random(seed)
    engine = UciPipe(command, timeout=30, stderr=subprocess.DEVNULL)
    try:
        engine.send("uci")
        engine.until("uciok", timeout=60)
        for name, value in options.items():
            engine.send(f"setoption name {name} value {value}")
        engine.send("isready")
        engine.until("readyok", timeout=300)
        results = []
        for i in range(tries):
            fen = POSITIONS[i % len(POSITIONS)]
            engine.send(f"position fen {fen}")
            engine.send("go infinite")
            time.sleep(rng.uniform(*wait))
            sent = engine.send("stop")
            move = engine.until("bestmove")[-1].split()[1]
            legal = chess.Move.from_uci(move) in board_for(fen).legal_moves
            results.append({"try": i + 1, "ms": round((engine.stamp - sent) * 1000, 2), "bestmove": move,
                            "legal": legal})
            print(json.dumps(results[-1]), flush=True)
            engine.send("isready")
            engine.until("readyok")
        return results
    finally:
        engine.quit()


def summary(results: list[dict]) -> dict:
    ms = sorted(r["ms"] for r in results)
    return {"tries": len(ms), "median_ms": round(statistics.median(ms), 2),
            "p90_ms": ms[min(len(ms) - 1, int(0.9 * len(ms)))], "max_ms": ms[-1],
            "all_legal": all(r["legal"] for r in results)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", help="network file (none for the random backend)")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="Threads (0: the engine's default)")
    ap.add_argument("--tries", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--wait", type=float, nargs=2, default=(0.3, 1.5), metavar=("MIN", "MAX"),
                    help="seconds of search before `stop`, drawn per try")
    ap.add_argument("--lc0", help="also time this UCI command line (e.g. the lc0 binary with its flags)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    ours = [sys.executable, "-m", "lc0_rocm"]
    options = {"Backend": args.backend, "Threads": args.threads}
    if args.weights:
        options["WeightsFile"] = args.weights
    report = {"command": " ".join(sys.argv), "ours": summary(measure(ours, options, args.tries, args.seed,
                                                                       tuple(args.wait)))}
    print("ours", json.dumps(report["ours"]), flush=True)
    if args.lc0:
        theirs = measure(shlex.split(args.lc0), {"WeightsFile": args.weights} if args.weights else {},
                         args.tries, args.seed,
                         tuple(args.wait))
        report["lc0"] = summary(theirs)
        print("lc0", json.dumps(report["lc0"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0 if all(r["all_legal"] for k, r in report.items() if k != "command") else 1


if __name__ == "__main__":
    sys.exit(main())
