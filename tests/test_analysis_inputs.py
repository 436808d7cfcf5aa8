"""Analysis input (lc0_rocm/analysis/inputs.py, plan.py): every position of
every game, EPD and FEN line with its file and line; rows that stand for
the position with the history the engine needs; malformed input reported
and skipped; repeated positions computed once; shards that do not depend
on the workers."""
from __future__ import annotations

import gzip

import chess
import pytest

from analysis_data import (EPD_ERROR_LINES, EPD_LINES, FEN_ERROR_LINES, FEN_LINES, ILLEGAL, OPERA_PLIES,
                           VARIANT, random_games, write_lines, write_pgn)
from lc0_rocm import encoder, host
from lc0_rocm.analysis.inputs import (InputError, Position, Selection, board_of_row, board_position, game_fens,
                                      positions_from_items, read_positions, row_error, row_fen)
from lc0_rocm.analysis.plan import WorkDir, WorkDirError, build_plan, plan_from_positions


def split(items):
    items = list(items)
    positions = [i for i in items if isinstance(i, Position)]
    errors = [i for i in items if isinstance(i, InputError)]
    return positions, errors


def test_pgn_every_position_with_its_game_line_and_ply(tmp_path):
    games = random_games(3, seed=1)
    path = write_pgn(tmp_path / "g.pgn", games, [ILLEGAL, VARIANT])
    positions, errors = split(read_positions([str(path)]))
    counts = [OPERA_PLIES + 1] + [g.end().ply() + 1 for g in games]
    assert len(positions) == sum(counts)
    assert [e.message.split(":")[0] for e in errors] == ["game 2", "game 3"]
    assert "illegal san" in errors[0].message and "not supported" in errors[1].message
    lines = path.read_text().splitlines()
    for e in errors:
        assert lines[e.line - 1].startswith("[Event")
    first = positions[0]
    assert (first.game, first.ply, first.played, first.line) == (1, 0, "e2e4", 1)
    last_opera = positions[OPERA_PLIES]
    assert last_opera.played is None and chess.Board(last_opera.fen).is_checkmate()
    assert {p.game for p in positions} == {1, 4, 5, 6}
    assert lines[positions[-1].line - 1] == '[Event "random 2"]'


def test_rows_carry_the_history_the_network_sees(tmp_path):
    """A row is the game from the zeroing move before the 8th newest
    position: it encodes (every format) like the whole game."""
    games = random_games(4, seed=2, max_plies=90)
    path = write_pgn(tmp_path / "g.pgn", games)
    positions, _ = split(read_positions([str(path)]))
    boards = []
    for g in [chess.pgn.read_game(open(path))] + games:
        board = g.board()
        boards.append(board.copy())
        for move in g.mainline_moves():
            board.push(move)
            boards.append(board.copy())
    assert len(boards) == len(positions)
    for fmt in (1, 3, 132):
        for position, board in list(zip(positions, boards))[::7]:
            row_board = board_of_row(position.row)
            assert row_board.fen() == board.fen() == position.fen
            a = encoder.encode_packed(row_board, fmt)
            b = encoder.encode_packed(board, fmt)
            assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    assert max(len(p.row.split(" moves ")[-1].split()) for p in positions) < 60   # rows do not grow with the game


def test_every_and_played_select_plies(tmp_path):
    path = write_pgn(tmp_path / "g.pgn", [])
    every3, _ = split(read_positions([str(path)], selection=Selection(every=3)))
    assert [p.ply for p in every3] == list(range(0, OPERA_PLIES + 1, 3))
    played, _ = split(read_positions([str(path)], selection=Selection(played=True)))
    assert [p.ply for p in played] == list(range(OPERA_PLIES))
    assert all(p.played for p in played)


def test_epd_and_fen_lines_with_errors(tmp_path):
    epd = write_lines(tmp_path / "s.epd", EPD_LINES)
    positions, errors = split(read_positions([str(epd)]))
    # Reading finds what is not EPD; the engine judges each FEN when it
    # computes the row (an empty board: refused then, with its line).
    assert errors == []
    assert [p.id for p in positions] == ["start", None, "scholar", "start again", "empty board", "mated"]
    assert positions[5].fen.endswith(" 1 3") and positions[0].line == 1
    assert [p.line for p in positions if row_error(p.row)] == EPD_ERROR_LINES
    assert "impossible" in row_error(positions[4].row)
    _, errors = split(read_positions([str(write_lines(tmp_path / "short.epd", ["8/8/8 w -", "8/8 w - -\0 x"]))]))
    assert "fields before its operations" in errors[0].message and "NUL" in errors[1].message
    fen = write_lines(tmp_path / "f.txt", FEN_LINES)
    positions, errors = split(read_positions([str(fen)]))
    assert [e.line for e in errors] == FEN_ERROR_LINES
    assert "e2e5" in errors[0].message and "illegal" in errors[0].message
    assert [p.line for p in positions] == [2, 3, 5]
    assert positions[1].fen == "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"
    # an EPD read as FEN lines: the engine refuses every one (its operations)
    positions, _ = split(read_positions([str(epd)], kind="fen"))
    assert len(positions) == len(EPD_LINES) and all(row_error(p.row) for p in positions)


