"""The annotated PGN's text without python-chess replaying each game:
every move's SAN from the native core is python-chess's Board.san, and a
game's exported text is python-chess's StringExporter's, byte for byte
(comments, NAGs, evals, marks, odd start positions; games with
variations and variants go to python-chess itself)."""
from __future__ import annotations

import io
import random

import chess
import chess.engine
import chess.pgn
import pytest

from analysis_data import OPERA, random_games
from test_analysis_inputs import AWKWARD_GAMES

from lc0_rocm import native_core
from lc0_rocm.analysis import inputs, pgn_export, pgn_out

pytestmark = pytest.mark.skipif(not native_core.available()[0],
                                reason=f"no native core: {native_core.available()[1]}")

# Positions where SAN needs care: three queens to one square (file, rank
# and both), knights on one file, en passant giving check, castling with
# check, a promotion that mates, rooks on a rank and a file.
CRAFTED = [
    "7k/8/8/8/Q1Q5/8/Q7/4K3 w - - 0 1",
    "7k/8/8/8/1N6/8/1N6/4K3 w - - 0 1",
    "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",
    "r3k2r/8/8/8/8/8/8/R3K1qR w KQkq - 0 1",
    "5rk1/8/8/8/8/8/6PP/R4RK1 w - - 0 1",
    "6k1/4P3/6K1/8/8/8/8/8 w - - 0 1",
    "3k4/8/3K4/8/8/8/8/R6R w - - 0 1",
    "R6K/8/8/8/3k4/8/8/R7 w - - 0 1",
]


def _boards():
    for fen in CRAFTED:
        board = chess.Board(fen)
        assert board.is_valid(), fen
        yield board
    for game in random_games(8, seed=41, max_plies=200):
        board = game.board()
        for ply, move in enumerate(game.mainline_moves()):
            if ply % 2 == 0:
                yield board.copy()
            board.push(move)


def test_every_legal_move_s_san_is_python_chess_s():
    checked = 0
    for board in _boards():
        for move in board.legal_moves:
            assert pgn_export.uci_sans(board.fen(), [move.uci()]) == [board.san(move)], (board.fen(), move)
            checked += 1
    assert checked > 5000


def test_a_line_s_sans_and_an_illegal_move():
    game = chess.pgn.read_game(io.StringIO(OPERA))
    moves = list(game.mainline_moves())
    board = game.board()
    want = []
    for move in moves:
        want.append(board.san(move))
        board.push(move)
    assert pgn_export.uci_sans(chess.STARTING_FEN, [m.uci() for m in moves]) == want
    assert want[-1] == "Rd8#"
    assert pgn_export.uci_sans(chess.STARTING_FEN, ["e2e4", "e2e4"]) is None
    assert pgn_export.uci_sans(chess.STARTING_FEN, []) == []


def _decorated(game: chess.pgn.Game, rng: random.Random) -> chess.pgn.Game:
    """The game with comments, NAGs and evals here and there, as the
    analysis and PGN files leave them."""
    game.comment = "a game comment" if rng.random() < 0.5 else ""
    board = game.board()
    for node in game.mainline():
        roll = rng.random()
        if roll < 0.1:
            node.nags.update({rng.choice([1, 2, 3, 4, 5, 6, 14, 146])})
            if roll < 0.05:
                node.comment = "a comment after a NAG"
        elif roll < 0.2:
            node.comment = rng.choice(["short", "a longer comment { with a brace } that wraps " * 3, "[%clk 0:00:59]"])
        elif roll < 0.3:
            node.set_eval(chess.engine.PovScore(chess.engine.Cp(rng.randint(-900, 900)), board.turn))
        elif roll < 0.32:
            node.set_eval(chess.engine.PovScore(chess.engine.Mate(rng.randint(-5, 5) or 1), board.turn))
        board.push(node.move)
    return game


