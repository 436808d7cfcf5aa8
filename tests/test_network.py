"""Network / Evaluation end to end (our encoder + cpu backend) against lc0
v0.32.1: policy probabilities and W/D/L within 1e-4, moves-left within 1e-3."""
from __future__ import annotations

import gzip

import chess
import numpy as np
import pytest

from lc0_rocm import encoder
from lc0_rocm._proto import net_pb2
from lc0_rocm import tables
from lc0_rocm.network import Evaluation, load_network

from encoder_positions import lc0_v0321_transform_square, positions
from oracle import game_state, lc0_outputs

POLICY_TOL = 1e-4
WDL_TOL = 1e-4
MOVES_LEFT_TOL = 1e-3
POSITIONS = positions()
BOARDS = [b for _, b in POSITIONS]



def softmax(x):
    e = np.exp(np.asarray(x, dtype=np.float64) - np.max(x))
    return e / e.sum()


def with_input_format(src, dst, input_format: int):
    """Copy of a net file with network_format.input changed (lc0 encodes by it)."""
    net = net_pb2.Net()
    net.ParseFromString(gzip.open(src).read())
    net.format.network_format.input = input_format
    dst.write_bytes(gzip.compress(net.SerializeToString(), compresslevel=1))
    return dst


def check_against_lc0(net_path, boards, names, lc0_indices):
    """Evaluate `boards` on the cpu backend and compare with lc0's raw outputs;
    `lc0_indices(board, moves)` gives the policy indices to read lc0's logits at."""
    with load_network(net_path, backend="cpu") as net:
        evaluations = net.evaluate_batch(boards)
        has_moves_left = net.has_moves_left
    expected = lc0_outputs(net_path, boards)
    for name, board, ev, (logits, wdl, moves_left) in zip(names, boards, evaluations, expected):
        moves = list(board.legal_moves)
        assert list(ev.policy) == moves, name
        if moves:
            lc0_probs = softmax(logits[lc0_indices(board, moves)])
            ours = np.array([ev.policy[m] for m in moves])
            np.testing.assert_allclose(ours, lc0_probs, rtol=0, atol=POLICY_TOL, err_msg=name)
            assert abs(ours.sum() - 1) < 1e-5, name
        np.testing.assert_allclose(ev.wdl, wdl, rtol=0, atol=WDL_TOL, err_msg=name)
        assert ev.q == pytest.approx(ev.wdl[0] - ev.wdl[2])
        if has_moves_left:
            assert abs(ev.moves_left - moves_left) <= MOVES_LEFT_TOL, name
        else:
            assert ev.moves_left is None
    return evaluations


def lc0_plain_indices(board, moves):
    """lc0's own move -> index mapping (GameState.policy_indices, no transform)."""
    state = game_state(board)
    by_uci = dict(zip(state.moves(), state.policy_indices()))
    return np.array([by_uci[m.uci()] for m in moves])


def test_maia_matches_lc0(maia_path):
    check_against_lc0(maia_path, BOARDS, [n for n, _ in POSITIONS], lc0_plain_indices)


PRESETS = ["tiny-resnet", "tiny-resnet-attnpolicy", "tiny-attn", "tiny-bt"]


@pytest.mark.parametrize("preset", PRESETS)
def test_generated_nets_match_lc0(preset, make_test_net):
    path = make_test_net(preset, seed=3)
    some = POSITIONS[::3]
    evaluations = check_against_lc0(path, [b for _, b in some], [n for n, _ in some],
                                    lc0_plain_indices)
    assert all(ev.moves_left is not None for ev in evaluations)


@pytest.mark.parametrize("preset", PRESETS)
def test_canonical_format_nets_match_lc0(preset, make_test_net, tmp_path):
    """A canonical-format net (hectoplies, format 4): lc0 transforms the planes
    and reads the policy in the transformed frame. Where the transform has no
    TRANSPOSE we read lc0's logits at lc0 v0.32.1's own indices; with TRANSPOSE
    lc0 v0.32.1 maps moves inconsistently with its planes (LC0-FACTS.md), so
    there we read them at the plane-consistent indices our encoder uses."""
    path = with_input_format(make_test_net(preset, seed=4), tmp_path / "canonical.pb.gz",
                             encoder.INPUT_CANONICAL_HECTOPLIES)
    fmt = encoder.INPUT_CANONICAL_HECTOPLIES
    chosen = [(n, b) for n, b in POSITIONS if encoder.board_transform(b, fmt)] + POSITIONS[:12]
    assert {encoder.board_transform(b, fmt) for _, b in chosen} == set(range(8))

    def indices(board, moves):
        transform = encoder.board_transform(board, fmt)
        ours_moves, ours = encoder.policy_indices(board, fmt)
        assert ours_moves == moves
        if transform & encoder.TRANSPOSE:
            return ours
        plain = lc0_plain_indices(board, moves)
        lc0 = []
        for index in plain:
            uci = tables.POLICY_MOVES[index]
            f, t = (lc0_v0321_transform_square(chess.parse_square(s), transform) for s in (uci[:2], uci[2:4]))
            lc0.append(tables.move_index(chess.square_name(f) + chess.square_name(t) + uci[4:]))
        assert np.array_equal(lc0, ours)
        return np.array(lc0)

    check_against_lc0(path, [b for _, b in chosen], [n for n, _ in chosen], indices)


