"""numpy float32 reference for attention-body nets (T79..T82, BT3/BT4).

Follows lc0 v0.32.1's eigen backend step by step (see docs/LC0-FACTS.md):
input embedding (PE_MAP or PE_DENSE), post-LN encoder layers with optional
smolgen, the attention policy head, the attention value and moves-left heads,
and lc0's choice of heads in multi-head files (policy `vanilla`, value
`winner` unless asked otherwise; `Weights.policy_head()`/`value_head()`
resolve them as lc0 does). Activations of an attention body's "flow" are
kept per square, shape (N, 64, C); heads flatten them square-major
(square * C + c). Every dense layer is one 2-D float32 GEMM over (N * 64, C).

What the file leaves implicit (activations, layer-norm epsilons, the
residual scale) comes resolved from the net's NetSpec. `AttentionPolicy` also
serves convolution bodies with an attention policy head (their NetSpec says
SELU there, as lc0 hard-codes it).
"""
from __future__ import annotations

import numpy as np

from lc0_rocm import tables
from lc0_rocm._proto import net_pb2
from lc0_rocm.backends import cpu_ops
from lc0_rocm.backends.base import BackendError, wdl_from_classical
from lc0_rocm.backends.pos_encoding import POS_ENCODING
from lc0_rocm.netspec import NetSpec
from lc0_rocm.sizes import NUM_PLANES, POLICY_SIZE, SQUARES
from lc0_rocm.weights import Node, WeightsError

NF = net_pb2.NetworkFormat
MAX_BATCH = 256           # chunk size that bounds the scratch memory per call
PE_DENSE_PLANES = 12      # PE_DENSE preprocesses the 12 piece planes of the newest board


# ----------------------------------------------------------------------------
# Activations
# ----------------------------------------------------------------------------

def mish(x: np.ndarray) -> np.ndarray:
    """mish(x) = x * tanh(softplus(x)) = x * n / (n + 2), n = e^x (e^x + 2): one
    exp instead of log and tanh. exp is clamped where the ratio is 1 in float32."""
    e = np.exp(np.minimum(x, np.float32(20)))
    n = e * (e + np.float32(2))
    x *= n / (n + np.float32(2))
    return x


def activation_fn(fn: int):
    """Activation for an ActivationFunction value; it may work in place."""
    if fn == NF.ACTIVATION_MISH:
        return mish
    try:
        return cpu_ops.activation(fn)
    except ValueError as e:
        raise WeightsError(f"attention net: {e}") from None


def is_empty(layer) -> bool:
    return layer is None or layer.size == 0


# ----------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------

class Dense:
    """y = act(x @ W^T + b) with lc0's [out][in] weights, over the last axis."""

    def __init__(self, w: np.ndarray, b: np.ndarray | None, name: str, n_in: int | None = None,
                 n_out: int | None = None):
        if is_empty(w):
            raise WeightsError(f"attention net: {name}: weights missing")
        if n_out is None:
            if is_empty(b):
                raise WeightsError(f"attention net: {name}: cannot infer the output size")
            n_out = b.size
        if n_in is None:
            n_in = w.size // n_out
        if w.size != n_in * n_out:
            raise WeightsError(f"attention net: {name}: {w.size} weights, expected {n_in} x {n_out}")
        if b is not None and b.size not in (0, n_out):
            raise WeightsError(f"attention net: {name}: {b.size} biases, expected {n_out}")
        # A transposed view: numpy hands it to BLAS without a copy.
        self.wt = w.reshape(n_out, n_in).T
        self.b = None if is_empty(b) else b
        self.n_in, self.n_out, self.name = n_in, n_out, name

    def __call__(self, x: np.ndarray, act=None) -> np.ndarray:
        if x.shape[-1] != self.n_in:
            raise BackendError(f"cpu backend: {self.name}: input width {x.shape[-1]}, expected {self.n_in}")
        # One 2-D GEMM: numpy runs a stacked (3-D) matmul as many small ones.
        y = np.matmul(x.reshape(-1, self.n_in), self.wt)
        if self.b is not None:
            y += self.b
            # Like lc0, a dense layer without biases applies no activation.
            if act is not None:
                y = act(y)
        return y.reshape(*x.shape[:-1], self.n_out)


def layer_norm(x, skip, alpha, gammas, betas, eps):
    """LN(alpha * x + skip) over the last axis, as lc0's LayerNorm2DWithSkipConnection."""
    if alpha != 1.0:
        x = x * np.float32(alpha)
    if skip is not None:
        x = x + skip
    return cpu_ops.layer_norm(x, gammas, betas, np.float32(eps)).astype(np.float32, copy=False)


