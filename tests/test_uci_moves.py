"""The move cycle under a clock (issue 69): a `position` that continues the
game plays only its new moves, so its cost does not grow with the game;
limits and FEN counters too large for the search are dealt with when they
arrive."""
from __future__ import annotations

import random
import time

import chess
import pytest

from lc0_rocm import uci, uci_parse
from tests.uci_fakes import Collector, FakeEngine, FakeLoader


@pytest.fixture
def session(tmp_path, maia_path):
    out = Collector()
    FakeEngine.instances.clear()
    engine = uci.UciEngine(out, engine_class=FakeEngine, network_loader=FakeLoader(), cwd=tmp_path)
    engine.handle(f"setoption name WeightsFile value {maia_path}")
    yield engine, out
    engine.shutdown()


def a_game(plies, seed=5):
    rng = random.Random(seed)
    board = chess.Board()
    while board.ply() < plies and not board.is_game_over():
        board.push(rng.choice(list(board.legal_moves)))
    return [m.uci() for m in board.move_stack]


def test_a_continued_game_plays_only_the_new_moves(session, monkeypatch):
    engine, out = session
    played = []
    real = uci_parse.push_moves

    def counting(board, moves, first_ply=0):
        played.append(len(moves))
        return real(board, moves, first_ply)

    monkeypatch.setattr(uci_parse, "push_moves", counting)
    moves = a_game(160)
    for n in range(0, len(moves) + 1, 2):
        engine.handle("position startpos moves " + " ".join(moves[:n]))
        expected = chess.Board()
        for m in moves[:n]:
            expected.push_uci(m)
        assert engine.board == expected and engine.board.move_stack == expected.move_stack
    assert played[0] == 0 and set(played[1:]) == {2}     # two new plies a move, at ply 2 as at 160
    assert not [line for line in out.lines if line.startswith("info string error")]


@pytest.mark.parametrize("change", ["other-move", "shorter", "fen", "chess960", "ucinewgame"])
def test_a_position_that_does_not_continue_is_parsed_whole(session, change):
    engine, out = session
    moves = a_game(20)
    engine.handle("position startpos moves " + " ".join(moves))
    if change == "other-move":
        board = chess.Board()
        for m in moves[:-1]:
            board.push_uci(m)
        other = next(m for m in board.legal_moves if m.uci() != moves[-1])
        tokens = moves[:-1] + [other.uci()]
        line = "position startpos moves " + " ".join(tokens)
    elif change == "shorter":
        tokens = moves[:10]
        line = "position startpos moves " + " ".join(tokens)
    elif change == "fen":
        board = chess.Board()
        for m in moves[:10]:
            board.push_uci(m)
        tokens = moves[10:]
        line = f"position fen {board.fen()} moves " + " ".join(tokens)
    elif change == "chess960":
        engine.handle("setoption name UCI_Chess960 value true")
        tokens = moves
        line = "position startpos moves " + " ".join(tokens)
    else:
        engine.handle("ucinewgame")
        tokens = moves
        line = "position startpos moves " + " ".join(tokens)
    engine.handle(line)
    expected, _ = uci_parse.parse_position(line.split()[1:], chess960=change == "chess960")
    assert engine.board == expected and engine.board.move_stack == expected.move_stack
    assert engine.board.chess960 == (change == "chess960")


def test_an_illegal_new_move_rejects_the_position_and_the_next_is_whole(session):
    engine, out = session
    moves = a_game(12)
    engine.handle("position startpos moves " + " ".join(moves[:10]))
    engine.handle("position startpos moves " + " ".join(moves[:10]) + " a1a1")
    assert engine.board is None and "illegal move a1a1 at ply 11" in out.lines[-1]
    engine.handle("go nodes 1")
    assert out.wait_for("bestmove") == "bestmove (none)"
    engine.handle("position startpos moves " + " ".join(moves))
    expected, _ = uci_parse.parse_position(["startpos", "moves", *moves])
    assert engine.board.move_stack == expected.move_stack