def _games():
    rng = random.Random(43)
    for text in AWKWARD_GAMES + [OPERA]:
        game = chess.pgn.read_game(io.StringIO(text))
        try:
            game.board()
        except ValueError:
            continue                     # a bad FEN: the analysis leaves such games out
        yield game
    for game in random_games(40, seed=44, max_plies=200):
        yield _decorated(game, rng)
    game = chess.pgn.read_game(io.StringIO(OPERA))
    game.variations[0].add_variation(chess.Move.from_uci("c7c5")).comment = "a sideline"
    yield game
    game = chess.pgn.read_game(io.StringIO(OPERA))   # comments before moves, one past 80 columns
    nodes = list(game.mainline())
    nodes[0].starting_comment, nodes[3].starting_comment = "before the first move", "a } before black's"
    nodes[4].comment = "x" * 85
    yield game
    game = chess.pgn.Game()                          # no headers at all
    game.headers.clear()
    game.add_line([chess.Move.from_uci("e2e4"), chess.Move.from_uci("e7e5")])
    yield game


def test_a_game_s_text_is_python_chess_s():
    fast = 0
    for game in _games():
        want = game.accept(chess.pgn.StringExporter(headers=True, variations=True, comments=True))
        assert pgn_export.export(game) == want, want[:200]
        fast += all(len(n.variations) <= 1 for n in [game, *game.mainline()]) and "Variant" not in game.headers
    assert fast > 40                     # most went the core's way


def test_an_annotated_game_s_marks_name_the_better_move_in_python_chess_s_san():
    game = chess.pgn.read_game(io.StringIO(OPERA))
    board = game.board()
    for move in list(game.mainline_moves())[:4]:
        board.push(move)
    better = next(m for m in board.legal_moves if board.is_capture(m) or board.gives_check(m))
    score = (None, -150, True)                     # -1.50 from white's side
    plies = {4: (score, "?", better.uci(), board.fen()), 5: (score, None, None, None)}
    texts = []
    # The better move's SAN worked out for all marks at once (the core), and
    # with python-chess replaying the game (no core).
    for better_sans in (pgn_out._better_sans({1: plies})[1], None):
        game = chess.pgn.read_game(io.StringIO(OPERA))
        pgn_out._annotate(game, plies, better_sans)
        texts.append(pgn_export.export(game))
        assert f"Mistake. {board.san(better)} was best." in texts[-1]
        assert "d6 { [%eval -1.50] }" in texts[-1]
        assert texts[-1] == game.accept(chess.pgn.StringExporter(headers=True, variations=True, comments=True))
    assert texts[0] == texts[1]
    played = [m.uci() for m in list(game.mainline_moves())[:4]]
    assert pgn_out._san_at(game, played, "e1e8") is None
    assert pgn_export.fen_move_sans([(board.fen(), "e1e8")]) == [None]


@pytest.mark.parametrize("comment", ["", "a comment", "ends in a space ", " [%eval 0.31] old", "[%eval #-3,12]",
                                     "[%clk 0:01:00]", "x [%eval junk] y"])
def test_an_eval_is_set_as_python_chess_s_set_eval_sets_it(comment):
    scores = [(None, cp, white) for cp in (0, 1, -1, 31, -250, 1999, -12345) for white in (True, False)]
    scores += [(mate, None, white) for mate in (1, -1, 7, -12, 0) for white in (True, False)]
    for score in scores:
        theirs = chess.pgn.Game()
        theirs.comment = comment
        theirs.set_eval(pgn_out.pov_score(score))
        assert pgn_out.with_eval(comment, score) == theirs.comment, (comment, score)