def test_a_rows_fen_is_python_chess_s(monkeypatch):
    """A row's moves are played in the native core to name the position
    (one call a row): the FEN python-chess's Board.fen() writes, en passant
    squares only where a capture is legal, castling and promotions
    included, over random games; a refused row says why; without the core
    python-chess gives the same."""
    import random

    from lc0_rocm import native_core
    rows = []
    for game in random_games(30, seed=8):
        board = game.board()
        for move in game.mainline_moves():
            board.push(move)
            rows.append(board_position("t", 0, board).row)
    rng = random.Random(2)
    board = chess.Board()
    while len(rows) < 1500 + 200:
        moves = list(board.legal_moves)
        if not moves or board.ply() > 120:
            board = chess.Board()
            continue
        pushes = [m for m in moves if board.piece_type_at(m.from_square) == chess.PAWN
                  and abs(m.to_square - m.from_square) == 16]
        board.push(rng.choice(pushes) if pushes and rng.random() < 0.4 else rng.choice(moves))
        rows.append(board_position("t", 0, board).row)
    assert any(" moves " in r for r in rows)
    for row in rows:
        assert row_fen(row) == (board_of_row(row).fen(), ""), row
    for row, words in [("8/8/8/8/8/8/8/8 w - - 0 1 moves e2e4", "impossible"),
                       (chess.STARTING_FEN + " moves e2e4 e2e4", "illegal move")]:
        fen, why = row_fen(row)
        assert fen == "" and words in why
    if native_core.available()[0]:
        monkeypatch.setattr(native_core, "available", lambda: (False, "test"))
        assert [row_fen(r) for r in rows[:50]] == [(board_of_row(r).fen(), "") for r in rows[:50]]
        assert row_fen(chess.STARTING_FEN + " moves e2e5")[0] == ""


def test_a_games_fens_and_clocks_are_python_chess_s(monkeypatch):
    """A PGN game's positions are named in one native call: every FEN and
    halfmove clock as python-chess's boards give them, from the start
    position or a FEN header's; a null move (which the core's games cannot
    hold) and a missing core fall back to python-chess."""
    from lc0_rocm import native_core

    def python_chess(board, ucis):
        board = board.copy()
        fens, clocks = [board.fen()], [board.halfmove_clock]
        for uci in ucis:
            board.push_uci(uci)
            fens.append(board.fen())
            clocks.append(board.halfmove_clock)
        return fens, clocks

    games = [(g.board(), [m.uci() for m in g.mainline_moves()]) for g in random_games(40, seed=12, max_plies=120)]
    midgame = chess.Board("r3k2r/pp1n1ppp/8/2pP4/8/8/PPP2PPP/R3K2R w KQkq c6 0 12")
    games += [(midgame, ["d5c6", "e8c8", "e1g1", "b7c6"]), (chess.Board(), []), (chess.Board(), ["e2e4", "0000"])]
    for board, ucis in games:
        assert game_fens(board.fen(), ucis) == python_chess(board, ucis), ucis
    if native_core.available()[0]:
        monkeypatch.setattr(native_core, "available", lambda: (False, "test"))
        assert all(game_fens(b.fen(), u) == python_chess(b, u) for b, u in games[:5])


def test_gzip_and_unreadable_files(tmp_path):
    path = tmp_path / "s.epd.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(EPD_LINES) + "\n")
    positions, errors = split(read_positions([str(path)]))
    assert len(positions) == len(EPD_LINES) and not errors
    broken = tmp_path / "broken.pgn.gz"
    text = "\n\n".join(str(g) for g in random_games(150, seed=4)) + "\n"
    broken.write_bytes(gzip.compress(text.encode())[:-100])     # a download cut short
    positions, errors = split(read_positions([str(broken)]))
    assert positions and errors and "reading stopped" in errors[-1].message
    _, errors = split(read_positions([str(tmp_path / "missing.pgn")]))
    assert errors[0].message.startswith("cannot read")


