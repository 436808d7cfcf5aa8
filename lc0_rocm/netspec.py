"""The shape and format facts of a loaded net, in one frozen record.

`NetSpec.from_weights(w)` reads them off a `Weights` that load_weights has
already checked, following lc0 v0.32.1's eigen backend
(src/neural/backends/blas/network_blas.cc) for everything the file leaves
implicit: activations, layer-norm epsilons, the residual scale alpha. The
backends take those facts from here and nowhere else: the numpy backend
(backends/cpu_*.py) and the GPU library's config (backends/native.py).

Activations are `NetworkFormat.ActivationFunction` ints (MISH 1, RELU 2,
NONE 3, TANH 4, SIGMOID 5, SELU 6, SWISH 7, RELU_2 8), never DEFAULT.
Sizes that do not apply to the net's body or heads are 0.
"""
from __future__ import annotations

import dataclasses

from lc0_rocm._proto import net_pb2
from lc0_rocm.weights import Weights
from lc0_rocm.weights.shapes import input_embedding_inputs, smolgen_sizes
from lc0_rocm.weights.tree import NF, is_attention_body, size_of

EMBEDDING_NAMES = {NF.INPUT_EMBEDDING_NONE: "none", NF.INPUT_EMBEDDING_PE_MAP: "pe_map",
                   NF.INPUT_EMBEDDING_PE_DENSE: "pe_dense"}
POLICY_NAMES = {NF.POLICY_CLASSICAL: "classical", NF.POLICY_CONVOLUTION: "convolution",
                NF.POLICY_ATTENTION: "attention"}
VALUE_NAMES = {NF.VALUE_CLASSICAL: "classical", NF.VALUE_WDL: "wdl"}

BN_EPSILON = 1e-5          # batch norm, every conv block
SMOLGEN_LN_EPSILON = 1e-3  # both smolgen layer norms
EMBEDDING_LN_EPSILON = 1e-3  # PE_DENSE embedding layer norms


