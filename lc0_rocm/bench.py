"""`lc0-rocm bench`: search fixed positions and report nps, like `lc0 benchmark`.

Same 34 positions as lc0 v0.32.1 (src/tools/benchmark.h, Stockfish's set),
same limits: each position gets a fresh tree and stops at --movetime
milliseconds and/or --nodes visits, with no smart pruning; the total is
1000 * nodes / (total ms + 1). `main` has lc0's short `bench` defaults (10
positions, 500 ms each), `benchmark_main` the full `lc0 benchmark` ones (34
positions, 10000 ms).
"""
from __future__ import annotations

import argparse
import sys
import time

import chess

from lc0_rocm.limits import MAX_NODES

# lc0 v0.32.1 benchmark positions (a FEN, optionally followed by moves)
POSITIONS = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "rq3rk1/ppp2ppp/1bnpb3/3N2B1/3NP3/7P/PPPQ1PP1/2KR3R w - - 7 14 moves d4e6",
    "r1bq1r1k/1pp1n1pp/1p1p4/4p2Q/4Pp2/1BNP4/PPP2PPP/3R1RK1 w - - 2 14 moves g2g4",
    "r3r1k1/2p2ppp/p1p1bn2/8/1q2P3/2NPQN2/PPP3PP/R4RK1 b - - 2 15",
    "r1bbk1nr/pp3p1p/2n5/1N4p1/2Np1B2/8/PPP2PPP/2KR1B1R w kq - 0 13",
    "r1bq1rk1/ppp1nppp/4n3/3p3Q/3P4/1BP1B3/PP1N2PP/R4RK1 w - - 1 16",
    "4r1k1/r1q2ppp/ppp2n2/4P3/5Rb1/1N1BQ3/PPP3PP/R5K1 w - - 1 17",
    "2rqkb1r/ppp2p2/2npb1p1/1N1Nn2p/2P1PP2/8/PP2B1PP/R1BQK2R b KQ - 0 11",
    "r1bq1r1k/b1p1npp1/p2p3p/1p6/3PP3/1B2NN2/PP3PPP/R2Q1RK1 w - - 1 16",
    "3r1rk1/p5pp/bpp1pp2/8/q1PP1P2/b3P3/P2NQRPP/1R2B1K1 b - - 6 22",
    "r1q2rk1/2p1bppp/2Pp4/p6b/Q1PNp3/4B3/PP1R1PPP/2K4R w - - 2 18",
    "4k2r/1pb2ppp/1p2p3/1R1p4/3P4/2r1PN2/P4PPP/1R4K1 b - - 3 22",
    "3q2k1/pb3p1p/4pbp1/2r5/PpN2N2/1P2P2P/5PP1/Q2R2K1 b - - 4 26",
    "6k1/6p1/6Pp/ppp5/3pn2P/1P3K2/1PP2P2/3N4 b - - 0 1",
    "3b4/5kp1/1p1p1p1p/pP1PpP1P/P1P1P3/3KN3/8/8 w - - 0 1",
    "2K5/p7/7P/5pR1/8/5k2/r7/8 w - - 0 1 moves g5g6 f3e3 g6g5 e3f3",
    "8/6pk/1p6/8/PP3p1p/5P2/4KP1q/3Q4 w - - 0 1",
    "7k/3p2pp/4q3/8/4Q3/5Kp1/P6b/8 w - - 0 1",
    "8/2p5/8/2kPKp1p/2p4P/2P5/3P4/8 w - - 0 1",
    "8/1p3pp1/7p/5P1P/2k3P1/8/2K2P2/8 w - - 0 1",
    "8/pp2r1k1/2p1p3/3pP2p/1P1P1P1P/P5KR/8/8 w - - 0 1",
    "8/3p4/p1bk3p/Pp6/1Kp1PpPp/2P2P1P/2P5/5B2 b - - 0 1",
    "5k2/7R/4P2p/5K2/p1r2P1p/8/8/8 b - - 0 1",
    "6k1/6p1/P6p/r1N5/5p2/7P/1b3PP1/4R1K1 w - - 0 1",
    "1r3k2/4q3/2Pp3b/3Bp3/2Q2p2/1p1P2P1/1P2KP2/3N4 w - - 0 1",
    "6k1/4pp1p/3p2p1/P1pPb3/R7/1r2P1PP/3B1P2/6K1 w - - 0 1",
    "8/3p3B/5p2/5P2/p7/PP5b/k7/6K1 w - - 0 1",
    "5rk1/q6p/2p3bR/1pPp1rP1/1P1Pp3/P3B1Q1/1K3P2/R7 w - - 93 90",
    "4rrk1/1p1nq3/p7/2p1P1pp/3P2bp/3Q1Bn1/PPPB4/1K2R1NR w - - 40 21",
    "r3k2r/3nnpbp/q2pp1p1/p7/Pp1PPPP1/4BNN1/1P5P/R2Q1RK1 w kq - 0 16",
    "3Qb1k1/1r2ppb1/pN1n2q1/Pp1Pp1Pr/4P2p/4BP2/4B1R1/1R5K b - - 11 40",
]

