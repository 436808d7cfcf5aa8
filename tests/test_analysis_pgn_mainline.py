"""The annotated PGN with plain games read as their mainline's columns
(pgn_mainline) is python-chess's text byte for byte: every game read by
python-chess's GameBuilder, annotated on its nodes (the better moves'
SAN by python-chess replaying the game) and exported by its
StringExporter. Awkward games (variations, errors, variants, comments and
NAGs before the first move, evals to replace, escapes) included."""
from __future__ import annotations

import io
import random

import chess
import chess.engine
import chess.pgn
import pytest

from analysis_data import OPERA, random_games
from test_analysis_inputs import AWKWARD_GAMES
from test_analysis_pgn_export import _decorated

from lc0_rocm import native_core
from lc0_rocm.analysis import inputs, pgn_mainline, pgn_out

pytestmark = pytest.mark.skipif(not native_core.available()[0],
                                reason=f"no native core: {native_core.available()[1]}")

EXPORTER = dict(headers=True, variations=True, comments=True)

# What the columns must carry as GameBuilder does: comments and a NAG
# before the first move (the NAG is the game's: never written), comments
# joined on one move, NAG symbols, a result token unlike the header's, a
# rest-of-line comment, an eval to replace or remove, a comment holding a
# brace, a game with no header, one ending without a result, a sideline
# opening on a comment.
CRAFTED = [
    """[Event "before the first move"]\n[Result "*"]\n\n{ first } $4 { second } 1. e4 e5 { a } { b } 2. Nf3 ! Nc6 ?? $14 """
    """3. Bb5 ; to the end of the line\na6 1-0""",
    """[Event "evals already"]\n\n1. d4 { [%eval 0.25] } d5 { [%eval -0.10] [%clk 0:01:00] } 2. c4 { [%eval #3] } *""",
    """1. e4 c5 2. Nf3 d6 *""",
    """[Event "no result"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7#""",
    """[Event "sideline with a comment"]\n\n1. e4 e5 ({ the other } 1... c5) 2. Nf3 *""",
    """[Event "result header"]\n[Result "1/2-1/2"]\n\n1. c4 c5 0-1""",
]


def _text() -> str:
    rng = random.Random(51)
    games = [str(_decorated(g, rng)) for g in random_games(30, seed=52, max_plies=160)]
    return "\n\n".join(CRAFTED + AWKWARD_GAMES + [OPERA] + games) + "\n"


def _annotations(text: str, rng: random.Random) -> dict[int, dict[int, tuple]]:
    """Random annotations for every game python-chess reads, by first line:
    scores (mates, a mate on the board, centipawns), marks and better
    moves (legal or not) at most plies, as pgn_out.annotations gives them."""
    lines = inputs.LineCounter(io.StringIO(text))
    by_line = {}
    while True:
        lines.mark()
        try:
            game = chess.pgn.read_game(lines)
        except (ValueError, KeyError, IndexError):
            continue
        if game is None:
            return by_line
        try:
            board = game.board()
        except ValueError:
            continue
        moves = list(game.mainline_moves())
        plies = {}
        for ply in range(len(moves) + 1):
            if rng.random() < 0.8:
                white = board.turn == chess.WHITE
                score = rng.choice([(None, rng.randint(-900, 900), white), (rng.randint(-6, 6), None, white), None])
                mark = rng.choice([None, None, "?!", "?", "??"])
                legal = sorted(board.legal_moves, key=chess.Move.uci)
                best = rng.choice(legal).uci() if legal and rng.random() < 0.9 else rng.choice(["", "a1h8"])
                plies[ply] = (score, mark, best, board.fen() if mark is not None and best else None)
            if ply < len(moves):
                board.push(moves[ply])
        by_line[lines.first or lines.count] = plies


def _python_chess_annotate(game: chess.pgn.Game, plies: dict[int, tuple]) -> None:
    """What the annotated PGN adds to a game, by python-chess alone: each
    analysed position's eval (GameNode.set_eval) after the move that
    reached it, each marked move's NAG and words, the better move's SAN."""
    if not plies:
        return
    game.headers["Annotator"] = "lc0-rocm"
    board = game.board()
    for ply, node in enumerate([game, *game.mainline()]):
        if ply:
            board.push(node.move)
        score, mark, best, _ = plies.get(ply, (None, None, None, None))
        if ply and score is not None:
            node.set_eval(pgn_out.pov_score(score))
        if mark is not None and node.next() is not None:
            nxt = node.next()
            nxt.nags.add(pgn_out.NAGS[mark])
            text = pgn_out.WORDS[mark] + "."
            move = chess.Move.from_uci(best) if best else None
            if move is not None and board.is_legal(move):
                text += f" {board.san(move)} was best."
            nxt.comment = f"{nxt.comment} {text}".strip()