class Smolgen:
    """Per-position attention logit offsets (N, heads, 64, 64), query square first."""

    def __init__(self, sg, global_w, embedding: int, heads: int, act: int, eps: float, name: str):
        if is_empty(global_w):
            raise WeightsError(f"attention net: {name}: smolgen weights but no global smolgen_w")
        if is_empty(sg.compress) or sg.compress.size % embedding:
            raise WeightsError(f"attention net: {name}.compress: size does not match embedding {embedding}")
        hidden_channels = sg.compress.size // embedding
        self.compress = Dense(sg.compress, None, f"{name}.compress", embedding, hidden_channels)
        self.dense1 = Dense(sg.dense1_w, sg.dense1_b, f"{name}.dense1", SQUARES * hidden_channels)
        self.dense2 = Dense(sg.dense2_w, sg.dense2_b, f"{name}.dense2", self.dense1.n_out)
        gen_total = self.dense2.n_out
        if gen_total % heads:
            raise WeightsError(f"attention net: {name}: {gen_total} outputs do not split over {heads} heads")
        self.gen = gen_total // heads
        self.global_dense = Dense(global_w, None, "smolgen_w", self.gen, SQUARES * SQUARES)
        self.ln1 = (sg.ln1_gammas, sg.ln1_betas)
        self.ln2 = (sg.ln2_gammas, sg.ln2_betas)
        self.heads, self.hidden_channels = heads, hidden_channels
        self.act = activation_fn(act)
        self.eps = eps

    def __call__(self, x: np.ndarray) -> np.ndarray:
        n = x.shape[0]
        compressed = self.compress(x).reshape(n, SQUARES * self.hidden_channels)
        hidden = self.dense1(compressed, self.act)
        hidden = layer_norm(hidden, None, 1.0, *self.ln1, self.eps)
        gen = self.dense2(hidden, self.act)
        gen = layer_norm(gen, None, 1.0, *self.ln2, self.eps)
        offsets = self.global_dense(gen.reshape(n, self.heads, self.gen))
        return offsets.reshape(n, self.heads, SQUARES, SQUARES)


class EncoderLayer:
    """Post-LN transformer layer: LN(alpha * MHA(x) + x), then LN(alpha * FFN(x) + x)."""

    def __init__(self, layer, embedding: int, heads: int, smolgen_act: int, ffn_act: int,
                 alpha: float, eps: float, smolgen_eps: float, smolgen_w, name: str):
        mha = layer.mha
        if mha is None or layer.ffn is None:
            raise WeightsError(f"attention net: {name}: encoder layer without mha or ffn")
        if any(not is_empty(getattr(mha, f)) for f in ("rpe_q", "rpe_k", "rpe_v")):
            raise WeightsError(f"attention net: {name}: RPE attention weights are not supported")
        if heads <= 0:
            raise WeightsError(f"attention net: {name}: head count {heads}")
        q = Dense(mha.q_w, mha.q_b, f"{name}.mha.q", embedding)
        k = Dense(mha.k_w, mha.k_b, f"{name}.mha.k", embedding)
        v = Dense(mha.v_w, mha.v_b, f"{name}.mha.v", embedding)
        self.d_model = q.n_out
        if self.d_model % heads:
            raise WeightsError(f"attention net: {name}: d_model {self.d_model} "
                               f"does not split over {heads} heads")
        if k.n_out != self.d_model or v.n_out != self.d_model:
            raise WeightsError(f"attention net: {name}: q, k, v widths differ")
        # One GEMM for q, k and v: the stacked [3 * d_model][in] weights.
        qkv_w = np.concatenate([mha.q_w, mha.k_w, mha.v_w])
        qkv_b = np.concatenate([mha.q_b, mha.k_b, mha.v_b])
        self.qkv = Dense(qkv_w, qkv_b, f"{name}.mha.qkv", embedding)
        self.out = Dense(mha.dense_w, mha.dense_b, f"{name}.mha.dense", self.d_model)
        self.ffn1 = Dense(layer.ffn.dense1_w, layer.ffn.dense1_b, f"{name}.ffn.dense1", embedding)
        self.ffn2 = Dense(layer.ffn.dense2_w, layer.ffn.dense2_b, f"{name}.ffn.dense2", self.ffn1.n_out)
        if self.out.n_out != embedding or self.ffn2.n_out != embedding:
            raise WeightsError(f"attention net: {name}: output width differs from embedding {embedding}")
        self.smolgen = None
        if mha.smolgen is not None:
            self.smolgen = Smolgen(mha.smolgen, smolgen_w, embedding, heads, smolgen_act,
                                   smolgen_eps, f"{name}.mha.smolgen")
        self.ln1 = (layer.ln1_gammas, layer.ln1_betas)
        self.ln2 = (layer.ln2_gammas, layer.ln2_betas)
        self.heads, self.depth = heads, self.d_model // heads
        self.ffn_act = activation_fn(ffn_act)
        self.alpha, self.eps = alpha, eps

    def __call__(self, x: np.ndarray) -> np.ndarray:
        n = x.shape[0]
        qkv = self.qkv(x).reshape(n, SQUARES, 3, self.heads, self.depth)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # (N, H, 64, depth)
        scores = np.matmul(q, k.transpose(0, 1, 3, 2))                      # [query][key]
        scores *= np.float32(1.0 / np.sqrt(np.float32(self.depth)))
        if self.smolgen is not None:
            scores += self.smolgen(x)
        weights = cpu_ops.softmax(scores, axis=-1)
        attn = np.matmul(weights, v).transpose(0, 2, 1, 3).reshape(n, SQUARES, self.d_model)
        x = layer_norm(self.out(attn), x, self.alpha, *self.ln1, self.eps)
        ffn = self.ffn2(self.ffn1(x, self.ffn_act))
        return layer_norm(ffn, x, self.alpha, *self.ln2, self.eps)


