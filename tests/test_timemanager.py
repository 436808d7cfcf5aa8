"""lc0's legacy time manager, and games on tiny clocks that must never flag."""
from __future__ import annotations

import random
import time

import chess
import pytest

from lc0_rocm import uci
from lc0_rocm.timemanager import ClockParams, LegacyTimeManager, estimated_moves_to_go
from tests.uci_fakes import Collector, FakeEngine, FakeLoader


def test_estimated_moves_to_go_matches_lc0_formula():
    # lc0: midpoint * (1 + 2 * (move / midpoint)^steepness)^(1/steepness) - move
    assert estimated_moves_to_go(0) == pytest.approx(51.5)
    m = 40 / 2.0
    assert estimated_moves_to_go(40) == pytest.approx(51.5 * (1 + 2 * (m / 51.5) ** 7) ** (1 / 7) - m)
    assert estimated_moves_to_go(200) < estimated_moves_to_go(0)
    assert all(estimated_moves_to_go(p) > 0 for p in range(0, 600, 7))


def test_first_move_bonus_and_even_split():
    tm = LegacyTimeManager(move_overhead_ms=200)
    clock = ClockParams(wtime=60000, btime=60000)
    first = tm.budget(clock, black_to_move=False, ply=0).deadline_ms
    assert first == pytest.approx(int((60000 - 200) / 51.5 * 2.8), abs=1)
    tm.search_done(first)                     # used it all: nothing banked
    second = tm.budget(clock, black_to_move=False, ply=2).deadline_ms
    assert second == pytest.approx(int((60000 - 200) / estimated_moves_to_go(2)), abs=1)


def test_increment_movestogo_and_black_clock():
    tm = LegacyTimeManager(move_overhead_ms=100)
    tm.first_move_of_game = False
    clock = ClockParams(wtime=1000, btime=30000, winc=0, binc=500, movestogo=10)
    budget = tm.budget(clock, black_to_move=True, ply=21).deadline_ms
    assert budget == pytest.approx(int((30000 + 500 * 9 - 100) / 10), abs=1)
    assert tm.budget(ClockParams(), black_to_move=True, ply=3) is None


def test_piggy_bank_spends_saved_time():
    tm = LegacyTimeManager(move_overhead_ms=0)
    tm.first_move_of_game = False
    clock = ClockParams(wtime=100000, btime=100000)
    plain = tm.budget(clock, black_to_move=False, ply=10).deadline_ms
    tm.search_done(plain - 1000)              # 1000 ms unused
    boosted = tm.budget(clock, black_to_move=False, ply=10).deadline_ms
    assert boosted > plain + 900


def test_deadline_never_exceeds_clock_minus_overhead():
    tm = LegacyTimeManager(move_overhead_ms=200)
    for wtime in (50, 199, 200, 201, 250, 400, 1000, 5000):
        tm.first_move_of_game = True
        budget = tm.budget(ClockParams(wtime=wtime, btime=wtime, winc=2000), black_to_move=False, ply=0)
        assert budget.deadline_ms <= max(0, wtime - 200)
        assert budget.single_node == (wtime <= 200)


def test_bad_settings():
    with pytest.raises(ValueError):
        LegacyTimeManager(move_overhead_ms=-1)
    with pytest.raises(ValueError):
        LegacyTimeManager(slowmover=-0.5)


class SlowEngine(FakeEngine):
    """Uses all the time it is given, 5 ms per node: the worst case."""
    node_seconds = 0.005


@pytest.mark.parametrize("start_ms,inc_ms,overhead", [(1000, 0, 200), (600, 30, 200), (3000, 100, 100)])
def test_tiny_clock_games_never_flag(maia_path, start_ms, inc_ms, overhead):
    """Play whole clock games through the UCI loop: time is measured from
    `go` to `bestmove`, as a GUI does."""
    out = Collector()
    engine = uci.UciEngine(out, engine_class=SlowEngine, network_loader=FakeLoader())
    engine.handle(f"setoption name WeightsFile value {maia_path}")
    engine.handle(f"setoption name MoveOverheadMs value {overhead}")
    engine.handle("isready")
    out.wait_for("readyok")
    clock = {chess.WHITE: float(start_ms), chess.BLACK: float(start_ms)}
    board = chess.Board()
    rng = random.Random(start_ms)
    try:
        for _ in range(80):
            moves = " ".join(m.uci() for m in board.move_stack)
            engine.handle("position startpos" + (f" moves {moves}" if moves else ""))
            n = len(out.lines)
            t0 = time.monotonic()
            engine.handle(f"go wtime {int(clock[chess.WHITE])} btime {int(clock[chess.BLACK])} "
                          f"winc {inc_ms} binc {inc_ms}")
            line = out.wait_for("bestmove", start=n)
            clock[board.turn] -= (time.monotonic() - t0) * 1000
            assert clock[board.turn] > 0, f"flagged at ply {board.ply()}"
            clock[board.turn] += inc_ms
            assert chess.Move.from_uci(line.split()[1]) in board.legal_moves
            board.push(rng.choice(list(board.legal_moves)))  # vary the game; the clock is the point
            if board.is_game_over():
                break
    finally:
        engine.shutdown()
    assert board.ply() >= 40


def test_preview_spends_nothing():
    from lc0_rocm.timemanager import ClockParams, LegacyTimeManager
    tm = LegacyTimeManager(200)
    tm.time_spared_ms = 500.0
    clock = ClockParams(wtime=60000, btime=60000)
    first = tm.preview(clock, black_to_move=False, ply=0)
    assert tm.first_move_of_game and tm.time_spared_ms == 500.0
    assert tm.budget(clock, black_to_move=False, ply=0).deadline_ms == first.deadline_ms
    assert tm.preview(ClockParams(wtime=150, btime=150), black_to_move=False, ply=20).single_node


def test_the_move_cycles_lag_is_measured_from_the_clocks_and_kept_back():
    """Our search used 50 ms but the clock fell by 60 ms a move: 10 ms of lag
    a move, kept back for every move still expected and from the hard cap."""
    from lc0_rocm.timemanager import ClockParams, LegacyTimeManager, estimated_moves_to_go
    tm = LegacyTimeManager(200)
    tm.first_move_of_game = False
    clock = 3000
    plain = LegacyTimeManager(200)
    plain.first_move_of_game = False
    for ply in range(0, 20, 2):
        budget = tm.budget(ClockParams(wtime=clock, btime=clock), black_to_move=False, ply=ply)
        tm.search_done(50.0)
        clock -= 60
    assert tm.cycle_lag_ms == pytest.approx(10.0)
    mtg = estimated_moves_to_go(20)
    got = tm.budget(ClockParams(wtime=clock, btime=clock), black_to_move=False, ply=20).deadline_ms
    assert got == pytest.approx(int((clock - 200 - 10.0 * mtg) / mtg), abs=1)
    assert budget.deadline_ms > 0
    # near the end the hard cap keeps the lag too
    assert tm.budget(ClockParams(wtime=205, btime=205), black_to_move=False, ply=22).single_node
    # a clock the GUI raised, or one that fell by far more, is not lag
    tm2 = LegacyTimeManager(200)
    tm2.budget(ClockParams(wtime=3000, btime=3000), black_to_move=False, ply=0)
    tm2.search_done(50.0)
    tm2.budget(ClockParams(wtime=60000, btime=60000), black_to_move=False, ply=2)
    assert tm2.cycle_lag_ms == 0.0
