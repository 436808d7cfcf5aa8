"""The annotated PGN output: the games the analysis read, each analysed
position's eval after the move that reached it (`[%eval ...]`, as lichess
and ChessBase read it) and each marked move's NAG (?! ? ??) and better
move. A plain game (no variation, standard chess) is read as its
mainline's columns and written by python-chess's exporter driven along
them (pgn_mainline.py); python-chess reads any other whole (its
mainline's SAN parsed by the native core, inputs.CoreSanGameBuilder) and
its exporter's text is written (pgn_export.py): the same text. A big plain
PGN is written on every core, a part per process (`python -m` this module)
cut where pgn_parallel cuts it for reading, each sent its games'
positions and their rows' columns (it works out their annotations
itself) and written into a temporary file beside the output, copied into
it in file order (no part held in memory): the same text as one process,
which is also what happens when a part's process fails. A game is known
by its source and first line (the positions' `line`), which a part counts
from its own start.
"""
from __future__ import annotations

import concurrent.futures
import io
import os
import pickle
import shutil
import sys
import tempfile

import chess
import chess.engine
import chess.pgn
import numpy as np

from lc0_rocm.analysis import flat, pgn_export, pgn_parallel, position_parts
from lc0_rocm.analysis.inputs import LineCounter, game_problem, open_text, read_game
from lc0_rocm.analysis.pgn_mainline import Mainline, read_mainline

NAGS = {"?!": chess.pgn.NAG_DUBIOUS_MOVE, "?": chess.pgn.NAG_MISTAKE, "??": chess.pgn.NAG_BLUNDER}
WORDS = {"?!": "Inaccuracy", "?": "Mistake", "??": "Blunder"}

# source -> a game's first line -> ply -> (the score after the move that
# reached the position, or None; the played move's mark; the better move,
# UCI; the position's FEN where a better move is named, for its SAN). A
# score is plain data, (mate, centipawns, white to move), one of the first
# two None: a PovScore object each took ~10x as long to make (321,000 of
# them pickled and loaded: 1.3 s and 1.8 s against 0.12 s each).
Annotations = dict[str, dict[int, dict[int, tuple]]]


def annotations(plan, cols: dict, mode: str, until: int | None = None) -> Annotations:
    """What the PGN shows of each analysed game position, straight from the
    columns (flat: the records' values and marks, without a record per
    position); `until`: of the positions before it alone (flat.chunks)."""
    by_source: Annotations = {}
    for values, occurrences in flat.chunks(plan, cols, mode, until=until):
        for p, t, _, mark in occurrences:
            if p.game is None:
                continue
            v = values[t]
            score = None
            if v.mate is not None or v.score_cp is not None:
                score = (v.mate, v.score_cp, p.fen[p.fen.index(" ") + 1] == "w")
            fen = p.fen if mark is not None and v.best else None
            by_source.setdefault(p.source, {}).setdefault(p.line, {})[p.ply] = (score, mark, v.best, fen)
    return by_source


def pov_score(score: tuple) -> chess.engine.PovScore:
    """An annotation's score as python-chess's PovScore."""
    mate, cp, white = score
    return chess.engine.PovScore(chess.engine.Mate(mate) if mate is not None else chess.engine.Cp(cp), white)


def eval_text(score: tuple) -> str:
    """The `[%eval ...]` annotation python-chess's GameNode.set_eval writes
    for an annotation's score (from white's side: pawns with two decimals,
    or #moves to mate; "" for a mate on the board)."""
    mate, cp, white = score
    if mate is None:
        return f"[%eval {float(cp if white else -cp) / 100:.2f}]"
    mate = mate if white else -mate
    return f"[%eval #{mate}]" if mate else ""


def with_eval(comment: str, score: tuple) -> str:
    """The comment as python-chess's GameNode.set_eval leaves it for an
    annotation's score, without its PovScore and regular expression where
    the comment holds no eval yet (almost always: ~3 us a node less)."""
    if "[%eval" in comment:
        node = chess.pgn.Game()              # an eval to replace: python-chess's rules
        node.comment = comment
        node.set_eval(pov_score(score))
        return node.comment
    text = eval_text(score)
    if not text:
        return comment
    return comment + " " + text if comment and not comment.endswith(" ") else comment + text