def test_batch_equals_single_and_forward(maia_path):
    net = load_network(maia_path, backend="cpu")
    boards = BOARDS[:6]
    batch = net.evaluate_batch(boards, chunk=4)
    for board, ev in zip(boards, batch):
        single = net.evaluate(board)
        assert single.policy.keys() == ev.policy.keys()
        np.testing.assert_allclose(list(single.policy.values()), list(ev.policy.values()), atol=1e-5)
        np.testing.assert_allclose(single.wdl, ev.wdl, atol=1e-5)
    policy, wdl, moves_left = net.forward(encoder.encode_batch(boards, net.input_format))
    assert policy.shape == (6, 1858) and wdl.shape == (6, 3) and moves_left.shape == (6,)
    np.testing.assert_allclose(wdl[0], batch[0].wdl, atol=1e-5)
    assert net.evaluate_batch([]) == []
    assert net.input_format == 1 and net.has_moves_left is False
    assert net.spec.filters == 64 and net.backend.name == "cpu"


def test_terminal_positions_and_black_to_move(maia_path):
    net = load_network(maia_path, backend="cpu")
    mate = chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")
    assert mate.is_checkmate()
    ev = net.evaluate(mate)
    assert ev.policy == {} and len(ev.wdl) == 3
    # Real board orientation for black: keys are legal moves of the board itself.
    board = chess.Board()
    board.push_uci("e2e4")
    ev = net.evaluate(board)
    assert set(ev.policy) == set(board.legal_moves)
    assert chess.Move.from_uci("e7e5") in ev.policy


def test_bad_input(tmp_path, maia_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="not found"):
        load_network(tmp_path / "missing.pb.gz", backend="cpu")
    from lc0_rocm import netfiles
    monkeypatch.setenv("LC0ROCM_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(netfiles.NetNotFoundError, match="no network file found"):
        load_network(None, backend="cpu")


def test_forward_rejects_bad_shapes(maia_path):
    net = load_network(maia_path, backend="cpu")
    with pytest.raises(ValueError, match="shape"):
        net.forward(np.zeros((2, 104, 8, 8), np.float32))
    with pytest.raises(ValueError, match="shape"):
        net.forward_packed(np.zeros((2, 112), np.uint64), np.zeros((3, 112), np.float32))


def test_forward_into_fills_reused_buffers(maia_path):
    """The *_into forms write the same numbers as forward / forward_packed
    into the caller's arrays, call after call; bad buffers are refused."""
    net = load_network(maia_path, backend="cpu")
    boards = BOARDS[:5]
    masks, values, _ = encoder.encode_batch_packed(boards, net.input_format)
    want = net.forward_packed(masks, values)
    out = (net.host_empty((5, 1858)), net.host_empty((5, 3)), net.host_empty(5))
    for _ in range(2):
        for a in out:
            a[:] = np.nan
        assert net.forward_packed_into(masks, values, out) is not None
        for g, r in zip(out, want):
            np.testing.assert_array_equal(g, r)
    for a in out:
        a[:] = np.nan
    net.forward_into(encoder.encode_batch(boards, net.input_format), out)
    for g, r in zip(out, net.forward(encoder.encode_batch(boards, net.input_format))):
        np.testing.assert_array_equal(g, r)
    with pytest.raises(ValueError, match="policy must be a float32 array of shape"):
        net.forward_packed_into(masks, values, (np.zeros((4, 1858), np.float32), out[1], out[2]))
    net.close()
    with pytest.raises(RuntimeError, match="closed"):
        net.forward_packed_into(masks, values, out)


def test_autodiscovered_net(maia_path, tmp_path, monkeypatch):
    (tmp_path / "networks").mkdir()
    (tmp_path / "networks" / "net.pb.gz").write_bytes(maia_path.read_bytes())
    monkeypatch.setenv("LC0ROCM_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    net = load_network(backend="cpu")
    assert net.weights.path.endswith("net.pb.gz")


def test_evaluation_fields():
    ev = Evaluation(policy={}, wdl=(0.5, 0.3, 0.2), moves_left=None)
    assert ev.q == pytest.approx(0.3) and ev.d == 0.3


def test_loading_a_large_net_reports_progress(maia_path, monkeypatch, capsys):
    """Issue 10.8: nets over LARGE_NET_BYTES (bt4 takes ~5 s) say what is
    happening, a line per step when stderr is not a terminal."""
    from lc0_rocm import network
    monkeypatch.setattr(network, "LARGE_NET_BYTES", 0)
    load_network(maia_path, backend="cpu").close()
    steps = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 1)[1].split()[0] for line in steps] == ["reading", "setting", "ready"]
    assert steps[0].startswith(f"loading {maia_path.name}: reading 1 MB")
