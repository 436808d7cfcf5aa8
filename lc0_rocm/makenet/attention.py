"""Random attention-body test nets: `t82`, `bt4`, `tiny-attn`, `tiny-bt`.

Shapes follow the lc0 networks they are named after (read off lc0's loader
and backends, and the published BT4 weights):
- T82: 768 embedding, 15 encoder layers, 24 heads, FFN 1024, smolgen (32
  compressed channels per square, 256 hidden, 256 generated per head), PE_MAP
  input embedding with input gating, single attention policy head, WDL value
  and moves-left heads; default activation MISH, smolgen SWISH, FFN squared
  ReLU (what lc0 assumes for such files written with the old SE header).
  The head widths (value 32 channels per square, moves-left 8) are typical
  values, not read off a T82 file.
- BT4: 1024 embedding, 15 layers, 32 heads, FFN 1536, smolgen (32, 256, 256),
  PE_DENSE input embedding (the 64 x 12 piece inputs -> 512 channels per
  square, concatenated to the 112 planes; layer norm, gating, embedding FFN),
  multi-head format: policy heads vanilla, optimistic_st, soft, opponent over
  one shared embedding; value heads winner, q, st (q and st with value-error
  and categorical outputs); moves-left head; MISH everywhere except SWISH
  smolgen. Written with NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT and
  PE_DENSE set explicitly (the published file leaves lc0 to infer both).
- tiny-attn / tiny-bt: the same two families at a size for fast tests (tiny-attn
  also carries one policy encoder layer).

Weights are normal with std gain / sqrt(fan_in), so every layer sees inputs of
about unit scale; layer norms start near identity. The draws are vectorised
per tensor, so a 190M-parameter net takes seconds.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from lc0_rocm._proto import net_pb2
from lc0_rocm.makenet import fill_layer, new_net, preset
from lc0_rocm.sizes import NUM_PLANES, SQUARES

NF = net_pb2.NetworkFormat
PIECE_PLANES = 12


@dataclasses.dataclass
class AttentionShape:
    embedding: int
    layers: int
    heads: int
    dff: int
    smolgen: tuple[int, int, int] | None   # (compressed channels, hidden, generated per head)
    pe_dense: bool
    pe_dense_channels: int = 8             # PE_DENSE: channels per square from the preprocess
    embedding_dff: int = 0                 # PE_DENSE: embedding FFN width
    gates: bool = True
    policy_width: int = 0                  # policy embedding and Q/K width (0: embedding)
    policy_encoders: int = 0
    policy_heads: int = 0
    value_channels: int = 32
    value_hidden: int = 128
    moves_left_channels: int = 8
    moves_left_hidden: int = 128
    multihead: bool = False
    default_activation: int = NF.DEFAULT_ACTIVATION_MISH
    smolgen_activation: int = NF.ACTIVATION_SWISH
    ffn_activation: int = NF.ACTIVATION_RELU_2

    def encoder_flop_per_position(self) -> float:
        """FLOP (2 per multiply-add) of one position through the encoder
        layers: Q, K, V, output and the FFN's two products on each of the 64
        squares, the attention's Q . K^T and p . V, and smolgen's compress,
        dense1, dense2 and generator (t82 8.60 G, bt4 15.49 G). The input
        embedding and the heads are left out (issue 9's ~8.7 and ~16 count
        them), so a compute ceiling drawn from this count is a little high,
        and a fraction of that ceiling errs against us."""
        e = self.embedding
        macs = SQUARES * (4 * e * e + 2 * e * self.dff)  # Q, K, V, output; FFN first and second
        macs += 2 * SQUARES * SQUARES * e  # Q . K^T and p . V over every head (depth e / heads each)
        if self.smolgen is not None:
            channels, hidden, gen = self.smolgen
            macs += SQUARES * e * channels  # compress
            macs += SQUARES * channels * hidden  # dense1
            macs += hidden * self.heads * gen  # dense2
            macs += self.heads * gen * SQUARES * SQUARES  # the generator: a 64 x 64 bias a head
        return 2.0 * macs * self.layers


class Drawer:
    """Fills Layer messages with random values at sensible scales."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def normal(self, size: int, std: float, mean: float = 0.0) -> np.ndarray:
        values = self.rng.standard_normal(size, dtype=np.float32)
        values *= np.float32(std)
        values += np.float32(mean)
        return values

    def dense(self, w, b, n_in: int, n_out: int, gain: float = 1.0, bias_std: float = 0.1,
              fan_in: int | None = None, bias_mean: float = 0.0) -> None:
        fill_layer(w, self.normal(n_in * n_out, gain / np.sqrt(fan_in or n_in)))
        if b is not None:
            fill_layer(b, self.normal(n_out, bias_std, bias_mean))

    def norm(self, gammas, betas, n: int) -> None:
        fill_layer(gammas, self.normal(n, 0.1, 1.0))
        fill_layer(betas, self.normal(n, 0.1))

    def encoder_layer(self, layer, width: int, heads: int, dff: int, smolgen) -> None:
        mha = layer.mha
        for w, b in ((mha.q_w, mha.q_b), (mha.k_w, mha.k_b), (mha.v_w, mha.v_b)):
            self.dense(w, b, width, width)
        self.dense(mha.dense_w, mha.dense_b, width, width)
        if smolgen is not None:
            channels, hidden, gen = smolgen
            sg = mha.smolgen
            fill_layer(sg.compress, self.normal(width * channels, 1 / np.sqrt(width)))
            self.dense(sg.dense1_w, sg.dense1_b, SQUARES * channels, hidden)
            self.norm(sg.ln1_gammas, sg.ln1_betas, hidden)
            self.dense(sg.dense2_w, sg.dense2_b, hidden, heads * gen)
            self.norm(sg.ln2_gammas, sg.ln2_betas, heads * gen)
        self.norm(layer.ln1_gammas, layer.ln1_betas, width)
        self.dense(layer.ffn.dense1_w, layer.ffn.dense1_b, width, dff)
        self.dense(layer.ffn.dense2_w, layer.ffn.dense2_b, dff, width)
        self.norm(layer.ln2_gammas, layer.ln2_betas, width)

    def policy_qk(self, head, width: int, d: int) -> None:
        """Query, key and promotion weights of one attention policy head."""
        # Gain 1.8 on Q and K spreads the logits to a std of about 1.
        self.dense(head.ip2_pol_w, head.ip2_pol_b, width, d, gain=1.8)
        self.dense(head.ip3_pol_w, head.ip3_pol_b, width, d, gain=1.8)
        fill_layer(head.ip4_pol_w, self.normal(4 * d, 1 / np.sqrt(d)))

    def value_head(self, head, embedding: int, shape: AttentionShape, extras: bool = False) -> None:
        self.dense(head.ip_val_w, head.ip_val_b, embedding, shape.value_channels)
        self.dense(head.ip1_val_w, head.ip1_val_b, SQUARES * shape.value_channels, shape.value_hidden)
        self.dense(head.ip2_val_w, head.ip2_val_b, shape.value_hidden, 3, gain=1.5)
        if extras:  # BT4's q and st heads also carry value-error and categorical outputs
            self.dense(head.ip_val_err_w, head.ip_val_err_b, shape.value_hidden, 1)
            self.dense(head.ip_val_cat_w, head.ip_val_cat_b, shape.value_hidden, 32)