DEFAULT_MOVETIME_MS = 500    # lc0 `bench`
DEFAULT_NUM_POSITIONS = 10
FULL_MOVETIME_MS = 10000     # lc0 `benchmark`
DEFAULT_NNCACHE = 200000     # lc0 benchmark's NNCacheSize default


def board_for(position: str) -> chess.Board:
    """A benchmark entry (`FEN [moves m1 m2 ...]`) as a board with history."""
    fen, _, moves = position.partition(" moves ")
    board = chess.Board(fen.strip())
    for move in moves.split():
        board.push_uci(move)
    return board


def parse_args(argv, *, full: bool = False):
    """Arguments; `full` gives lc0 `benchmark`'s defaults (34 positions,
    10000 ms), otherwise lc0 `bench`'s (10 positions, 500 ms)."""
    movetime = FULL_MOVETIME_MS if full else DEFAULT_MOVETIME_MS
    num_positions = len(POSITIONS) if full else DEFAULT_NUM_POSITIONS
    parser = argparse.ArgumentParser(
        prog="lc0-rocm benchmark" if full else "lc0-rocm bench",
        description="Search fixed positions and report nodes per second, like `lc0 benchmark`.")
    parser.add_argument("-w", "--weights", default=None,
                        help="network file (default: discovered like lc0: working dir, then the cache)")
    parser.add_argument("-b", "--backend", default="auto", help="backend name (default: auto)")
    parser.add_argument("-o", "--backend-opts", default="",
                        help="backend options in lc0's syntax: key=value,... and (child options) "
                             "for roundrobin, multiplexing and demux")
    parser.add_argument("-t", "--threads", type=int, default=None, help="search threads (engine's Threads)")
    parser.add_argument("--minibatch-size", type=int, default=None, help="MinibatchSize (0 = backend suggestion)")
    parser.add_argument("--nncache", type=int, default=DEFAULT_NNCACHE, help="NNCacheSize (lc0 bench: 200000)")
    parser.add_argument("--nodes", type=int, default=-1, help="visits per position (-1: no limit)")
    parser.add_argument("--movetime", type=int, default=movetime,
                        help=f"milliseconds per position (-1: no limit; default {movetime})")
    parser.add_argument("--num-positions", type=int, default=num_positions,
                        help=f"how many of the {len(POSITIONS)} positions (default {num_positions})")
    parser.add_argument("--fen", default=None, help="benchmark this one position instead")
    args = parser.parse_args(argv)
    if not 1 <= args.num_positions <= len(POSITIONS):
        parser.error(f"--num-positions must be within 1..{len(POSITIONS)}")
    if args.nodes != -1 and not 1 <= args.nodes <= MAX_NODES:
        parser.error(f"--nodes must be 1..{MAX_NODES} (or -1 for no limit)")
    if args.movetime < -1:
        parser.error("--movetime must be >= 0 milliseconds (or -1 for no limit)")
    if args.nodes < 0 and args.movetime < 0:
        parser.error("give --nodes or --movetime (both are unlimited)")
    if args.fen is not None and not args.fen.strip():
        parser.error("--fen is empty")
    return args


