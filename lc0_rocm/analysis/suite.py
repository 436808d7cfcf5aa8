"""`lc0-rocm suite [FILE.epd]`: search each position of an EPD test suite and
score it, like Ceres's SUITE: a position is solved when the best move is
one of its `bm` moves and none of its `am` moves; STS-style `c0 "Nf3=10,
Nd2=5"` gives points. Without FILE the suite shipped with the package
(lc0_rocm/analysis/tactics.epd: mates in one and two, free captures and
moves to avoid, made and checked with python-chess by
scripts/make_tactics_suite.py) is run.

Searches run many at once (analysis.many) with smart pruning off at a
fixed node count, so the solved set equals Engine.search's at the same
nodes and options.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import re
import sys

import chess

from lc0_rocm.analysis.cli import int_in
from lc0_rocm.analysis.settings import MAX_SEARCHES

PROG = "lc0-rocm suite"
SHIPPED = pathlib.Path(__file__).resolve().parent / "tactics.epd"
_POINTS = re.compile(r"\s*([^=,\s]+)\s*=\s*(\d+)\s*")


@dataclasses.dataclass
class Problem:
    line: int
    id: str
    board: chess.Board
    bm: list[chess.Move]
    am: list[chess.Move]
    points: dict[chess.Move, int]


@dataclasses.dataclass
class Outcome:
    problem: Problem
    best: chess.Move | None
    solved: bool
    points: int


# Skipped lines named on stderr (a file that is not EPD at all would list
# every line), and how much of each.
MAX_SKIPS_SHOWN = 10
MAX_SKIP_CHARS = 200


def read_suite(path: str) -> tuple[list[Problem], list[str]]:
    """Problems with a bm, am or c0 operation, and errors ("file:line: why")."""
    from lc0_rocm.analysis.inputs import open_text
    problems, errors = [], []
    with open_text(path) as f:
        for number, text in enumerate(f, start=1):
            text = text.strip()
            if not text or text.startswith("#"):
                continue
            try:
                board = chess.Board()
                ops = board.set_epd(text)
                points = _points(board, ops.get("c0"))
            except ValueError as e:
                errors.append(f"{path}:{number}: {e}")
                continue
            bm, am = list(ops.get("bm", [])), list(ops.get("am", []))
            if not (bm or am or points):
                errors.append(f"{path}:{number}: no bm, am or c0 operation to score")
                continue
            problems.append(Problem(number, str(ops.get("id", f"line {number}")), board, bm, am, points))
    return problems, errors


def _points(board: chess.Board, text) -> dict[chess.Move, int]:
    """STS's c0: "SAN=points, SAN=points" (moves not parsed are an error)."""
    if not isinstance(text, str):
        return {}
    out = {}
    for entry in text.split(","):
        if not entry.strip():
            continue
        found = _POINTS.fullmatch(entry)
        if not found:
            raise ValueError(f"c0 entry {entry.strip()!r} is not SAN=points")
        out[board.parse_san(found.group(1))] = int(found.group(2))
    return out


def score(problem: Problem, best: chess.Move | None) -> Outcome:
    solved = best is not None and (not problem.bm or best in problem.bm) and best not in problem.am
    if not problem.bm and not problem.am:
        solved = best is not None and problem.points.get(best, 0) == max(problem.points.values())
    return Outcome(problem, best, solved, problem.points.get(best, 0) if best is not None else 0)


def run_suite(problems: list[Problem], network, *, nodes=None, movetime=None, options=None,
              searches=None) -> list[Outcome]:
    """Each problem searched (many at once), scored."""
    from lc0_rocm.analysis.inputs import board_position
    from lc0_rocm.analysis.settings import Settings
    from lc0_rocm.analysis.worker import ShardWorker
    from lc0_rocm.engine import default_minibatch
    from lc0_rocm.search.params import SearchParams
    # Engine.search's prefetching, minibatch and node limit (analysis turns
    # prefetching off, fits the minibatch to the nodes and ends a search at
    # them): the solved set is the one a search of each problem alone finds.
    engine_like = {"MaxPrefetch": SearchParams().MaxPrefetch, "StrictNodes": SearchParams().StrictNodes}
    backend = getattr(network, "backend", None)
    if backend is not None:
        engine_like["MinibatchSize"] = default_minibatch(backend.attributes())
    options = {**engine_like, **(options or {})}
    settings = Settings("search", nodes=nodes, movetime=movetime, options=tuple(options.items()))
    rows = [board_position("suite", p.line, p.board).row for p in problems]
    worker = ShardWorker(settings, network=network, searches=searches)
    try:
        cols = worker.compute(rows)
    finally:
        worker.close()
    return [score(p, chess.Move.from_uci(str(b)) if str(b) else None) for p, b in zip(problems, cols["best"])]