def write_pgn(f, pgn_sources: list[str], plan, cols: dict, mode: str, scratch: str | None = None) -> int:
    """The annotated games of `pgn_sources` into the text file f (the
    parts' texts meet in a temporary folder in `scratch`); returns how many
    (games python-chess cannot read or the analysis refused are left out:
    the errors file lists them)."""
    whole: list[Annotations] = []

    def by_line_of(source: str) -> dict:        # every source's annotations, worked out here once
        if not whole:
            whole.append(annotations(plan, cols, mode))
        return whole[0].get(source, {})

    return sum(_write_source(f, source, plan, cols, mode, by_line_of, scratch) for source in pgn_sources)


def _write_source(f, source: str, plan, cols: dict, mode: str, by_line_of, scratch: str | None) -> int:
    parts = pgn_parallel.parts_of(source)
    firsts = pgn_parallel.lines_before(source, [start for start, _ in parts]) if len(parts) > 1 else []
    spans = _position_spans(plan, source, firsts) if firsts else None
    if spans is not None:
        with tempfile.TemporaryDirectory(prefix=".lc0-rocm-pgn-", dir=scratch) as folder:
            outs = [os.path.join(folder, f"part{k}.pgn") for k in range(len(parts))]

            def run(k: int):
                # The part's positions (and the next one, whose value gives
                # the last one's loss) and their rows' columns: the part's
                # process works out its annotations itself.
                (start, end), (first, stop) = parts[k], spans[k]
                payload = (*position_parts.part_of(plan, cols, first, stop), mode, stop - first)
                return pgn_parallel.run_module("lc0_rocm.analysis.pgn_out",
                                               [source, str(start), str(end), str(firsts[k]), outs[k]],
                                               pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))

            with concurrent.futures.ThreadPoolExecutor(len(parts), thread_name_prefix="pgn-out") as pool:
                games = list(pool.map(run, range(len(parts))))
            if all(g is not None for g in games):
                for out in outs:
                    with open(out, encoding="utf-8", newline="") as part:
                        shutil.copyfileobj(part, f)
                return sum(games)
    with open_text(source) as handle:
        return annotate_into(f, handle, 0, by_line_of(source))


def _position_spans(plan, source: str, firsts: list[int]) -> list[tuple[int, int]] | None:
    """The run's positions [first, stop) read from each of the file's
    parts, `firsts` the lines before each part's start: those of `source`
    whose game starts in the part's lines. None when `source`'s positions
    are not one run in file order (the file given twice): its annotations
    are then worked out here."""
    run = plan.positions.source_lines(source)
    if run is None:
        return None
    first, lines = run
    bounds = [first] + [first + int(np.searchsorted(lines, line, side="right")) for line in firsts[1:]]
    bounds.append(first + len(lines))
    return list(zip(bounds[:-1], bounds[1:]))


def annotate_into(f, handle, line_offset: int, by_line: dict, columns: bool = True) -> int:
    """A PGN text's games annotated into f (games known by their first line
    plus `line_offset`); returns how many. `columns`: a plain game read as
    columns (pgn_mainline), python-chess reading the others whole; false:
    python-chess reads every game (the same text, as the tests hold)."""
    lines = LineCounter(handle)
    games = 0
    better = _better_sans(by_line)
    columns = columns and better is not None       # the core is built
    while True:
        lines.mark()
        try:
            reader = read_mainline(lines)
        except (ValueError, KeyError, IndexError):
            reader = False                         # python-chess reads the text whole below, as planning does
        if reader is None:
            return games
        if reader and reader.not_a_game():
            continue                               # reported in the errors file
        game = reader.mainline() if reader and columns else None
        if game is None:                           # not plain: python-chess reads its text whole
            try:
                game = read_game(io.StringIO("".join(lines.taken)), core_san=True)
            except (ValueError, KeyError, IndexError):
                continue
            if game is None:
                continue
        first = line_offset + (lines.first or lines.count)
        if isinstance(game, Mainline):
            _annotate_mainline(game, by_line.get(first, {}), better.get(first, {}))
            f.write(game.export())
        else:
            if game_problem(game):
                continue             # reported in the errors file, left out here
            _annotate(game, by_line.get(first, {}), None if better is None else better.get(first, {}))
            f.write(pgn_export.export(game))
        f.write("\n\n")
        games += 1