def test_boards_and_fens_in_memory():
    board = chess.Board()
    for move in ("e2e4", "e7e5", "g1f3"):
        board.push_uci(move)
    items = [board, "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "bad fen", chess.Board(chess960=True)]
    positions, errors = split(positions_from_items(items))
    assert [p.line for p in positions] == [1, 2, 3] and [e.line for e in errors] == [4]
    assert row_error(positions[2].row)            # "bad fen": refused when computed
    assert positions[0].row == "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 moves e2e4 e7e5 g1f3"
    assert positions[0].ply == 3
    with pytest.raises(TypeError):
        list(positions_from_items([42]))


def test_plan_computes_repeated_positions_once(tmp_path):
    games = random_games(6, seed=3)
    path = write_pgn(tmp_path / "g.pgn", games)
    epd = write_lines(tmp_path / "s.epd", EPD_LINES)
    plan = build_plan([str(path), str(epd)], None, Selection(), shard_size=16)
    assert len(plan.positions) == len(plan.tasks)
    assert len(plan.rows) == len(set(p.row for p in plan.positions)) < len(plan.positions)
    assert plan.tasks[0] == 0 and max(plan.tasks) == len(plan.rows) - 1
    # every game starts alike: ply 0 and 1 of each random game are the same rows
    firsts = [t for p, t in zip(plan.positions, plan.tasks) if p.game and p.game > 1 and p.ply == 0
              and p.source == str(path)]
    assert len(set(firsts)) == 1
    assert plan.num_shards == -(-len(plan.rows) // 16)
    again = build_plan([str(path), str(epd)], None, Selection(), shard_size=16)
    assert again.digest == plan.digest and again.rows == plan.rows


def test_workdir_refuses_other_settings_and_a_second_run(tmp_path):
    a = WorkDir(tmp_path / "out.parts")
    a.open({"settings": 1})
    with pytest.raises(WorkDirError, match="in use"):
        WorkDir(tmp_path / "out.parts").open({"settings": 1})
    a.close()
    with pytest.raises(WorkDirError, match="other settings"):
        WorkDir(tmp_path / "out.parts").open({"settings": 2})
    b = WorkDir(tmp_path / "out.parts")
    b.open({"settings": 1})
    b.remove()
    assert not (tmp_path / "out.parts").exists()


def _big_pgn(tmp_path, newline: str):
    """Eight copies of a PGN with escape lines and two malformed games."""
    one = write_pgn(tmp_path / "one.pgn", random_games(6, seed=3), [ILLEGAL, VARIANT]).read_text()
    path = tmp_path / f"big{len(newline)}.pgn"
    path.write_text(("% an escape line\n\n" + one + "\n") * 8, newline=newline)
    return str(path)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_big_pgn_read_in_parts_equals_reading_it_whole(tmp_path, monkeypatch, newline):
    """Cut where games begin and read a part per process, a file gives the
    positions and errors (lines, game numbers) of reading it in one piece."""
    from lc0_rocm.analysis import inputs, pgn_parallel
    path = _big_pgn(tmp_path, newline)
    size = (tmp_path / path).stat().st_size
    monkeypatch.setattr(pgn_parallel, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(pgn_parallel, "MIN_PART_BYTES", size // 8)
    monkeypatch.setattr(host, "usable_cores", lambda: 4)
    parts = pgn_parallel.parts_of(path)
    assert len(parts) == 4 and parts[0][0] == 0 and parts[-1][1] == size
    data = open(path, "rb").read()
    assert all(data[start:start + 7] == b"[Event " for start, _ in parts[1:])
    for selection in (Selection(), Selection(3, True)):
        whole = list(inputs.read_positions([path], selection=selection))      # in one piece
        assert list(pgn_parallel.read_positions([path], selection=selection)) == whole
        plan = build_plan([path], None, selection, 64)                         # the parts' columns joined
        reference = plan_from_positions(whole, 64)
        assert (list(plan.positions), plan.rows, list(plan.tasks), plan.errors, plan.digest) == \
            (list(reference.positions), reference.rows, list(reference.tasks), reference.errors, reference.digest)
    positions, errors = split(whole)
    assert len(errors) == 16 and [e.message.split(":")[0] for e in errors[-2:]] == ["game 65", "game 66"]   # 9 games a copy
    assert {p.game for p in positions} >= {1, 72}


def test_a_part_that_fails_falls_back_to_reading_the_file_whole(tmp_path, monkeypatch):
    from lc0_rocm.analysis import inputs, pgn_parallel
    path = _big_pgn(tmp_path, "\n")
    monkeypatch.setattr(pgn_parallel, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(pgn_parallel, "MIN_PART_BYTES", 1)
    monkeypatch.setattr(host, "usable_cores", lambda: 3)
    real = pgn_parallel._run_part
    monkeypatch.setattr(pgn_parallel, "_run_part",
                        lambda p, part, sel: None if part[0] > 0 else real(p, part, sel))
    whole = list(inputs.read_positions([path]))                                 # in one piece
    assert len(pgn_parallel.parts_of(path)) == 3
    assert list(pgn_parallel.read_positions([path])) == whole


def test_small_and_gzip_pgn_files_are_read_in_one_piece(tmp_path):
    from lc0_rocm.analysis import pgn_parallel
    path = _big_pgn(tmp_path, "\n")
    assert len(pgn_parallel.parts_of(path)) == 1            # under PARALLEL_BYTES
    packed = tmp_path / "big.pgn.gz"
    packed.write_bytes(gzip.compress(open(path, "rb").read()))
    assert pgn_parallel.parts_of(str(packed)) == []


# Games whose moves python-chess's reader takes in ways the fast reading
# must leave to it, or must skip as it does: variations (nested, before the
# first move), comments and NAGs, castling with zeros, a castling written
# as a king move, long algebraic, a null move, an ambiguous and an illegal
# move, headers python-chess refuses, an impossible start, no moves at all.
AWKWARD_GAMES = [
    """[Event "variations"]\n\n1. e4 {a comment} e5 $1 (1... c5 2. Nf3 (2. c3 d5) d6) 2. Nf3!? Nc6 ; rest\n"""
    """3. Bb5 a6 {[%clk 0:01:00]} 4. Ba4 Nf6 5. 0-0 Be7 6. Re1 b5 7. Bb3 O-O 1-0""",
    """[Event "variation first"]\n\n( 1. d4 d5 ) 1. e4 e5 2. Nf3 *""",
    """[Event "long algebraic"]\n\n1. e2e4 e7-e5 2. Ng1f3 Nb8c6 3. Bf1-c4 Bc5 4. b4 Bxb4 5. c3 Ba5 *""",
    """[Event "king takes its own rook"]\n[SetUp "1"]\n[FEN "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"]\n\n"""
    """1. Rb1 Kh8 *""",
    """[Event "king moves beside castling"]\n[SetUp "1"]\n[FEN "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"]\n\n"""
    """1. Kf1 O-O-O 2. Kg1 Rd2 *""",
    """[Event "promotions"]\n[SetUp "1"]\n[FEN "3r4/4P3/8/8/8/2k5/6p1/4K3 w - - 0 1"]\n\n"""
    """1. exd8=N g1Q+ 2. Ke2 Qg2+ *""",
    """[Event "promotion without =" ]\n[SetUp "1"]\n[FEN "8/4P3/8/8/8/2k5/6p1/4K3 w - - 0 1"]\n\n"""
    """1. e8Q g1=q+ 2. Ke2 *""",
    """[Event "null move"]\n\n1. e4 -- 2. d4 Z0 3. c4 e5 *""",
    """[Event "ambiguous"]\n[SetUp "1"]\n[FEN "4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1"]\n\n1. Kd1 Ke7 2. Nd2 Kd7 *""",
    """[Event "illegal later"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Bxa6 bxa6 5. Qh7 *""",
    """[Event "bad fen"]\n[SetUp "1"]\n[FEN "rnbqkbnr/pppppppp/8/8 w KQkq - 0 1"]\n\n1. e4 *""",
    """[Event "atomic"]\n[Variant "Atomic"]\n\n1. e4 e5 *""",
    """[Event "960"]\n[Variant "Chess960"]\n[SetUp "1"]\n"""
    """[FEN "bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w KQkq - 0 1"]\n\n1. g3 g6 *""",
    """[Event "impossible"]\n[SetUp "1"]\n[FEN "P3k3/8/8/8/8/8/8/4K3 w - - 0 1"]\n\n1. Kd2 *""",
    """[Event "no moves"]\n\n*""",
    """% an escape line\n[Event "escape"]\n\n1. d4 d5 2. c4 dxc4 3. e3 b5 4. a4 c6 5. axb5 cxb5 6. Qf3 *""",
    """[Event "en passant"]\n\n1. e4 Nf6 2. e5 d5 3. exd6 exd6 4. d4 Be7 5. d5 c5 6. dxc6 O-O 7. cxb7 Bxb7 *""",
]


def python_chess_items(path, handle, selection):
    """The reference: every game read by python-chess's game builder."""
    from lc0_rocm.analysis import inputs
    lines = inputs.LineCounter(handle)
    while True:
        lines.mark()
        try:
            game = inputs.read_game(lines)
        except (ValueError, KeyError, IndexError) as e:
            yield InputError(path, lines.first or lines.count, f"unreadable game: {e}")
            continue
        if game is None:
            return
        lines.games += 1
        problem = inputs.game_problem(game)
        first = lines.first or lines.count
        if problem:
            yield InputError(path, first, f"game {lines.games}: {problem}")
            continue
        ucis = [m.uci() for m in game.mainline_moves()]
        yield from inputs.game_positions(path, first, lines.games, game.board().fen(), ucis, selection)


@pytest.mark.parametrize("selection", [Selection(), Selection(every=2, played=True)])
def test_pgn_moves_read_through_the_core_equal_python_chess_s_reading(tmp_path, selection):
    """Games are read without python-chess playing their moves (the core
    plays the SAN tokens), and where the core is not sure of a token the
    game is read by python-chess: every position, line, game number and
    error is what python-chess's own reading of every game gives."""
    games = AWKWARD_GAMES + [str(g) for g in random_games(30, seed=21, max_plies=160)]
    path = tmp_path / "awkward.pgn"
    path.write_text("\n\n".join(games) + "\n")
    got = list(read_positions([str(path)], selection=selection))
    with open(path) as handle:
        want = list(python_chess_items(str(path), handle, selection))
    assert got == want
    problems = [e.message for e in got if isinstance(e, InputError)]
    for game, why in [(4, "illegal san: 'Kh8'"), (9, "ambiguous san: 'Nd2'"), (10, "illegal san: 'Qh7'"),
                      (11, "expected 8 rows"), (12, "'Atomic' is not supported"),
                      (13, "'Chess960' is not supported"), (14, "impossible start position")]:
        assert any(p.startswith(f"game {game}: ") and why in p for p in problems), (game, problems)
    assert {p.game for p in got if isinstance(p, Position)} >= {1, 2, 3, 5, 6, 7, 8, 16, 17}


def test_san_tokens_through_the_core_are_python_chess_s_moves():
    """The core's SAN reading names the move python-chess's parse_san names,
    or declines (python-chess then reads the game): for every legal move's
    SAN, without its capture mark and in long algebraic, in random games,
    and for junk tokens. A game's own SAN it reads whole."""
    import random as random_module

    from lc0_rocm import native_core
    from lc0_rocm.analysis.inputs import san_moves
    if not native_core.available()[0]:
        pytest.skip(f"no native core: {native_core.available()[1]}")
    rng = random_module.Random(5)
    answered = 0
    for game in random_games(6, seed=23, max_plies=160):
        board = game.board()
        sans = []
        for ply, move in enumerate(game.mainline_moves()):
            for m in board.legal_moves if ply % 3 == 0 else ():
                san = board.san(m).rstrip("+#")
                assert san_moves(board.fen(), [san]) == [m.uci()], (board.fen(), san)
                piece = board.piece_at(m.from_square).symbol().upper().replace("P", "")
                junk = "".join(rng.choice("NBRQKnbrqk=x-abcdefgh12345678O0@") for _ in range(rng.randint(1, 6)))
                for token in (san.replace("x", ""), piece + m.uci(), junk):
                    got = san_moves(board.fen(), [token])
                    if got is not None:
                        answered += 1
                        assert got == [board.parse_san(token).uci()], (board.fen(), token)
            sans.append(board.san(move).rstrip("+#"))
            board.push(move)
        assert san_moves(game.board().fen(), sans) == [m.uci() for m in game.mainline_moves()]
    assert answered > 2_000


def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path):
    """Windows editors start a UTF-8 file with a byte-order mark; the first
    FEN, EPD line or PGN game reads as without it."""
    bom = b"\xef\xbb\xbf"
    (tmp_path / "a.fen").write_bytes(bom + f"{chess.STARTING_FEN}\n".encode())
    (tmp_path / "a.epd").write_bytes(bom + f"{chess.STARTING_BOARD_FEN} w KQkq - id \"s\";\n".encode())
    (tmp_path / "a.pgn").write_bytes(bom + b'[Event "x"]\n\n1. e4 e5 *\n')
    for name, count in (("a.fen", 1), ("a.epd", 1), ("a.pgn", 3)):
        items = list(read_positions([str(tmp_path / name)]))
        assert not [i for i in items if isinstance(i, InputError)], (name, items)
        assert len(items) == count, (name, items)