def build(rng: np.random.Generator, shape: AttentionShape, input_format: int = 1) -> net_pb2.Net:
    """A complete random net of `shape` as an lc0 Net message."""
    network = (NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT if shape.multihead
               else NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT)
    net = new_net(
        network, NF.POLICY_ATTENTION, NF.VALUE_WDL, NF.MOVES_LEFT_V1, input_format,
        default_activation=shape.default_activation,
        smolgen_activation=shape.smolgen_activation,
        ffn_activation=shape.ffn_activation,
        input_embedding=(NF.INPUT_EMBEDDING_PE_DENSE if shape.pe_dense else NF.INPUT_EMBEDDING_PE_MAP),
    )
    w = net.weights
    draw = Drawer(rng)
    e = shape.embedding

    # Input embedding.
    if shape.pe_dense:
        pe = shape.pe_dense_channels
        # About 32 of the 768 piece inputs are set: scale for those.
        draw.dense(w.ip_emb_preproc_w, w.ip_emb_preproc_b, SQUARES * PIECE_PLANES, SQUARES * pe, fan_in=32)
        draw.dense(w.ip_emb_w, w.ip_emb_b, NUM_PLANES + pe, e)
        draw.norm(w.ip_emb_ln_gammas, w.ip_emb_ln_betas, e)
        draw.dense(w.ip_emb_ffn.dense1_w, w.ip_emb_ffn.dense1_b, e, shape.embedding_dff)
        draw.dense(w.ip_emb_ffn.dense2_w, w.ip_emb_ffn.dense2_b, shape.embedding_dff, e)
        draw.norm(w.ip_emb_ffn_ln_gammas, w.ip_emb_ffn_ln_betas, e)
    else:
        draw.dense(w.ip_emb_w, w.ip_emb_b, NUM_PLANES + 64, e)   # PE_MAP: 64 positional channels
    if shape.gates:
        fill_layer(w.ip_mult_gate, draw.normal(e * SQUARES, 0.1, 1.0))
        fill_layer(w.ip_add_gate, draw.normal(e * SQUARES, 0.1))

    # Encoder stack.
    w.headcount = shape.heads
    for _ in range(shape.layers):
        draw.encoder_layer(w.encoder.add(), e, shape.heads, shape.dff, shape.smolgen)
    if shape.smolgen is not None:
        gen = shape.smolgen[2]
        fill_layer(w.smolgen_w, draw.normal(SQUARES * SQUARES * gen, 1 / np.sqrt(gen)))

    # Policy.
    p = shape.policy_width or e
    if shape.multihead:
        heads = w.policy_heads
        draw.dense(heads.ip_pol_w, heads.ip_pol_b, e, p)
        draw.policy_qk(heads.vanilla, p, p)
        draw.policy_qk(heads.optimistic_st, p, p)
        draw.policy_qk(heads.soft, p, max(p // 4, 1))
        draw.policy_qk(heads.opponent, p, max(p // 4, 1))
    else:
        draw.dense(w.ip_pol_w, w.ip_pol_b, e, p)
        if shape.policy_encoders:
            w.pol_headcount = shape.policy_heads
            for _ in range(shape.policy_encoders):
                draw.encoder_layer(w.pol_encoder.add(), p, shape.policy_heads, 2 * p, None)
        draw.policy_qk(w, p, p)

    # Value.
    if shape.multihead:
        draw.value_head(w.value_heads.winner, e, shape)
        draw.value_head(w.value_heads.q, e, shape, extras=True)
        draw.value_head(w.value_heads.st, e, shape, extras=True)
    else:
        draw.value_head(w, e, shape)

    # Moves left: a positive bias keeps the ReLU output alive (tens of plies).
    draw.dense(w.ip_mov_w, w.ip_mov_b, e, shape.moves_left_channels)
    draw.dense(w.ip1_mov_w, w.ip1_mov_b, SQUARES * shape.moves_left_channels, shape.moves_left_hidden)
    draw.dense(w.ip2_mov_w, w.ip2_mov_b, shape.moves_left_hidden, 1, gain=10.0, bias_std=0.0, bias_mean=40.0)
    return net


def reshape(base: AttentionShape, blocks=None, filters=None, heads=None) -> AttentionShape:
    """Apply the command line's shape options; widths scale with the embedding."""
    shape = dataclasses.replace(base)
    if blocks is not None:
        if blocks < 1:
            raise ValueError(f"blocks (encoder layers) must be at least 1, got {blocks}")
        shape.layers = blocks
    if heads is not None:
        if heads < 1:
            raise ValueError(f"heads must be at least 1, got {heads}")
        shape.heads = heads
    if filters is not None:
        if filters < 1:
            raise ValueError(f"filters (embedding size) must be at least 1, got {filters}")
        ratio = filters / base.embedding
        shape.embedding = filters
        shape.dff = max(1, round(base.dff * ratio))
        shape.embedding_dff = round(base.embedding_dff * ratio)
        shape.policy_width = round((base.policy_width or base.embedding) * ratio)
    if shape.embedding % shape.heads:
        raise ValueError(f"embedding {shape.embedding} is not divisible by {shape.heads} heads")
    if shape.policy_encoders and (shape.policy_width or shape.embedding) % shape.policy_heads:
        raise ValueError("policy width is not divisible by the policy encoder heads")
    return shape


T82 = AttentionShape(embedding=768, layers=15, heads=24, dff=1024, smolgen=(32, 256, 256), pe_dense=False,
                     value_channels=32, moves_left_channels=8)
BT4 = AttentionShape(embedding=1024, layers=15, heads=32, dff=1536, smolgen=(32, 256, 256), pe_dense=True,
                     pe_dense_channels=512, embedding_dff=1536, value_channels=128, moves_left_channels=32,
                     multihead=True, ffn_activation=NF.ACTIVATION_DEFAULT)
TINY_ATTN = AttentionShape(embedding=64, layers=2, heads=4, dff=128, smolgen=(8, 32, 16), pe_dense=False,
                           policy_encoders=1, policy_heads=2, value_channels=8, value_hidden=32,
                           moves_left_channels=4, moves_left_hidden=32)
TINY_BT = AttentionShape(embedding=64, layers=2, heads=4, dff=96, smolgen=(8, 32, 16), pe_dense=True,
                         pe_dense_channels=4, embedding_dff=96, value_channels=8, value_hidden=32,
                         moves_left_channels=4, moves_left_hidden=32, multihead=True,
                         ffn_activation=NF.ACTIVATION_DEFAULT)


def _register(name: str, base: AttentionShape, help: str) -> None:
    @preset(name, help)
    def make(rng, blocks=None, filters=None, heads=None, input_format=1):
        return build(rng, reshape(base, blocks, filters, heads), input_format)


_register("t82", T82, "T82-style attention body, 768 x 15 layers, 24 heads, smolgen, PE_MAP")
_register("bt4", BT4,
          "BT4-style attention body, 1024 x 15 layers, 32 heads, smolgen, PE_DENSE, multi-head")
_register("tiny-attn", TINY_ATTN, "small T82-style attention body (64 x 2, 4 heads, smolgen, policy encoder)")
_register("tiny-bt", TINY_BT, "small BT4-style attention body (64 x 2, 4 heads, smolgen, PE_DENSE, multi-head)")