def test_a_better_move_s_san_from_its_position_s_fen_is_python_chess_s():
    """The SAN of legal moves along the games, from the position's FEN
    alone (not the game replayed to it), as python-chess writes it:
    checks, mates, disambiguation and en passant included."""
    checked = 0
    for game in _games():
        if (pgn_out.game_problem(game) or inputs.start_fen(game) is None     # the analysis leaves these out
                or any(len(n.variations) > 1 for n in [game, *game.mainline()])):
            continue
        board, played = game.board(), []
        pairs, wants = [], []
        for move in list(game.mainline_moves())[:40]:
            for other in list(board.legal_moves)[::3]:
                pairs.append((board.fen(), other.uci()))
                wants.append(board.san(other))
                if len(wants) % 50 == 0:          # python-chess replaying the game (no core)
                    assert pgn_out._san_at(game, played, other.uci()) == wants[-1]
            board.push(move)
            played.append(move.uci())
        assert pgn_export.fen_move_sans(pairs) == wants
        checked += len(wants)
    assert checked > 2000


def test_many_moves_sans_at_once_refuse_what_is_not_a_legal_move():
    """A bad FEN, an illegal or garbled move gives None in its place and
    leaves the others alone; garbage lengths are an error, not a crash."""
    start = chess.STARTING_FEN
    pairs = [(start, "e2e4"), ("not a fen", "e2e4"), (start, "e2e5"), (start, "zz9"), (start, ""),
             ("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "a1a8"), (start, "g1f3")]
    assert pgn_export.fen_move_sans(pairs) == ["e4", None, None, None, None, "Ra8#", "Nf3"]
    assert pgn_export.fen_move_sans([]) == []
    ffi, lib = native_core.load()
    out = ffi.new("char[]", 8)
    assert lib.lc0core_fen_move_sans(1, b"abc", 3, out, 8) != 0          # not NUL-terminated
    assert lib.lc0core_fen_move_sans(2, start.encode() + b"\0e2e4\0", len(start) + 6, out, 8) != 0
    assert lib.lc0core_fen_move_sans(1, start.encode() + b"\0e2e4\0", len(start) + 6, out, 2) != 0   # no room
    assert lib.lc0core_fen_move_sans(-1, b"", 0, out, 8) != 0


def test_a_game_read_with_the_core_s_san_is_python_chess_s_game():
    """The annotated PGN reads its games with the mainline's SAN parsed by
    the core: the same games, errors included (awkward games: variations,
    long algebraic, castling forms, promotions, null moves, illegal and
    ambiguous moves, bad FENs, variants, a Chess960 game, escapes)."""
    from lc0_rocm.analysis.inputs import read_game
    # A sideline whose first move (Black's Nd4) the mainline's next side
    # could also play (White's Nb5-d4): only python-chess may read it.
    trap = """[Event "sideline"]\n\n1. e4 e5 2. Nc3 Nc6 3. Nb5 Nb4 (3... Nd4 4. Nxd4) 4. a3 *"""
    # python-chess's board falls behind the core's after the first move and
    # catches up where a sideline begins: at the first move, late, nested,
    # and after a move only python-chess reads (long algebraic).
    sidelines = """[Event "sidelines"]\n\n1. e4 (1. d4 d5 (1... Nf6)) 1... e5 2. Nf3 Nc6 3. Bb5 a6 """ \
                """4. Ba4 Nf6 5. O-O (5. Nc3 b5 (5... Be7 6. d3) 6. Bb3) 5... Be7 6. Rf1-e1 b5 (6... d6) 7. Bb3 *"""
    text = "\n\n".join(AWKWARD_GAMES + [OPERA, trap, sidelines] +
                       [str(g) for g in random_games(30, seed=45, max_plies=200)])
    fast, slow = io.StringIO(text), io.StringIO(text)
    count = 0
    while True:
        a, b = read_game(fast, core_san=True), read_game(slow)
        if a is None or b is None:
            assert a is None and b is None
            break
        assert [str(e) for e in a.errors] == [str(e) for e in b.errors]
        try:
            want = str(b)
        except ValueError:               # a bad FEN: no text either way
            with pytest.raises(ValueError):
                str(a)
        else:
            assert str(a) == want
        assert [m.uci() for m in a.mainline_moves()] == [m.uci() for m in b.mainline_moves()]
        count += 1
    assert count == len(AWKWARD_GAMES) + 33