def test_fen_counters_out_of_the_search_range_are_refused_on_arrival(session):
    engine, out = session
    for fen in ("4k3/8/8/8/8/8/4P3/4K3 w - - 0 2147483647", "4k3/8/8/8/8/8/4P3/4K3 w - - 2147483648 2"):
        engine.handle(f"position fen {fen}")
        assert out.lines[-1].startswith("info string error invalid position"), out.lines[-1]
        assert engine.board is None
    engine.handle("position fen 4k3/8/8/8/8/8/4P3/4K3 w - - 0 1000000000")
    assert engine.board is not None


class DepthEngine(FakeEngine):
    def search(self, board, *, depth=None, **kwargs):
        self.depths.append(depth)
        return super().search(board, **kwargs)


@pytest.mark.parametrize("depth", ["2147483648", str(2**32), str(2**63 - 1)])
def test_go_depth_beyond_a_c_int_is_clamped(tmp_path, maia_path, depth):
    out = Collector()
    DepthEngine.depths = []
    engine = uci.UciEngine(out, engine_class=DepthEngine, network_loader=FakeLoader(), cwd=tmp_path)
    try:
        engine.handle(f"setoption name WeightsFile value {maia_path}")
        engine.handle(f"go depth {depth} nodes 2")
        assert out.wait_for("bestmove") != "bestmove (none)"
        assert DepthEngine.depths == [2**31 - 1]
    finally:
        engine.shutdown()


def test_ponder_on_a_nearly_empty_clock_is_one_node_and_ponderhit_answers_from_it(session):
    """Below MoveOverheadMs a move gets one node; so does the ponder search,
    and ponderhit answers with its move instead of waiting for a restart."""
    engine, out = session
    engine.handle("position startpos moves e2e4 e7e5")
    engine.handle("go ponder wtime 150 btime 150")
    ponder = FakeEngine.instances[-1].searches.get(timeout=10)
    assert ponder["nodes"] == 1 and not ponder["infinite"]
    assert not [line for line in out.lines if line.startswith("bestmove")]   # held until ponderhit
    engine.handle("ponderhit")
    assert out.wait_for("bestmove").startswith("bestmove ")
    assert FakeEngine.instances[-1].searches.empty()   # no second search
    assert len([line for line in out.lines if line.startswith("bestmove")]) == 1


def test_ponderhit_turns_the_ponder_search_into_the_moves_search(session):
    """With time left, ponderhit does not restart: the ponder search goes on
    and is stopped when the move's budget (counted from ponderhit) is spent."""
    engine, out = session
    engine.handle("position startpos moves e2e4 e7e5")
    engine.handle("go ponder wtime 4000 btime 4000 winc 0 binc 0")
    ponder = FakeEngine.instances[-1].searches.get(timeout=10)
    assert ponder["infinite"]
    time.sleep(0.2)
    assert not [line for line in out.lines if line.startswith("bestmove")]
    hit = time.monotonic()
    engine.handle("ponderhit")
    assert out.wait_for("bestmove").startswith("bestmove ")
    took = time.monotonic() - hit
    assert FakeEngine.instances[-1].searches.empty()          # no second search
    # (4000 - 200) ms over ~50 moves, the first move's bonus: a fraction of a second
    assert 0.02 < took < 1.5, took
    engine.handle("ponderhit")
    assert out.lines[-1].startswith("info string error ponderhit while not pondering")


def test_ponderhit_with_nodes_restarts_with_its_limits(session):
    engine, out = session
    engine.handle("position startpos moves e2e4 e7e5")
    engine.handle("go ponder nodes 7")
    assert FakeEngine.instances[-1].searches.get(timeout=10)["infinite"]
    engine.handle("ponderhit")
    after = FakeEngine.instances[-1].searches.get(timeout=10)
    assert after["nodes"] == 7 and not after["infinite"]
    assert out.wait_for("bestmove").startswith("bestmove ")