def _better_sans(by_line: dict) -> dict[int, dict[int, str | None]] | None:
    """Every marked move's better move in SAN (None: not legal there),
    by game and ply, from one native call for all of them (a call each
    took ~8 us, most of it Python); None without the core."""
    where, pairs = [], []
    for first, plies in by_line.items():
        for ply, (_, mark, best, fen) in plies.items():
            if mark is not None and best and fen is not None:
                where.append((first, ply))
                pairs.append((fen, best))
    sans = pgn_export.fen_move_sans(pairs)
    if sans is None:
        return None
    by_game: dict[int, dict[int, str | None]] = {}
    for (first, ply), san in zip(where, sans):
        by_game.setdefault(first, {})[ply] = san
    return by_game


def _annotate_mainline(game: Mainline, plies: dict[int, tuple], better_sans: dict[int, str | None]) -> None:
    """The evals, marks and better moves of a game read as columns."""
    _annotate_moves(game.headers, game.comments, game.nags, plies, lambda ply, move: better_sans.get(ply))


def _annotate(game: chess.pgn.Game, plies: dict[int, tuple], better_sans: dict[int, str | None] | None) -> None:
    """The evals, marks and better moves of a game python-chess read, on
    its mainline's nodes (`better_sans`: each marked ply's better move in
    SAN, worked out already; None: python-chess replays the game for it)."""
    if not plies:
        return
    nodes = list(game.mainline())
    comments = [node.comment for node in nodes]
    if better_sans is not None:
        def better(ply: int, move: str) -> str | None:
            return better_sans.get(ply)
    else:
        ucis = [node.move.uci() for node in nodes]

        def better(ply: int, move: str) -> str | None:
            return _san_at(game, ucis[:ply], move)
    _annotate_moves(game.headers, comments, [node.nags for node in nodes], plies, better)
    for node, comment in zip(nodes, comments):
        node.comment = comment


def _annotate_moves(headers: chess.pgn.Headers, comments: list[str], nags: list, plies: dict[int, tuple],
                    better) -> None:
    """What the annotated PGN adds along a mainline of len(comments) moves,
    `comments[i]` and `nags[i]` (a set, or None for none yet) the i-th
    move's: each analysed position's eval on the move that reached it, each
    marked move's NAG and words, a move's mark before its eval;
    `better(ply, uci)`: the better move's SAN, None when it is not legal."""
    if not plies:
        return
    headers["Annotator"] = "lc0-rocm"
    moves = len(comments)
    for ply in range(moves + 1):
        annotation = plies.get(ply)
        if annotation is None:
            continue
        score, mark, best, _ = annotation
        if ply > 0 and score is not None:
            comments[ply - 1] = with_eval(comments[ply - 1], score)
        if ply < moves and mark is not None:
            if nags[ply] is None:
                nags[ply] = set()
            nags[ply].add(NAGS[mark])
            text = WORDS[mark] + "."
            san = better(ply, best) if best else None
            if san is not None:
                text += f" {san} was best."
            comments[ply] = f"{comments[ply]} {text}".strip()


def _san_at(game: chess.pgn.Game, played: list[str], move: str) -> str | None:
    """`move` (UCI) after the moves `played` from the game's start, as
    python-chess's Board.san writes it, python-chess replaying the game (no
    core: _better_sans did not have them); None when it is not legal there."""
    board = game.board()
    try:
        for uci in played:
            board.push(chess.Move.from_uci(uci))
        best = chess.Move.from_uci(move)
        return board.san(best) if board.is_legal(best) else None
    except ValueError:
        return None


def main(argv: list[str]) -> int:
    """A part's process: PATH START END LINE_OFFSET OUT, its positions
    (a Plan, their rows' columns, the mode and how many are the part's, the
    one after them only giving the last one's loss) pickled on stdin -> its
    games annotated in OUT, their count pickled on stdout."""
    path, start, end, line_offset, out = argv
    plan, cols, mode, count = pickle.loads(sys.stdin.buffer.read())
    by_line = annotations(plan, cols, mode, until=count).get(path, {})
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        games = annotate_into(f, pgn_parallel.part_text(path, int(start), int(end)), int(line_offset), by_line)
    sys.stdout.buffer.write(pickle.dumps(games, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
