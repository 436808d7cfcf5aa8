"""The result types as a user meets them (issue 69): one WDL unit, the types
exported and documented, a finished game evaluated as such, impossible
boards and bad chunks refused, movetime in seconds guarded, a closed
network refusing to search."""
from __future__ import annotations

import threading

import chess
import pytest

import lc0_rocm
from lc0_rocm import Engine, load_network

MATE = "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"
STALEMATE = "7k/8/6QK/8/8/8/8/8 b - - 0 1"


def test_result_types_are_exported_and_documented():
    for name in ("SearchInfo", "MoveStats", "SearchResult", "Evaluation"):
        assert name in lc0_rocm.__all__ and name in dir(lc0_rocm)
        cls = getattr(lc0_rocm, name)
        assert cls.__doc__ and not cls.__doc__.startswith(name + "("), name   # not dataclass's generated one
        assert "probabilit" in cls.__doc__ or name == "SearchResult" and "probabilities" in cls.__doc__


@pytest.fixture(scope="module")
def random_engine():
    net = load_network(None, backend="random")
    yield Engine(net)
    net.close()


def test_one_wdl_unit_across_results(random_engine, maia_path):
    result = random_engine.search(chess.Board(), nodes=30)
    with load_network(str(maia_path), backend="cpu") as net:
        ev = net.evaluate(chess.Board())
    wdls = [ev.wdl, result.wdl, result.lines[0].wdl] + [s.wdl for s in result.stats.values() if s.visits]
    for wdl in wdls:
        assert all(isinstance(x, float) and 0.0 <= x <= 1.0 for x in wdl), wdl
        assert abs(sum(wdl) - 1.0) < 1e-6, wdl
    line = result.lines[0]
    assert sum(line.wdl_permille) == 1000
    assert all(abs(p * 1000 - m) <= 1 for p, m in zip(line.wdl, line.wdl_permille))


@pytest.mark.parametrize("native", [True, False])
def test_evaluate_says_a_game_is_over(maia_path, native):
    with load_network(str(maia_path), backend="cpu") as net:
        net.use_native_core = native
        mate, stale, start = net.evaluate_batch([chess.Board(MATE), chess.Board(STALEMATE), chess.Board()])
    assert (mate.terminal, mate.wdl, mate.policy) == ("checkmate", (0.0, 0.0, 1.0), {})
    assert (stale.terminal, stale.wdl, stale.policy) == ("stalemate", (0.0, 1.0, 0.0), {})
    assert start.terminal is None and len(start.policy) == 20


@pytest.mark.parametrize("fen", ["8/8/8/8/8/8/8/8 w - - 0 1", "k7/8/8/8/8/8/8/K6P w - - 0 1",
                                 "k6R/8/8/8/8/8/8/K7 w - - 0 1"])
@pytest.mark.parametrize("native", [True, False])
def test_evaluate_refuses_what_search_refuses(maia_path, fen, native, random_engine):
    with pytest.raises(ValueError):
        random_engine.search(chess.Board(fen), nodes=1)
    with load_network(str(maia_path), backend="cpu") as net:
        net.use_native_core = native
        with pytest.raises(ValueError, match="invalid position"):
            net.evaluate(chess.Board(fen))


@pytest.mark.parametrize("chunk", [0, -1, 2.5, True, "8"])
def test_evaluate_batch_refuses_a_bad_chunk(chunk):
    with load_network(None, backend="random") as net:
        with pytest.raises(ValueError, match="chunk"):
            net.evaluate_batch([chess.Board()], chunk=chunk)


def test_a_movetime_that_looks_like_milliseconds_is_refused(random_engine):
    for limit in ("movetime", "time_budget"):
        with pytest.raises(ValueError, match="seconds"):
            random_engine.search(chess.Board(), **{limit: 1500})
    random_engine.search(chess.Board(), movetime=0.05)          # seconds as documented
    stop = threading.Event()
    stop.set()
    random_engine.movetime_limit_s = None                        # a long search on purpose
    try:
        assert random_engine.search(chess.Board(), movetime=1500, stop=stop).best_move is not None
    finally:
        del random_engine.movetime_limit_s


def test_a_closed_network_does_not_search():
    net = load_network(None, backend="random")
    engine = Engine(net)
    assert engine.search(chess.Board(), nodes=5).best_move is not None
    net.close()
    with pytest.raises(RuntimeError, match="closed"):
        engine.search(chess.Board(), nodes=5)
