"""Convolution-body test-net presets: lc0 v0.32.1 loads and evaluates every
one, the shape options take effect, and generation is reproducible."""
from __future__ import annotations

import numpy as np
import pytest

from lc0_rocm._proto import net_pb2
from lc0_rocm.makenet import PRESETS, save_net
from lc0_rocm.makenet import resnet
from lc0_rocm.weights import load_weights
from oracle import game_state, lb

NF = net_pb2.NetworkFormat
RESNET_PRESETS = ["resnet-se", "tiny-resnet", "tiny-resnet-classical", "tiny-resnet-mish",
                  "tiny-resnet-attnpolicy"]

# preset -> (blocks, filters, SE, policy, value, moves-left, activation)
EXPECTED = {
    "resnet-se": (10, 128, True, NF.POLICY_CONVOLUTION, NF.VALUE_WDL, True, NF.DEFAULT_ACTIVATION_RELU),
    "tiny-resnet": (2, 16, True, NF.POLICY_CONVOLUTION, NF.VALUE_WDL, True, NF.DEFAULT_ACTIVATION_RELU),
    "tiny-resnet-classical": (2, 16, False, NF.POLICY_CLASSICAL, NF.VALUE_CLASSICAL, False,
                              NF.DEFAULT_ACTIVATION_RELU),
    "tiny-resnet-mish": (2, 16, True, NF.POLICY_CONVOLUTION, NF.VALUE_WDL, True, NF.DEFAULT_ACTIVATION_MISH),
    "tiny-resnet-attnpolicy": (2, 16, True, NF.POLICY_ATTENTION, NF.VALUE_WDL, True,
                               NF.DEFAULT_ACTIVATION_RELU),
}


def build(tmp_path, preset, seed=0, **shape):
    net = PRESETS[preset](np.random.default_rng(seed), **shape)
    return save_net(net, tmp_path / f"{preset}-{seed}.pb.gz")


def lc0_evaluates(path):
    """lc0 v0.32.1 loads the file and its eigen backend evaluates a position."""
    import chess
    weights = lb.Weights(str(path))
    backend = lb.Backend(weights=weights, backend="eigen")
    out = backend.evaluate(game_state(chess.Board()).as_input(backend))[0]
    logits = np.array(out.p_raw(*range(1858)))
    assert np.isfinite(logits).all() and np.isfinite([out.q(), out.d(), out.m()]).all()
    return weights


def test_every_resnet_preset_is_registered():
    assert set(RESNET_PRESETS) <= set(PRESETS)


@pytest.mark.parametrize("preset", RESNET_PRESETS)
def test_preset_loads_in_lc0_with_the_promised_shape(tmp_path, preset):
    path = build(tmp_path, preset)
    blocks, filters, se, policy, value, moves_left, activation = EXPECTED[preset]
    lc0_weights = lc0_evaluates(path)
    assert lc0_weights.blocks() == blocks
    assert lc0_weights.policy_format() == policy and lc0_weights.value_format() == value
    assert lc0_weights.moves_left_format() == (NF.MOVES_LEFT_V1 if moves_left else NF.MOVES_LEFT_NONE)

    ours = load_weights(path)
    fmt, net = ours.format, ours.net
    assert fmt.network == (NF.NETWORK_SE_WITH_HEADFORMAT if se else NF.NETWORK_CLASSICAL_WITH_HEADFORMAT)
    assert fmt.default_activation == activation
    assert len(net.residual) == blocks and net.input.bn_means.size == filters
    assert all((r.se is not None) == se for r in net.residual)
    assert net.input.weights.size == filters * 112 * 9


@pytest.mark.parametrize("blocks,filters", [(1, 8), (3, 24)])
def test_shape_options(tmp_path, blocks, filters):
    path = build(tmp_path, "tiny-resnet", blocks=blocks, filters=filters)
    lc0_evaluates(path)
    net = load_weights(path).net
    assert len(net.residual) == blocks
    assert net.input.bn_means.size == filters and net.policy1.bn_means.size == filters


def test_attention_policy_preset_has_a_policy_encoder_and_takes_heads(tmp_path):
    net = load_weights(build(tmp_path, "tiny-resnet-attnpolicy")).net
    assert len(net.pol_encoder) == 1 and net.pol_headcount == 4
    path = build(tmp_path, "tiny-resnet-attnpolicy", seed=1, heads=2)
    lc0_evaluates(path)
    assert load_weights(path).net.pol_headcount == 2
    with pytest.raises(ValueError, match="multiple of 5 heads"):
        PRESETS["tiny-resnet-attnpolicy"](np.random.default_rng(0), heads=5)


def test_input_format_option(tmp_path):
    path = build(tmp_path, "tiny-resnet", input_format=NF.INPUT_112_WITH_CASTLING_PLANE)
    assert lc0_evaluates(path).input_format() == NF.INPUT_112_WITH_CASTLING_PLANE
    assert load_weights(path).format.input == NF.INPUT_112_WITH_CASTLING_PLANE


def test_bad_shape_options_are_rejected():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="heads"):
        PRESETS["tiny-resnet"](rng, heads=4)
    with pytest.raises(ValueError, match="filters"):
        PRESETS["tiny-resnet"](rng, filters=0)
    with pytest.raises(ValueError, match="blocks"):
        PRESETS["tiny-resnet"](rng, blocks=0)


def test_same_seed_same_net_other_seed_other_net(tmp_path):
    a = PRESETS["tiny-resnet"](np.random.default_rng(7)).SerializeToString()
    b = PRESETS["tiny-resnet"](np.random.default_rng(7)).SerializeToString()
    c = PRESETS["tiny-resnet"](np.random.default_rng(8)).SerializeToString()
    assert a == b and a != c


def test_batch_norm_variances_near_one_and_rule50_weights_small(tmp_path):
    net = load_weights(build(tmp_path, "tiny-resnet")).net
    for block in [net.input] + [r.conv1 for r in net.residual]:
        assert 0.4 < block.bn_stddivs.min() and block.bn_stddivs.max() < 1.6
    w = net.input.weights.reshape(16, 112, 3, 3)
    # The raw rule-50 plane (values up to ~100) gets weights 100x smaller.
    assert np.abs(w[:, resnet.RULE50_PLANE]).max() < 0.1 * np.abs(w[:, :104]).std()


def test_make_net_command_writes_a_loadable_file(tmp_path):
    from lc0_rocm.makenet import main
    out = tmp_path / "cli.pb.gz"
    assert main(["tiny-resnet-mish", "-o", str(out), "--seed", "3", "--blocks", "1"]) == 0
    lc0_evaluates(out)
    assert len(load_weights(out).net.residual) == 1