@dataclasses.dataclass(frozen=True)
class NetSpec:
    """Shape and format facts of a loaded net, derived from its Weights
    (`NetSpec.from_weights(w)`, or `network.spec`): body kind and size
    (blocks or encoder layers, filters or embedding width, heads), policy,
    value and moves-left head formats, activations and input format, with
    lc0's upgrades of old files applied. Every field is a plain int, str or
    bool, in the names lc0's `describenet` uses."""

    # Formats
    network: int                 # NetworkFormat.NetworkStructure after lc0's upgrades
    input_format: int            # NetworkFormat.InputFormat
    body: str                    # "resnet" | "attention"
    policy: str                  # "classical" | "convolution" | "attention"
    value: str                   # "classical" | "wdl"
    moves_left: bool
    multihead: bool              # NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT
    policy_heads: tuple[str, ...]  # lc0 names, "vanilla" first
    value_heads: tuple[str, ...]   # lc0 names, "winner" first

    # Residual body (0 / False for attention bodies)
    blocks: int
    filters: int
    se: bool
    se_channels: int

    # Attention body (0 for residual bodies)
    input_embedding: str         # "none" | "pe_map" | "pe_dense" (as lc0's eigen computes it)
    embedding_inputs: int        # channels per square into the input embedding (176 for PE_MAP)
    pe_dense_channels: int       # PE_DENSE: ip_emb_preproc outputs per square
    embedding_dff: int           # PE_DENSE: the embedding FFN's hidden size
    has_input_gating: bool       # ip_mult_gate / ip_add_gate present
    encoder_layers: int
    embedding_size: int
    heads: int
    d_model: int
    dff: int
    has_smolgen: bool
    smolgen_hidden_channels: int  # compress outputs per square
    smolgen_hidden_size: int      # dense1 outputs
    smolgen_gen_size: int         # dense2 outputs per head (= smolgen_w inputs)
    encoder_alpha: float          # residual scale (2 * encoder_layers) ** -0.25
    layer_norm_epsilon: float     # body encoders: 1e-3 PE_DENSE, else 1e-6

    # Heads (of the default "vanilla" / "winner" heads)
    policy_channels: int          # classical / convolution policy conv outputs
    policy_embedding_size: int    # attention policy: ip_pol_b
    policy_d_model: int           # attention policy: ip2_pol_b (queries/keys)
    policy_encoder_layers: int
    policy_encoder_heads: int
    policy_encoder_dff: int
    value_channels: int           # value conv outputs / value embedding per square
    value_hidden: int             # ip1_val_b
    moves_left_channels: int
    moves_left_hidden: int

    # Resolved activations
    default_activation: int       # RELU unless DEFAULT_ACTIVATION_MISH
    ffn_activation: int           # body encoders (and PE_DENSE embedding FFN)
    smolgen_activation: int
    policy_embedding_activation: int      # attention policy embedding
    policy_encoder_ffn_activation: int
    policy_encoder_smolgen_activation: int
    policy_encoder_alpha: float = 1.0
    policy_layer_norm_epsilon: float = 1e-6
    bn_epsilon: float = BN_EPSILON
    smolgen_layer_norm_epsilon: float = SMOLGEN_LN_EPSILON
    embedding_layer_norm_epsilon: float = EMBEDDING_LN_EPSILON

    @classmethod
    def from_weights(cls, w: Weights) -> "NetSpec":
        fmt, net = w.format, w.net
        attention = is_attention_body(fmt)
        policy = w.policy_head("vanilla")
        value = w.value_head("winner")

        default = (NF.ACTIVATION_MISH if fmt.default_activation == NF.DEFAULT_ACTIVATION_MISH
                   else NF.ACTIVATION_RELU)
        ffn = fmt.ffn_activation or default          # ACTIVATION_DEFAULT is 0
        smolgen = fmt.smolgen_activation or default

        embedding = size_of(net.ip_emb_b) if attention else 0
        encoders = net.encoder if attention else []
        first = encoders[0] if encoders else None
        smol = first.mha.smolgen if first is not None else None
        heads = (net.headcount or 0) if attention else 0
        sm_channels, sm_hidden, sm_gen = smolgen_sizes(smol, embedding) if smol else (0, 0, 0)

        if attention:
            # lc0's eigen backend treats an explicit NONE like PE_MAP.
            embed_name = ("pe_dense" if fmt.input_embedding == NF.INPUT_EMBEDDING_PE_DENSE
                          else "pe_map")
        else:
            embed_name = "none"
        pe_dense = embed_name == "pe_dense"

        p_embed = size_of(policy.ip_pol_b) if fmt.policy == NF.POLICY_ATTENTION else 0
        p_enc = policy.pol_encoder if fmt.policy == NF.POLICY_ATTENTION else []
        conv_policy = fmt.policy != NF.POLICY_ATTENTION

        if attention:
            value_channels = size_of(value.ip_val_b)
            ml_channels = size_of(net.ip_mov_b)
        else:
            value_channels = size_of(value.value.biases)
            ml_channels = size_of(net.moves_left.biases) if net.moves_left else 0
        moves_left = fmt.moves_left == NF.MOVES_LEFT_V1

        residual = net.residual if not attention else []
        return cls(
            network=fmt.network,
            input_format=fmt.input,
            body="attention" if attention else "resnet",
            policy=POLICY_NAMES[fmt.policy],
            value=VALUE_NAMES[fmt.value],
            moves_left=moves_left,
            multihead=fmt.network == NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT,
            policy_heads=tuple(w.policy_head_names()),
            value_heads=tuple(w.value_head_names()),
            blocks=len(residual),
            filters=size_of(net.input.biases) if residual else 0,
            se=bool(residual) and residual[0].se is not None,
            se_channels=size_of(residual[0].se.b1) if residual and residual[0].se else 0,
            input_embedding=embed_name,
            embedding_inputs=input_embedding_inputs(w) if attention else 0,
            pe_dense_channels=size_of(net.ip_emb_preproc_b) // 64 if pe_dense else 0,
            embedding_dff=size_of(net.ip_emb_ffn.dense1_b) if pe_dense else 0,
            has_input_gating=attention and net.ip_mult_gate is not None,
            encoder_layers=len(encoders),
            embedding_size=embedding,
            heads=heads,
            d_model=size_of(first.mha.q_b) if first else 0,
            dff=size_of(first.ffn.dense1_b) if first else 0,
            has_smolgen=smol is not None,
            smolgen_hidden_channels=sm_channels,
            smolgen_hidden_size=sm_hidden,
            smolgen_gen_size=sm_gen // heads if smol else 0,
            encoder_alpha=(2.0 * len(encoders)) ** -0.25 if encoders else 1.0,
            layer_norm_epsilon=1e-3 if pe_dense else 1e-6,
            policy_channels=size_of(policy.policy.biases) if conv_policy else 0,
            policy_embedding_size=p_embed,
            policy_d_model=size_of(policy.ip2_pol_b) if p_embed else 0,
            policy_encoder_layers=len(p_enc),
            policy_encoder_heads=(policy.pol_headcount or 0) if p_enc else 0,
            policy_encoder_dff=size_of(p_enc[0].ffn.dense1_b) if p_enc else 0,
            value_channels=value_channels,
            value_hidden=size_of(value.ip1_val_b),
            moves_left_channels=ml_channels if moves_left else 0,
            moves_left_hidden=size_of(net.ip1_mov_b) if moves_left else 0,
            default_activation=default,
            ffn_activation=ffn,
            smolgen_activation=smolgen,
            # lc0 hard-codes SELU (and no smolgen activation) for attention
            # policies on convolution bodies, the "apmish" nets.
            policy_embedding_activation=default if attention else NF.ACTIVATION_SELU,
            policy_encoder_ffn_activation=ffn if attention else NF.ACTIVATION_SELU,
            policy_encoder_smolgen_activation=smolgen if attention else NF.ACTIVATION_NONE,
        )

    def activation_name(self, value: int) -> str:
        """'ACTIVATION_RELU' etc. for one of the activation fields."""
        return net_pb2.NetworkFormat.ActivationFunction.Name(value)
