"""Random convolution-body test nets (ResNets, SE-ResNets) in lc0's format.

Scales: 3x3 and 1x1 convolutions and dense layers draw He-like weights
(std sqrt(2 / fan_in)) and carry batch norm with means near 0, variances
near 1 (`bn_stddivs` holds the variance), gammas near 1 and small betas, so
every layer's output stays in a unit range. Output layers are drawn smaller
so that policy logits spread over a few units (policy far from one-hot) and
WDL stays away from 0 and 1.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from lc0_rocm._proto import net_pb2
from lc0_rocm.makenet import fill_layer, new_net, preset
from lc0_rocm.sizes import NUM_PLANES, POLICY_SIZE, SQUARES

NF = net_pb2.NetworkFormat
RULE50_PLANE = 109


@dataclasses.dataclass
class ResNetShape:
    blocks: int
    filters: int
    se: bool = True
    policy: str = "convolution"   # convolution | classical | attention
    value: str = "wdl"            # wdl | classical
    moves_left: bool = True
    activation: str = "relu"      # relu | mish
    conv_biases: bool = False     # convolution biases next to batch norm (folded by lc0)
    input_format: int = NF.INPUT_CLASSICAL_112_PLANE
    policy_embedding: int = 32    # attention policy: embedding size
    policy_d_model: int = 32      # attention policy: query/key size
    policy_encoders: int = 0      # attention policy: encoder layers before Q/K (lc0 "apmish" nets)
    policy_heads: int = 4         # attention policy: heads of those encoder layers
    head_channels: int = 32       # classical policy and value 1x1 convolution outputs
    value_hidden: int = 128
    moves_left_channels: int = 8
    moves_left_hidden: int = 128


def normal(rng, shape, std):
    return (rng.standard_normal(shape) * std).astype(np.float32)


def input_plane_scale() -> np.ndarray:
    """Per-input-plane weight factor: the rule-50 plane carries raw ply counts
    (up to ~100) where every other plane is 0/1, so its weights are drawn
    1/100 as large to keep high-rule-50 positions in range."""
    scale = np.ones(NUM_PLANES, np.float32)
    scale[RULE50_PLANE] = 0.01
    return scale


def fill_conv(block, rng, outputs, inputs, kernel, *, batch_norm=True, biases=False,
              gain=2.0, bias_std=0.1, plane_scale=None):
    """A ConvBlock with He-like weights and, when asked, lc0-style batch norm."""
    fan_in = inputs * kernel * kernel
    weights = normal(rng, (outputs, inputs, kernel, kernel), np.sqrt(gain / fan_in))
    if plane_scale is not None:
        weights *= plane_scale[None, :, None, None]
    fill_layer(block.weights, weights)
    if biases or not batch_norm:
        fill_layer(block.biases, normal(rng, outputs, bias_std))
    if batch_norm:
        fill_layer(block.bn_means, normal(rng, outputs, 0.1))
        fill_layer(block.bn_stddivs, rng.uniform(0.5, 1.5, outputs))
        fill_layer(block.bn_gammas, rng.uniform(0.8, 1.2, outputs))
        fill_layer(block.bn_betas, normal(rng, outputs, 0.1))


def fill_dense(w_layer, b_layer, rng, outputs, inputs, *, gain=2.0, bias_std=0.05, bias_mean=0.0):
    fill_layer(w_layer, normal(rng, (outputs, inputs), np.sqrt(gain / inputs)))
    if b_layer is not None:
        fill_layer(b_layer, normal(rng, outputs, bias_std) + np.float32(bias_mean))


def build_resnet(rng, shape: ResNetShape) -> net_pb2.Net:
    # lc0 runs the input convolution only when there are residual blocks.
    if shape.blocks < 1 or shape.filters < 1:
        raise ValueError(f"blocks and filters must be >= 1, got {shape.blocks}, {shape.filters}")
    network = NF.NETWORK_SE_WITH_HEADFORMAT if shape.se else NF.NETWORK_CLASSICAL_WITH_HEADFORMAT
    policy = {"convolution": NF.POLICY_CONVOLUTION, "classical": NF.POLICY_CLASSICAL,
              "attention": NF.POLICY_ATTENTION}[shape.policy]
    value = NF.VALUE_WDL if shape.value == "wdl" else NF.VALUE_CLASSICAL
    activation = NF.DEFAULT_ACTIVATION_MISH if shape.activation == "mish" else NF.DEFAULT_ACTIVATION_RELU
    net = new_net(network, policy, value,
                  NF.MOVES_LEFT_V1 if shape.moves_left else NF.MOVES_LEFT_NONE,
                  input_format=shape.input_format, default_activation=activation)
    if shape.value != "wdl":
        net.format.network_format.output = NF.OUTPUT_CLASSICAL
    w = net.weights
    c, bias = shape.filters, shape.conv_biases

    fill_conv(w.input, rng, c, NUM_PLANES, 3, biases=bias, plane_scale=input_plane_scale())
    for _ in range(shape.blocks):
        res = w.residual.add()
        fill_conv(res.conv1, rng, c, c, 3, biases=bias)
        # A residual branch drawn smaller keeps the stream's scale flat over depth.
        fill_conv(res.conv2, rng, c, c, 3, biases=bias, gain=0.5)
        if shape.se:
            hidden = max(2, c // 4)
            fill_dense(res.se.w1, res.se.b1, rng, hidden, c)
            fill_dense(res.se.w2, res.se.b2, rng, 2 * c, hidden, gain=1.0)

    add_policy_head(w, rng, shape)
    add_value_head(w, rng, shape)
    if shape.moves_left:
        fill_conv(w.moves_left, rng, shape.moves_left_channels, c, 1, biases=bias)
        fill_dense(w.ip1_mov_w, w.ip1_mov_b, rng, shape.moves_left_hidden,
                   shape.moves_left_channels * SQUARES)
        # Bias well above 0 so the ReLU'd output is a plausible ply count that varies.
        fill_dense(w.ip2_mov_w, w.ip2_mov_b, rng, 1, shape.moves_left_hidden,
                   gain=20.0, bias_std=1.0, bias_mean=40.0)
    return net


def add_policy_head(w, rng, shape: ResNetShape) -> None:
    c = shape.filters
    if shape.policy == "convolution":
        fill_conv(w.policy1, rng, c, c, 3, biases=shape.conv_biases)
        fill_conv(w.policy, rng, 80, c, 3, batch_norm=False, gain=2.0, bias_std=0.5)
    elif shape.policy == "classical":
        fill_conv(w.policy, rng, shape.head_channels, c, 1, biases=shape.conv_biases)
        fill_dense(w.ip_pol_w, w.ip_pol_b, rng, POLICY_SIZE, shape.head_channels * SQUARES,
                   gain=2.0, bias_std=0.5)
    else:  # attention policy on a convolution body (lc0's "apmish" layout)
        emb, d = shape.policy_embedding, shape.policy_d_model
        fill_dense(w.ip_pol_w, w.ip_pol_b, rng, emb, c, gain=1.0)
        if shape.policy_encoders:
            if emb % shape.policy_heads:
                raise ValueError(f"policy embedding {emb} is not a multiple of {shape.policy_heads} heads")
            w.pol_headcount = shape.policy_heads
            for _ in range(shape.policy_encoders):
                fill_encoder_layer(w.pol_encoder.add(), rng, emb, 2 * emb)
        # Query and key gains that spread Q.K / sqrt(d) over a few units: the
        # SELU embedding is small, an encoder's layer-normed output about 1.
        gain = 2.0 if shape.policy_encoders else 8.0
        fill_dense(w.ip2_pol_w, w.ip2_pol_b, rng, d, emb, gain=gain)
        fill_dense(w.ip3_pol_w, w.ip3_pol_b, rng, d, emb, gain=gain)
        fill_dense(w.ip4_pol_w, None, rng, 4, d, gain=1.0)


def fill_norm(gammas, betas, rng, n):
    fill_layer(gammas, normal(rng, n, 0.1) + np.float32(1))
    fill_layer(betas, normal(rng, n, 0.1))


def fill_encoder_layer(layer, rng, width, dff) -> None:
    """One post-LN encoder layer: MHA (no smolgen), layer norm, FFN, layer norm."""
    mha = layer.mha
    for w, b in ((mha.q_w, mha.q_b), (mha.k_w, mha.k_b), (mha.v_w, mha.v_b), (mha.dense_w, mha.dense_b)):
        fill_dense(w, b, rng, width, width, gain=1.0)
    fill_norm(layer.ln1_gammas, layer.ln1_betas, rng, width)
    fill_dense(layer.ffn.dense1_w, layer.ffn.dense1_b, rng, dff, width, gain=1.0)
    fill_dense(layer.ffn.dense2_w, layer.ffn.dense2_b, rng, width, dff, gain=1.0)
    fill_norm(layer.ln2_gammas, layer.ln2_betas, rng, width)


def add_value_head(w, rng, shape: ResNetShape) -> None:
    channels = shape.head_channels
    fill_conv(w.value, rng, channels, shape.filters, 1, biases=shape.conv_biases)
    fill_dense(w.ip1_val_w, w.ip1_val_b, rng, shape.value_hidden, channels * SQUARES)
    outputs = 3 if shape.value == "wdl" else 1
    fill_dense(w.ip2_val_w, w.ip2_val_b, rng, outputs, shape.value_hidden, gain=0.5, bias_std=0.2)


def _shape(defaults: dict, blocks, filters, input_format, heads) -> ResNetShape:
    shape = ResNetShape(**defaults)
    if heads is not None:
        if not shape.policy_encoders:
            raise ValueError("--heads applies only to presets with policy encoder layers")
        shape.policy_heads = heads
    if blocks is not None:
        shape.blocks = blocks
    if filters is not None:
        shape.filters = filters
    if input_format is not None:
        shape.input_format = input_format
    return shape


def _register(name: str, help: str, **defaults):
    @preset(name, help)
    def build(rng, blocks=None, filters=None, input_format=None, heads=None):
        return build_resnet(rng, _shape(defaults, blocks, filters, input_format, heads))
    build.__name__ = "build_" + name.replace("-", "_")
    return build


_register("resnet-se", "SE-ResNet 10x128, convolution policy, WDL, moves-left",
          blocks=10, filters=128)
_register("tiny-resnet", "SE-ResNet 2x16, convolution policy, WDL, moves-left (fast tests)",
          blocks=2, filters=16)
_register("tiny-resnet-classical",
          "plain ResNet 2x16 (no SE), classical policy, classical value, no moves-left",
          blocks=2, filters=16, se=False, policy="classical", value="classical", moves_left=False)
_register("tiny-resnet-mish",
          "SE-ResNet 2x16, MISH activation, convolution biases next to batch norm",
          blocks=2, filters=16, activation="mish", conv_biases=True)
_register("tiny-resnet-attnpolicy",
          "SE-ResNet 2x16 with an attention policy head (SELU embedding, one encoder layer "
          "of 4 heads), WDL, moves-left",
          blocks=2, filters=16, policy="attention", policy_encoders=1)