def _san(board: chess.Board, move: chess.Move | None) -> str:
    return board.san(move) if move is not None else "-"


def table(outcomes: list[Outcome]) -> str:
    lines = [f"{'#':>4}  {'id':<24} {'best':<8} {'expected':<22} {'points':>6}  result"]
    for i, o in enumerate(outcomes, start=1):
        p = o.problem
        expected = " ".join([*(_san(p.board, m) for m in p.bm), *("!" + _san(p.board, m) for m in p.am)])
        lines.append(f"{i:>4}  {p.id[:24]:<24} {_san(p.board, o.best):<8} {expected[:22]:<22} "
                     f"{o.points:>6}  {'solved' if o.solved else 'missed'}")
    return "\n".join(lines)


def summary(outcomes: list[Outcome]) -> dict:
    most = sum(max(o.problem.points.values(), default=0) for o in outcomes)
    return {"solved": sum(o.solved for o in outcomes), "total": len(outcomes),
            "points": sum(o.points for o in outcomes), "max_points": most}


def as_json(outcomes: list[Outcome], meta: dict) -> dict:
    return {**meta, **summary(outcomes), "positions": [
        {"id": o.problem.id, "line": o.problem.line, "fen": o.problem.board.fen(),
         "best": o.best.uci() if o.best else None, "bm": [m.uci() for m in o.problem.bm],
         "am": [m.uci() for m in o.problem.am], "solved": o.solved, "points": o.points}
        for o in outcomes]}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Search each position of an EPD suite and score "
                                                       "its bm / am / c0 operations.")
    p.add_argument("suite", nargs="?", default=str(SHIPPED),
                   help="EPD file (default: the shipped tactics suite)")
    p.add_argument("--nodes", type=int, default=None, help="visits per position (default 800)")
    p.add_argument("--movetime", type=float, default=None, help="seconds per position")
    p.add_argument("-w", "--weights", default=None, help="network file or a fetched net's name")
    p.add_argument("-b", "--backend", default="auto", help="backend (default: auto)")
    p.add_argument("--backend-opts", default="", help="backend options in lc0's syntax")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a search knob by lc0's UCI name; repeatable")
    p.add_argument("--searches", type=int_in(1, MAX_SEARCHES), default=None,
                   help="searches at once (default: by backend)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    return p


def main(argv=None) -> int:
    from lc0_rocm.analysis.cli import engine_options
    from lc0_rocm.analysis.settings import AnalysisError
    from lc0_rocm.backends.base import BackendError
    from lc0_rocm.netfiles import NetNotFoundError
    from lc0_rocm.network import load_network
    from lc0_rocm.weights import WeightsError

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.nodes is None and args.movetime is None:
        args.nodes = 800
    try:
        problems, errors = read_suite(args.suite)
    except (OSError, EOFError) as e:          # also a damaged .gz
        print(f"{PROG}: cannot read {args.suite}: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
        return 2
    for e in errors[:MAX_SKIPS_SHOWN]:
        print(f"{PROG}: skipped {e[:MAX_SKIP_CHARS]}", file=sys.stderr)
    if len(errors) > MAX_SKIPS_SHOWN:
        print(f"{PROG}: skipped {len(errors) - MAX_SKIPS_SHOWN} more lines", file=sys.stderr)
    if not problems:
        print(f"{PROG}: {args.suite} has no position to score", file=sys.stderr)
        return 1
    try:
        options = dict(engine_options(args.option, parser))
        with load_network(args.weights if args.weights or args.backend != "random" else None,
                          backend=args.backend, backend_opts=args.backend_opts or None) as network:
            outcomes = run_suite(problems, network, nodes=args.nodes, movetime=args.movetime,
                                 options=options, searches=args.searches)
    except (ValueError, NetNotFoundError, WeightsError, BackendError, AnalysisError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    meta = {"suite": args.suite, "nodes": args.nodes, "movetime": args.movetime}
    if args.json:
        print(json.dumps(as_json(outcomes, meta), indent=1))
    else:
        s = summary(outcomes)
        print(table(outcomes))
        points = f", points {s['points']}/{s['max_points']}" if s["max_points"] else ""
        print(f"solved {s['solved']}/{s['total']}{points}")
    return 0
