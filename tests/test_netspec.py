"""NetSpec facts for maia-1900 and generated nets of every preset."""
from __future__ import annotations

import pytest

from lc0_rocm._proto import net_pb2
from lc0_rocm.netspec import NetSpec
from lc0_rocm.weights import load_weights

NF = net_pb2.NetworkFormat




def test_maia_spec(maia_path):
    spec = NetSpec.from_weights(load_weights(maia_path))
    assert spec.body == "resnet"
    assert (spec.blocks, spec.filters, spec.se, spec.se_channels) == (6, 64, True, 8)
    assert spec.policy == "convolution" and spec.policy_channels == 80
    assert spec.value == "wdl" and spec.value_channels == 32 and spec.value_hidden == 128
    assert not spec.moves_left and not spec.multihead
    assert spec.input_format == NF.INPUT_CLASSICAL_112_PLANE
    assert spec.input_embedding == "none" and spec.encoder_layers == 0
    assert spec.default_activation == NF.ACTIVATION_RELU
    assert spec.policy_heads == ("vanilla",) and spec.value_heads == ("winner",)


def test_spec_is_frozen(maia_path):
    spec = NetSpec.from_weights(load_weights(maia_path))
    with pytest.raises(Exception):
        spec.filters = 1


def spec_of(make_test_net, preset, **shape):
    return NetSpec.from_weights(load_weights(make_test_net(preset, **shape)))


def test_tiny_attention_spec(make_test_net):
    spec = spec_of(make_test_net, "tiny-attn")
    assert spec.body == "attention" and spec.blocks == 0 and spec.filters == 0
    assert spec.input_embedding == "pe_map" and spec.embedding_inputs == 112 + 64
    assert spec.encoder_layers == 2 and spec.embedding_size == 64 and spec.heads == 4
    assert spec.d_model % spec.heads == 0 and spec.dff > 0
    assert spec.has_smolgen and spec.smolgen_gen_size > 0 and spec.smolgen_hidden_channels > 0
    assert spec.encoder_alpha == pytest.approx((2 * 2) ** -0.25)
    assert spec.layer_norm_epsilon == 1e-6
    assert spec.policy == "attention" and spec.policy_d_model > 0
    assert spec.policy_encoder_layers >= 1 and spec.policy_encoder_heads > 0
    assert spec.policy_encoder_alpha == 1.0 and spec.policy_layer_norm_epsilon == 1e-6
    # Attention-body heads use the net's own activations.
    assert spec.policy_embedding_activation == spec.default_activation
    assert spec.policy_encoder_ffn_activation == spec.ffn_activation
    assert spec.policy_encoder_smolgen_activation == spec.smolgen_activation
    assert NF.ACTIVATION_DEFAULT not in (spec.ffn_activation, spec.smolgen_activation)


def test_tiny_bt_spec(make_test_net):
    spec = spec_of(make_test_net, "tiny-bt")
    assert spec.multihead and spec.network == NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT
    assert spec.input_embedding == "pe_dense" and spec.layer_norm_epsilon == 1e-3
    assert spec.embedding_inputs == 112 + spec.pe_dense_channels and spec.embedding_dff > 0
    assert spec.policy_heads[0] == "vanilla" and spec.value_heads[0] == "winner"
    assert len(spec.policy_heads) > 1 and len(spec.value_heads) > 1


def test_attention_policy_on_resnet_uses_selu(make_test_net):
    spec = spec_of(make_test_net, "tiny-resnet-attnpolicy")
    assert spec.body == "resnet" and spec.policy == "attention"
    assert spec.policy_embedding_activation == NF.ACTIVATION_SELU
    assert spec.policy_encoder_ffn_activation == NF.ACTIVATION_SELU
    assert spec.policy_encoder_smolgen_activation == NF.ACTIVATION_NONE
    assert spec.default_activation == NF.ACTIVATION_RELU


def test_mish_default(make_test_net):
    spec = spec_of(make_test_net, "tiny-resnet-mish")
    assert spec.default_activation == NF.ACTIVATION_MISH


def test_classical_heads(make_test_net):
    spec = spec_of(make_test_net, "tiny-resnet-classical")
    assert (spec.policy, spec.value, spec.se, spec.moves_left) == ("classical", "classical",
                                                                   False, False)
    assert spec.policy_channels > 0 and spec.se_channels == 0