def _python_chess_text(text: str, by_line: dict) -> tuple[str, int]:
    """The reference: python-chess reads, annotates (replaying each game for
    a better move's SAN) and exports every game."""
    out, games = io.StringIO(), 0
    lines = inputs.LineCounter(io.StringIO(text))
    while True:
        lines.mark()
        try:
            game = inputs.read_game(lines)
        except (ValueError, KeyError, IndexError):
            continue
        if game is None:
            return out.getvalue(), games
        if inputs.game_problem(game):
            continue
        _python_chess_annotate(game, by_line.get(lines.first or lines.count, {}))
        out.write(game.accept(chess.pgn.StringExporter(**EXPORTER)) + "\n\n")
        games += 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_annotated_pgn_read_as_columns_is_python_chess_s_text(seed):
    text = _text()
    by_line = _annotations(text, random.Random(seed))
    want, count = _python_chess_text(text, by_line)
    for columns in (True, False):
        out = io.StringIO()
        assert pgn_out.annotate_into(out, io.StringIO(text), 0, by_line, columns=columns) == count
        assert out.getvalue() == want


def test_most_games_are_read_as_columns_and_the_others_by_python_chess():
    text = _text()
    handle = io.StringIO(text)
    kinds = {"columns": 0, "python-chess": 0}
    while True:
        try:
            reader = pgn_mainline.read_mainline(handle)
        except (ValueError, KeyError, IndexError):
            continue
        if reader is None:
            break
        kinds["columns" if reader.mainline() else "python-chess"] += 1
    # The crafted games but the sideline, the random games, the opera and
    # the plain awkward games (long algebraic, promotions, escapes, ...).
    assert kinds["columns"] >= 5 + 30 + 1 + 6, kinds
    assert kinds["python-chess"] >= 7, kinds     # variations, errors, variants, a null move, a bad FEN


def test_a_columns_game_keeps_what_game_builder_keeps():
    game = pgn_mainline.read_mainline(io.StringIO(CRAFTED[0])).mainline()
    builder = chess.pgn.read_game(io.StringIO(CRAFTED[0]))
    assert game.comment == builder.comment == "first second"
    nodes = list(builder.mainline())
    assert game.comments == [n.comment for n in nodes]
    assert [n or set() for n in game.nags] == [n.nags for n in nodes]
    assert game.sans == [n.san() for n in nodes]
    assert dict(game.headers) == dict(builder.headers)
    assert game.headers["Result"] == builder.headers["Result"] == "1-0"   # the header's "*" took the token's


NOT_GAMES = ["\x00\ufffd\ufffd garbage", "{ a stray comment }", "junk after the last game"]


@pytest.mark.parametrize("columns", [True, False])
def test_text_that_is_not_a_game_is_reported_by_planning_and_left_out_of_the_pgn(columns):
    """python-chess reads any text as a game; text with no tag, move or
    result is reported (file and line) and neither analysed nor written."""
    text = "\n\n".join([NOT_GAMES[0], OPERA, NOT_GAMES[1], CRAFTED[2], NOT_GAMES[2]]) + "\n"
    items = list(inputs.pgn_items("x.pgn", io.StringIO(text), inputs.Selection()))
    problems = [i for i in items if isinstance(i, inputs.GameProblem)]
    assert [(p.line, p.game, p.problem) for p in problems] == [
        (1, 1, inputs.NOT_A_GAME), (text.count("\n", 0, text.index("{ a stray")) + 1, 3, inputs.NOT_A_GAME),
        (text.count("\n", 0, text.index("junk")) + 1, 5, inputs.NOT_A_GAME)]
    games = {i.game for i in items if isinstance(i, inputs.Position)}
    assert games == {2, 4}
    out = io.StringIO()
    assert pgn_out.annotate_into(out, io.StringIO(text), 0, {}, columns=columns) == 2
    want = "".join(chess.pgn.read_game(io.StringIO(t)).accept(chess.pgn.StringExporter(**EXPORTER)) + "\n\n"
                   for t in (OPERA, CRAFTED[2]))
    assert out.getvalue() == want


def test_a_game_with_only_a_result_or_a_tag_is_still_a_game():
    for text in ("*", '[Event "empty"]', "1-0"):
        items = list(inputs.pgn_items("x.pgn", io.StringIO(text + "\n"), inputs.Selection()))
        assert [type(i) for i in items] == [inputs.Position], text