# ----------------------------------------------------------------------------
# Heads
# ----------------------------------------------------------------------------

class AttentionPolicy:
    """Attention policy head: embedding, optional encoder layers, Q.K^T / sqrt(d)
    for from-to moves plus promotion offsets, gathered into lc0's 1858 order."""

    def __init__(self, head: Node, spec: NetSpec, embedding: int, smolgen_w=None):
        """`head`: a policy head Node (Weights.policy_head()); `embedding`:
        the flow's channels per square."""
        self.embed = Dense(head.ip_pol_w, head.ip_pol_b, "policy.ip_pol", embedding)
        self.embed_act = activation_fn(spec.policy_embedding_activation)
        width = self.embed.n_out
        self.encoders = [
            EncoderLayer(layer, width, head.pol_headcount or 0, spec.policy_encoder_smolgen_activation,
                         spec.policy_encoder_ffn_activation, spec.policy_encoder_alpha,
                         spec.policy_layer_norm_epsilon, spec.smolgen_layer_norm_epsilon, smolgen_w,
                         f"policy.pol_encoder[{i}]")
            for i, layer in enumerate(head.pol_encoder or [])
        ]
        self.query = Dense(head.ip2_pol_w, head.ip2_pol_b, "policy.ip2_pol", width)
        self.key = Dense(head.ip3_pol_w, head.ip3_pol_b, "policy.ip3_pol", width)
        d = self.query.n_out
        if self.key.n_out != d:
            raise WeightsError("attention net: policy query and key widths differ")
        if is_empty(head.ip4_pol_w) or head.ip4_pol_w.size != 4 * d:
            raise WeightsError(f"attention net: policy.ip4_pol_w must hold 4 x {d} promotion weights")
        # Rows q, r, b, n: promotion offsets for q, r, b are row + knight row.
        ppo = head.ip4_pol_w.reshape(4, d)
        self.promotion_w = np.ascontiguousarray((ppo[:3] + ppo[3:]).T)        # (d, 3)
        self.scale = np.float32(1.0 / np.sqrt(np.float32(d)))

    def __call__(self, flow: np.ndarray) -> np.ndarray:
        """Policy logits (N, 1858) from a per-square flow (N, 64, C)."""
        flow = np.asarray(flow, dtype=np.float32)
        if flow.ndim != 3 or flow.shape[1] != SQUARES:
            raise BackendError(f"attention policy: flow must be (N, 64, C), got {flow.shape}")
        n = flow.shape[0]
        x = self.embed(flow, self.embed_act)
        for layer in self.encoders:
            x = layer(x)
        q, k = self.query(x), self.key(x)
        qk = np.matmul(q, k.transpose(0, 2, 1))                           # [from][to]
        qk *= self.scale
        # Promotions: from rank 7 (squares 48..55) to rank 8 (56..63), unscaled offsets.
        offsets = np.matmul(k[:, 56:64, :], self.promotion_w)              # (N, to file, piece)
        promo = qk[:, 48:56, 56:64, None] + offsets[:, None, :, :]         # (N, from file, to file, piece)
        full = np.concatenate([qk.reshape(n, SQUARES * SQUARES), promo.reshape(n, 8 * 24)], axis=1)
        return np.ascontiguousarray(full[:, tables.ATTN_POLICY_GATHER])