def rewrite_format(tmp_path, source, **fields):
    import gzip
    net = net_pb2.Net()
    net.ParseFromString(gzip.decompress(source.read_bytes()))
    nf = net.format.network_format
    for key, value in fields.items():
        setattr(nf, key, value)
    path = tmp_path / "rewritten.pb.gz"
    path.write_bytes(gzip.compress(net.SerializeToString()))
    return NetSpec.from_weights(load_weights(path))


def test_default_activations_resolve(make_test_net, tmp_path):
    source = make_test_net("tiny-attn")
    spec = rewrite_format(tmp_path, source, default_activation=NF.DEFAULT_ACTIVATION_MISH,
                          ffn_activation=NF.ACTIVATION_DEFAULT,
                          smolgen_activation=NF.ACTIVATION_DEFAULT)
    assert spec.default_activation == spec.ffn_activation == spec.smolgen_activation \
        == NF.ACTIVATION_MISH
    spec = rewrite_format(tmp_path, source, default_activation=NF.DEFAULT_ACTIVATION_RELU,
                          ffn_activation=NF.ACTIVATION_RELU_2,
                          smolgen_activation=NF.ACTIVATION_DEFAULT)
    assert spec.default_activation == spec.smolgen_activation == NF.ACTIVATION_RELU
    assert spec.ffn_activation == NF.ACTIVATION_RELU_2


def test_explicit_none_embedding_is_pe_map(make_test_net, tmp_path):
    # lc0's eigen backend concatenates the PE_MAP encoding unless PE_DENSE.
    source = make_test_net("tiny-attn")
    spec = rewrite_format(tmp_path, source, input_embedding=NF.INPUT_EMBEDDING_NONE)
    assert spec.input_embedding == "pe_map" and spec.embedding_inputs == 176


@pytest.mark.slow
@pytest.mark.parametrize("preset,size,layers,heads,embedding", [
    ("t82", 768, 15, 24, "pe_map"), ("bt4", 1024, 15, 32, "pe_dense")])
def test_big_presets(make_test_net, preset, size, layers, heads, embedding):
    spec = spec_of(make_test_net, preset)
    assert (spec.embedding_size, spec.encoder_layers, spec.heads) == (size, layers, heads)
    assert spec.input_embedding == embedding and spec.has_smolgen
    assert spec.multihead == (preset == "bt4")


@pytest.mark.slow
def test_resnet_se_preset(make_test_net):
    spec = spec_of(make_test_net, "resnet-se")
    assert (spec.blocks, spec.filters, spec.se, spec.moves_left) == (10, 128, True, True)
    assert spec.moves_left_channels > 0 and spec.moves_left_hidden > 0


def test_se_follows_the_blocks_not_the_format(tmp_path):
    # lc0 applies an SE unit wherever a block has one, whatever the network
    # enum says; an old file without a format keeps its SE units.
    import gzip

    import numpy as np

    from lc0_rocm.makenet.resnet import ResNetShape, build_resnet
    net = build_resnet(np.random.default_rng(4), ResNetShape(
        blocks=2, filters=16, se=True, policy="classical", value="classical", moves_left=False))
    net.format.ClearField("network_format")
    path = tmp_path / "old-se.pb.gz"
    path.write_bytes(gzip.compress(net.SerializeToString()))
    spec = NetSpec.from_weights(load_weights(path))
    assert spec.network == NF.NETWORK_CLASSICAL_WITH_HEADFORMAT
    assert spec.se and spec.se_channels > 0
    assert (spec.policy, spec.value) == ("classical", "classical")


def test_backends_take_the_implicit_facts_from_netspec():
    """Activations and epsilons the file leaves implicit are resolved in
    netspec.py alone: no backend module resolves DEFAULT or spells an
    epsilon of its own."""
    import pathlib
    import re
    backends = pathlib.Path(__file__).resolve().parent.parent / "lc0_rocm" / "backends"
    for path in sorted(backends.glob("*.py")):
        text = path.read_text()
        assert "ACTIVATION_DEFAULT" not in text and "DEFAULT_ACTIVATION_" not in text, path.name
        assert not re.search(r"EPS\w* = |\b1e-[356]\b", text), path.name