def run(engine, positions, *, nodes: int | None, movetime_ms: int | None, out=print):
    """Search each position from a fresh tree; returns [(nodes, ms, bestmove)]."""
    results = []
    for i, position in enumerate(positions, start=1):
        out(f"\nPosition: {i}/{len(positions)} {position}")
        board = board_for(position)
        engine.new_game()

        def progress(info):
            if getattr(info, "multipv", 1) not in (None, 1):
                return
            line = f"Benchmark time {info.time_ms} ms, {info.nodes} nodes, {info.nps} nps"
            if info.pv:
                line += f", move {info.pv[0].uci()}"
            out(line)

        start = time.monotonic()
        result = engine.search(board, nodes=nodes,
                               movetime=None if movetime_ms is None else movetime_ms / 1000.0,
                               on_info=progress)
        elapsed_ms = int((time.monotonic() - start) * 1000)
        best = result.best_move.uci() if result.best_move is not None else "(none)"
        out(f"bestmove {best}")
        out(f"Position nps: {round(1000.0 * result.nodes / (elapsed_ms + 1))} "
            f"({result.nodes} nodes in {elapsed_ms} ms)")
        results.append((result.nodes, elapsed_ms, best))
    return results


def summary(results) -> str:
    total_nodes = sum(n for n, _, _ in results)
    total_ms = sum(ms for _, ms, _ in results)
    return ("\n==========================="
            f"\nTotal time (ms) : {total_ms}"
            f"\nNodes searched  : {total_nodes}"
            f"\nNodes/second    : {round(1000.0 * total_nodes / (total_ms + 1))}")


def benchmark_main(argv=None) -> int:
    """`lc0-rocm benchmark`: lc0 benchmark's defaults, all 34 positions at 10 s."""
    return main(argv, full=True)


def describe_run(args, path, backend: str, threads: int, positions: list[str]) -> str:
    """The one line `bench` prints before it starts: what it will run."""
    limits = []
    if args.movetime >= 0:
        limits.append(f"{args.movetime} ms")
    if args.nodes > 0:
        limits.append(f"{args.nodes} nodes")
    what = "1 position (--fen)" if args.fen else \
        f"{len(positions)} position{'s' if len(positions) != 1 else ''}"
    return (f"bench: {what}, {' or '.join(limits)} each, {threads} search thread(s), "
            f"backend {backend}, net {path or '<none>'}")


def main(argv=None, *, full: bool = False) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv, full=full)
    from lc0_rocm import backends, netfiles
    from lc0_rocm.engine import Engine, check_position
    from lc0_rocm.network import load_network
    from lc0_rocm.backends import blas_threads

    if args.backend not in backends.names():
        print(f"lc0-rocm bench: unknown backend {args.backend!r}; known: "
              f"{', '.join(backends.names())}", file=sys.stderr)
        return 1
    try:
        # The random backend needs no net; with none it encodes lc0's classical input.
        no_net = args.backend in ("random", "sim") and not args.weights
        path = None if no_net else netfiles.resolve_weights(args.weights)
        backend_options = backends.parse_options(args.backend_opts)
    except (netfiles.NetNotFoundError, ValueError) as e:
        print(f"lc0-rocm bench: {e}", file=sys.stderr)
        return 1
    positions = [args.fen] if args.fen else POSITIONS[:args.num_positions]
    try:
        for position in positions:
            check_position(board_for(position))
    except ValueError as e:
        print(f"lc0-rocm bench: bad position: {e}", file=sys.stderr)
        return 1
    print(f"Loading weights file from: {path or '<none>'} (backend {args.backend})", flush=True)
    note = blas_threads.settle_for_backend(args.backend)
    if note:
        print(note, flush=True)
    try:
        network = load_network(None if no_net else str(path), backend=args.backend,
                               backend_opts=backend_options)
    except Exception as e:
        print(f"lc0-rocm bench: cannot load {path or 'the backend'}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    options = {"SmartPruningFactor": 0.0, "NNCacheSize": args.nncache}   # lc0 bench: no smart pruning
    if args.threads is not None:
        options["Threads"] = args.threads
    if args.minibatch_size is not None:
        options["MinibatchSize"] = args.minibatch_size
    options = {k: v for k, v in options.items() if k in Engine.OPTIONS}
    try:
        engine = Engine(network, **options)
    except ValueError as e:
        print(f"lc0-rocm bench: {e}", file=sys.stderr)
        return 1
    engine.movetime_limit_s = None      # --movetime comes in milliseconds: its seconds are meant
    print(describe_run(args, path, network.backend.name, engine.search_threads(), positions),
          flush=True)

    def out(line):
        print(line, flush=True)

    try:
        results = run(engine, positions, nodes=args.nodes if args.nodes > 0 else None,
                      movetime_ms=args.movetime if args.movetime >= 0 else None, out=out)
    finally:
        network.close()
    print(summary(results), flush=True)
    return 0
