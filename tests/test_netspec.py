"""NetSpec facts for maia-1900 and generated nets of every preset."""
from __future__ import annotations

import pytest

from lc0_rocm._proto import net_pb2
from lc0_rocm.netspec import NetSpec
from lc0_rocm.weights import load_weights

NF = net_pb2.NetworkFormat


def preset_or_skip(make_test_net, name, **shape):
    import importlib

    from lc0_rocm import makenet
    for module in ("resnet", "attention"):
        try:
            importlib.import_module(f"lc0_rocm.makenet.{module}")
        except ImportError:
            pass  # that family's presets are not written yet
    if name not in makenet.PRESETS:
        pytest.skip(f"make-net preset {name!r} not available yet")
    return make_test_net(name, **shape)


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