class AttentionValue:
    """Value head: per-square embedding, flatten square-major, dense, dense to WDL (or tanh)."""

    def __init__(self, head: Node, spec: NetSpec, embedding: int):
        self.embed = Dense(head.ip_val_w, head.ip_val_b, "value.ip_val", embedding)
        self.dense1 = Dense(head.ip1_val_w, head.ip1_val_b, "value.ip1_val", SQUARES * self.embed.n_out)
        self.wdl = spec.value == "wdl"
        self.dense2 = Dense(head.ip2_val_w, head.ip2_val_b, "value.ip2_val", self.dense1.n_out)
        if self.dense2.n_out != (3 if self.wdl else 1):
            raise WeightsError(f"attention net: value.ip2_val has {self.dense2.n_out} outputs")
        self.act = activation_fn(spec.default_activation)

    def __call__(self, flow: np.ndarray) -> np.ndarray:
        n = flow.shape[0]
        x = self.embed(flow, self.act).reshape(n, -1)
        out = self.dense2(self.dense1(x, self.act))
        if self.wdl:
            return cpu_ops.softmax(out, axis=-1).astype(np.float32, copy=False)
        return wdl_from_classical(np.tanh(out[:, 0]))


class AttentionMovesLeft:
    """Moves-left head: per-square embedding, flatten, dense, dense to 1 + ReLU."""

    def __init__(self, net: Node, spec: NetSpec, embedding: int):
        self.embed = Dense(net.ip_mov_w, net.ip_mov_b, "moves_left.ip_mov", embedding)
        self.dense1 = Dense(net.ip1_mov_w, net.ip1_mov_b, "moves_left.ip1_mov", SQUARES * self.embed.n_out)
        self.dense2 = Dense(net.ip2_mov_w, net.ip2_mov_b, "moves_left.ip2_mov", self.dense1.n_out)
        if self.dense2.n_out != 1:
            raise WeightsError(f"attention net: moves_left.ip2_mov has {self.dense2.n_out} outputs")
        self.act = activation_fn(spec.default_activation)

    def __call__(self, flow: np.ndarray) -> np.ndarray:
        n = flow.shape[0]
        x = self.embed(flow, self.act).reshape(n, -1)
        return self.dense2(self.dense1(x, self.act), cpu_ops.relu)[:, 0]


# ----------------------------------------------------------------------------
# The whole net
# ----------------------------------------------------------------------------

