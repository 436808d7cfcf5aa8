"""The Python API refuses misuse with a clear error (issue 12, points 9-11):
a closed network, an Engine without a network, limits of the wrong type,
a gzip bomb; and the cpu backend stays finite, without numpy warnings, on
inputs far outside training (a huge rule-50 count)."""
from __future__ import annotations

import gzip
import math
import warnings

import chess
import pytest

import lc0_rocm
from lc0_rocm.weights import decode as weights_decode
from lc0_rocm.weights import WeightsError, load_weights


@pytest.fixture(scope="module")
def net(maia_path):
    network = lc0_rocm.load_network(maia_path, backend="cpu")
    yield network
    network.close()


def test_closed_network_refuses_to_evaluate(maia_path):
    network = lc0_rocm.load_network(maia_path, backend="cpu")
    network.evaluate(chess.Board())
    network.close()
    network.close()                       # twice is harmless
    assert network.closed
    for call in (lambda: network.evaluate(chess.Board()), lambda: network.evaluate_batch([chess.Board()])):
        with pytest.raises(RuntimeError, match="is closed"):
            call()


def test_engine_needs_a_network():
    for bad in (None, "maia-1900.pb.gz", 42):
        with pytest.raises(TypeError, match="needs a network"):
            lc0_rocm.Engine(bad)


@pytest.mark.parametrize("kwargs,error", [
    (dict(nodes="50"), "nodes must be an int"),
    (dict(nodes=5.0), "nodes must be an int"),
    (dict(nodes=True), "nodes must be an int"),
    (dict(depth="3"), "depth must be an int"),
    (dict(movetime="1"), "movetime must be a number"),
    (dict(nodes=5, searchmoves=[object()]), "searchmoves must hold"),
])
def test_search_rejects_limits_of_the_wrong_type(net, kwargs, error):
    with pytest.raises(TypeError, match=error):
        lc0_rocm.Engine(net).search(chess.Board(), **kwargs)


@pytest.mark.parametrize("kwargs,error", [
    (dict(nodes=10**30), "nodes must be 1.."),
    (dict(nodes=0), "nodes must be 1.."),
    (dict(movetime=math.inf), "movetime must be a finite"),
    (dict(movetime=math.nan), "movetime must be a finite"),
    (dict(time_budget=-1.0), "time_budget must be a finite"),
    (dict(movetime=5000), "movetime=5000 is 83 minutes"),
    (dict(depth=2**40), "depth must be within"),
    (dict(mate=-2**40), "mate must be within"),
])
def test_search_rejects_limits_out_of_range(net, kwargs, error):
    with pytest.raises(ValueError, match=error):
        lc0_rocm.Engine(net).search(chess.Board(), **kwargs)


def test_search_stop_must_be_an_event(net):
    with pytest.raises(TypeError, match="stop must be a threading.Event"):
        lc0_rocm.Engine(net).search(chess.Board(), nodes=5, stop=5)


def test_search_takes_searchmoves_in_uci_notation(net):
    engine = lc0_rocm.Engine(net)
    result = engine.search(chess.Board(), nodes=8, searchmoves=["e2e4", chess.Move.from_uci("d2d4")])
    assert result.best_move.uci() in ("e2e4", "d2d4")
    assert engine.search(chess.Board(), nodes=4, searchmoves="g1f3").best_move.uci() == "g1f3"
    with pytest.raises(ValueError, match="not a legal move"):
        engine.search(chess.Board(), nodes=4, searchmoves=["e2e5"])


def test_gzip_bomb_stops_at_the_bound(tmp_path, monkeypatch):
    """Inflating stops just past MAX_NET_BYTES: scaled down here (the real
    bound, 1 GiB, is checked to hold the largest nets and stay below
    protobuf's 2 GiB message limit)."""
    assert 512 << 20 <= weights_decode.MAX_NET_BYTES < 2 << 30
    monkeypatch.setattr(weights_decode, "MAX_NET_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.pb.gz"
    with gzip.open(bomb, "wb") as f:
        for _ in range(64):
            f.write(bytes(1 << 20))       # 64 MiB of zeros in a 64 KiB file
    data = bytearray(bomb.read_bytes())
    data[-4:] = (100).to_bytes(4, "little")   # a lying size in the trailer: inflating must still stop
    bomb.write_bytes(bytes(data))
    with pytest.raises(WeightsError, match="more than 1 MiB"):
        load_weights(bomb)


def test_gzip_trailer_size_rejects_at_once(tmp_path):
    """The issue's bomb: 2 GiB of zeros, refused from the gzip trailer
    before inflating anything."""
    bomb = tmp_path / "bomb.pb.gz"
    body = gzip.compress(bytes(1 << 20), compresslevel=9)
    bomb.write_bytes(body[:-4] + (2 << 30).to_bytes(4, "little"))   # the trailer of 2 GiB of zeros
    with pytest.raises(WeightsError, match="1024 MiB"):
        load_weights(bomb)


def test_real_net_still_loads(maia_path):
    assert load_weights(maia_path).format is not None


@pytest.mark.parametrize("fen", ["4k3/8/8/8/8/8/8/4K2R w K - 999999999 600",
                                 "8/8/8/4k3/8/8/8/4K2R w - - 0 2600",
                                 "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 65535 1"])
def test_outputs_stay_finite_without_numpy_warnings(net, fen):
    board = chess.Board(fen)
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # a RuntimeWarning (overflow in exp) fails the test
        evaluation = net.evaluate(board)
    assert all(math.isfinite(x) for x in evaluation.wdl)
    assert all(math.isfinite(p) for p in evaluation.policy.values())