class AttentionModel:
    """Forward pass of an attention-body net: planes -> (policy, wdl, moves left)."""

    def __init__(self, weights, policy_head: str = "vanilla", value_head: str = "winner"):
        fmt, net = weights.format, weights.net
        if net.residual:
            raise WeightsError("attention net: attention bodies with residual blocks are not supported")
        if not net.encoder and is_empty(net.ip_emb_b):
            raise WeightsError("attention net: attention-body net without input embedding")
        if fmt.policy != NF.POLICY_ATTENTION:
            raise WeightsError(f"attention net: attention body with policy format "
                               f"{NF.PolicyFormat.Name(fmt.policy)} (lc0 needs POLICY_ATTENTION)")
        spec = NetSpec.from_weights(weights)
        self.spec = spec
        self.act = activation_fn(spec.default_activation)
        self.pe_dense = spec.input_embedding == "pe_dense"
        embedding = net.ip_emb_b.size
        self.embedding = embedding

        if self.pe_dense:
            self.preproc = Dense(net.ip_emb_preproc_w, net.ip_emb_preproc_b, "ip_emb_preproc",
                                 SQUARES * PE_DENSE_PLANES)
            if self.preproc.n_out % SQUARES:
                raise WeightsError(f"attention net: ip_emb_preproc has {self.preproc.n_out} outputs, "
                                   "not a multiple of 64")
            self.pe_channels = self.preproc.n_out // SQUARES
        else:
            self.pe_channels = POS_ENCODING.shape[1]
        self.input_embed = Dense(net.ip_emb_w, net.ip_emb_b, "ip_emb", NUM_PLANES + self.pe_channels)

        self.gates = None
        if not is_empty(net.ip_mult_gate) and not is_empty(net.ip_add_gate):
            if net.ip_mult_gate.size != embedding * SQUARES or net.ip_add_gate.size != embedding * SQUARES:
                raise WeightsError("attention net: input gates must hold 64 x embedding values")
            # Stored channel-major [channel][square]; the flow is [square][channel].
            self.gates = (np.ascontiguousarray(net.ip_mult_gate.reshape(embedding, SQUARES).T),
                          np.ascontiguousarray(net.ip_add_gate.reshape(embedding, SQUARES).T))

        self.alpha = spec.encoder_alpha
        self.embedding_eps = spec.embedding_layer_norm_epsilon
        if self.pe_dense:
            self.ln_emb = (net.ip_emb_ln_gammas, net.ip_emb_ln_betas)
            ffn = net.ip_emb_ffn
            if ffn is None:
                raise WeightsError("attention net: PE_DENSE net without ip_emb_ffn")
            self.emb_ffn1 = Dense(ffn.dense1_w, ffn.dense1_b, "ip_emb_ffn.dense1", embedding)
            self.emb_ffn2 = Dense(ffn.dense2_w, ffn.dense2_b, "ip_emb_ffn.dense2", self.emb_ffn1.n_out)
            self.ln_emb_ffn = (net.ip_emb_ffn_ln_gammas, net.ip_emb_ffn_ln_betas)
            self.ffn_act = activation_fn(spec.ffn_activation)

        self.encoders = [
            EncoderLayer(layer, embedding, net.headcount or 0, spec.smolgen_activation, spec.ffn_activation,
                         self.alpha, spec.layer_norm_epsilon, spec.smolgen_layer_norm_epsilon,
                         net.smolgen_w, f"encoder[{i}]")
            for i, layer in enumerate(net.encoder)
        ]
        self.policy = AttentionPolicy(weights.policy_head(policy_head), spec, embedding, net.smolgen_w)
        self.value = AttentionValue(weights.value_head(value_head), spec, embedding)
        self.moves_left = None
        if spec.moves_left:
            self.moves_left = AttentionMovesLeft(net, spec, embedding)

    def embed(self, planes: np.ndarray) -> np.ndarray:
        """Input planes (N, 112, 8, 8) -> embedded flow (N, 64, embedding)."""
        n = planes.shape[0]
        per_square = planes.reshape(n, NUM_PLANES, SQUARES).transpose(0, 2, 1)   # (N, 64, 112)
        if self.pe_dense:
            pieces = per_square[:, :, :PE_DENSE_PLANES].reshape(n, SQUARES * PE_DENSE_PLANES)
            extra = self.preproc(pieces).reshape(n, SQUARES, self.pe_channels)
        else:
            extra = np.broadcast_to(POS_ENCODING, (n, SQUARES, self.pe_channels))
        x = self.input_embed(np.concatenate([per_square, extra], axis=2), self.act)
        if self.pe_dense:
            x = layer_norm(x, None, 1.0, *self.ln_emb, self.embedding_eps)
        if self.gates is not None:
            x = x * self.gates[0] + self.gates[1]
        if self.pe_dense:
            ffn = self.emb_ffn2(self.emb_ffn1(x, self.ffn_act))
            x = layer_norm(ffn, x, self.alpha, *self.ln_emb_ffn, self.embedding_eps)
        return x

    def body(self, planes: np.ndarray) -> np.ndarray:
        x = self.embed(planes)
        for layer in self.encoders:
            x = layer(x)
        return x

    def forward(self, planes: np.ndarray):
        planes = np.asarray(planes, dtype=np.float32)
        if planes.ndim != 4 or planes.shape[1:] != (NUM_PLANES, 8, 8):
            raise BackendError(f"cpu backend: planes must be (N, 112, 8, 8), got {planes.shape}")
        outputs = [self._forward_chunk(planes[i:i + MAX_BATCH]) for i in range(0, len(planes), MAX_BATCH)]
        if not outputs:
            return (np.zeros((0, POLICY_SIZE), np.float32), np.zeros((0, 3), np.float32),
                    np.zeros((0,), np.float32))
        return tuple(np.concatenate(parts).astype(np.float32, copy=False) for parts in zip(*outputs))

    def _forward_chunk(self, planes):
        flow = self.body(planes)
        policy = self.policy(flow)
        wdl = self.value(flow)
        if self.moves_left is not None:
            moves_left = self.moves_left(flow)
        else:
            moves_left = np.zeros(len(planes), dtype=np.float32)
        return policy, wdl, moves_left
