"""Every tensor the forward pass uses has the size the net's format
implies: `check_shapes(weights)` for the body and the default heads,
`check_policy_head` / `check_value_head` for a head asked for later. Each
refusal is a WeightsError naming the tensor and the size it should have."""
from __future__ import annotations

from lc0_rocm.sizes import NUM_PLANES, POLICY_SIZE, SQUARES
from lc0_rocm.weights import heads
from lc0_rocm.weights.tree import NF, DecodedNet, Node, WeightsError, is_attention_body, size_of

POS_ENCODING_CHANNELS = 64  # lc0's fixed PE_MAP positional encoding
ATTENTION_POLICY_PROMOTIONS = 4  # ip4_pol_w rows: q, r, b, n


def body_channels(w: DecodedNet) -> int:
    """Channels per square the heads read: embedding size or filters."""
    if is_attention_body(w.format):
        return size_of(w.net.ip_emb_b)
    return size_of(w.net.input.biases) if w.net.input is not None else 0


def expect(values, name: str, expected: int, shape: str = "") -> None:
    """`values` must be present and hold `expected` numbers."""
    if values is None:
        raise WeightsError(f"tensor {name} is missing (expected {expected} values"
                           f"{' = ' + shape if shape else ''})")
    if values.size != expected:
        raise WeightsError(f"tensor {name} has {values.size} values, expected {expected}"
                           f"{' = ' + shape if shape else ''}")


def require(node, name: str, what: str = "") -> None:
    if node is None:
        raise WeightsError(f"{name} is missing{' (' + what + ')' if what else ''}")


def conv_channels(block: Node, name: str) -> int:
    """Output channels of a conv block: its biases (filled from the batch
    norm by decode_message when absent)."""
    require(block, name)
    if block.biases is None:
        raise WeightsError(f"{name} has neither biases nor batch-norm means, so its "
                           "output channels are unknown")
    return int(block.biases.size)


def check_conv(block: Node, name: str, outputs: int, inputs: int, kernel: int) -> None:
    require(block, name)
    expect(block.weights, f"{name}.weights", outputs * inputs * kernel * kernel,
           f"{outputs} outputs x {inputs} inputs x {kernel} x {kernel}")
    expect(block.biases, f"{name}.biases", outputs, f"{outputs} outputs")
    if block.bn_means is not None:
        for field in ("bn_means", "bn_stddivs", "bn_gammas", "bn_betas"):
            expect(getattr(block, field), f"{name}.{field}", outputs, f"{outputs} outputs")


def check_dense(node: Node, w: str, b: str, name: str, outputs: int, inputs: int,
                bias: bool = True) -> None:
    expect(getattr(node, w), f"{name}.{w}", outputs * inputs,
           f"{outputs} outputs x {inputs} inputs")
    if bias:
        expect(getattr(node, b), f"{name}.{b}", outputs, f"{outputs} outputs")


def check_encoder(layer: Node, name: str, embedding: int, heads: int, smolgen_w,
                  heads_field: str = "weights.headcount") -> None:
    """One post-LN encoder layer on `embedding` channels per square."""
    require(layer.mha, f"{name}.mha")
    require(layer.ffn, f"{name}.ffn")
    mha, ffn = layer.mha, layer.ffn
    for field in ("rpe_q", "rpe_k", "rpe_v"):
        if getattr(mha, field) is not None:
            raise WeightsError(f"{name}.mha.{field}: relative position encoding (RPE) "
                               "weights are not supported (lc0 refuses them too)")
    d_model = size_of(mha.q_b)
    if d_model == 0:
        raise WeightsError(f"tensor {name}.mha.q_b is missing")
    if heads <= 0:
        raise WeightsError(f"{name}: the head count ({heads_field}) is missing or 0")
    if d_model % heads:
        raise WeightsError(f"{name}: {heads_field} = {heads} does not divide "
                           f"d_model {d_model} (tensor {name}.mha.q_b)")
    for p in ("q", "k", "v"):
        check_dense(mha, f"{p}_w", f"{p}_b", f"{name}.mha", d_model, embedding)
    check_dense(mha, "dense_w", "dense_b", f"{name}.mha", embedding, d_model)
    dff = size_of(ffn.dense1_b)
    if dff == 0:
        raise WeightsError(f"tensor {name}.ffn.dense1_b is missing")
    check_dense(ffn, "dense1_w", "dense1_b", f"{name}.ffn", dff, embedding)
    check_dense(ffn, "dense2_w", "dense2_b", f"{name}.ffn", embedding, dff)
    for field in ("ln1_gammas", "ln1_betas", "ln2_gammas", "ln2_betas"):
        expect(getattr(layer, field), f"{name}.{field}", embedding, f"embedding {embedding}")
    if mha.smolgen is not None:
        check_smolgen(mha.smolgen, f"{name}.mha.smolgen", embedding, heads, smolgen_w)


def smolgen_sizes(smolgen: Node, embedding: int) -> tuple[int, int, int]:
    """(hidden channels per square, hidden size, generator outputs)."""
    return (size_of(smolgen.compress) // max(embedding, 1), size_of(smolgen.dense1_b),
            size_of(smolgen.dense2_b))


def check_smolgen(smolgen: Node, name: str, embedding: int, heads: int, smolgen_w) -> None:
    compress = size_of(smolgen.compress)
    if compress == 0 or compress % embedding:
        raise WeightsError(f"tensor {name}.compress has {compress} values, expected a "
                           f"non-zero multiple of the embedding size {embedding}")
    channels, hidden, gen = smolgen_sizes(smolgen, embedding)
    if hidden == 0 or gen == 0:
        raise WeightsError(f"tensor {name}.{'dense1_b' if hidden == 0 else 'dense2_b'} is missing")
    check_dense(smolgen, "dense1_w", "dense1_b", name, hidden, SQUARES * channels)
    expect(smolgen.ln1_gammas, f"{name}.ln1_gammas", hidden)
    expect(smolgen.ln1_betas, f"{name}.ln1_betas", hidden)
    check_dense(smolgen, "dense2_w", "dense2_b", name, gen, hidden)
    expect(smolgen.ln2_gammas, f"{name}.ln2_gammas", gen)
    expect(smolgen.ln2_betas, f"{name}.ln2_betas", gen)
    if gen % heads:
        raise WeightsError(f"{name}: {gen} generator outputs are not a multiple of "
                           f"{heads} heads")
    expect(smolgen_w, "weights.smolgen_w", SQUARES * SQUARES * (gen // heads),
           f"4096 x {gen // heads} generator size per head")


def check_encoder_stack(layers: list, name: str, embedding: int, heads: int, smolgen_w,
                        heads_field: str = "weights.headcount") -> None:
    """Every layer checked; all layers must share d_model and dff (lc0-rocm's
    backends build one layer shape)."""
    for i, layer in enumerate(layers):
        check_encoder(layer, f"{name}[{i}]", embedding, heads, smolgen_w, heads_field)
        for field in ("q_b", "dense1_b"):
            first = size_of(getattr(layers[0].mha if field == "q_b" else layers[0].ffn, field))
            this = size_of(getattr(layer.mha if field == "q_b" else layer.ffn, field))
            if this != first:
                raise WeightsError(f"{name}[{i}]: layer sizes differ from {name}[0] "
                                   f"({field}: {this} vs {first}); not supported")
        if (layer.mha.smolgen is None) != (layers[0].mha.smolgen is None):
            raise WeightsError(f"{name}[{i}]: some encoder layers have smolgen and some "
                               "do not; not supported")


def input_embedding_inputs(w: DecodedNet) -> int:
    """Channels per square fed to the attention body's input embedding."""
    if w.format.input_embedding == NF.INPUT_EMBEDDING_PE_DENSE:
        return NUM_PLANES + size_of(w.net.ip_emb_preproc_b) // SQUARES
    # PE_MAP (and NONE, which lc0's eigen backend treats the same way).
    return NUM_PLANES + POS_ENCODING_CHANNELS


def check_shapes(w: DecodedNet) -> None:
    """Every tensor the forward pass uses has the size the format implies."""
    fmt, net = w.format, w.net
    # lc0 always builds a "vanilla" policy and a "winner" value head.
    if "vanilla" not in heads.policy_head_names(net):
        raise WeightsError("weights.policy_heads.vanilla is missing (every net needs it)")
    if "winner" not in heads.value_head_names(net):
        raise WeightsError("weights.value_heads.winner is missing (every net needs it)")
    if is_attention_body(fmt):
        body = _check_attention_body(w)
    else:
        body = _check_resnet_body(w)
    # Only the heads lc0 uses by default; Weights.policy_head/value_head check
    # the others when asked for.
    check_policy_head(w, heads.policy_head(net, "vanilla"), body)
    check_value_head(w, heads.value_head(net, "winner"), body)
    if fmt.moves_left == NF.MOVES_LEFT_V1:
        _check_moves_left(w, body)


def _check_resnet_body(w: DecodedNet) -> int:
    net = w.net
    filters = conv_channels(net.input, "weights.input")
    check_conv(net.input, "weights.input", filters, NUM_PLANES, 3)
    if not net.residual:
        raise WeightsError("weights.residual is empty: a residual body needs at least one block")
    for i, block in enumerate(net.residual):
        name = f"weights.residual[{i}]"
        check_conv(block.conv1, f"{name}.conv1", filters, filters, 3)
        check_conv(block.conv2, f"{name}.conv2", filters, filters, 3)
        if block.se is not None:
            se_channels = size_of(block.se.b1)
            if se_channels == 0:
                raise WeightsError(f"tensor {name}.se.b1 is missing")
            check_dense(block.se, "w1", "b1", f"{name}.se", se_channels, filters)
            check_dense(block.se, "w2", "b2", f"{name}.se", 2 * filters, se_channels)
        if (block.se is None) != (net.residual[0].se is None):
            raise WeightsError(f"{name}: some residual blocks have an SE unit and some do "
                               "not; not supported")
    return filters


def _check_attention_body(w: DecodedNet) -> int:
    net, fmt = w.net, w.format
    if net.residual:
        raise WeightsError(f"weights.residual: an attention body with a residual tower "
                           f"({len(net.residual)} blocks) is not supported")
    embedding = size_of(net.ip_emb_b)
    if embedding == 0:
        raise WeightsError("tensor weights.ip_emb_b is missing (the attention body's "
                           "embedding size)")
    if fmt.input_embedding == NF.INPUT_EMBEDDING_PE_DENSE:
        pre = size_of(net.ip_emb_preproc_b)
        if pre == 0 or pre % SQUARES:
            raise WeightsError(f"tensor weights.ip_emb_preproc_b has {pre} values, expected "
                               "a non-zero multiple of 64 squares")
        check_dense(net, "ip_emb_preproc_w", "ip_emb_preproc_b", "weights", pre, SQUARES * 12)
        expect(net.ip_emb_ln_gammas, "weights.ip_emb_ln_gammas", embedding)
        expect(net.ip_emb_ln_betas, "weights.ip_emb_ln_betas", embedding)
        require(net.ip_emb_ffn, "weights.ip_emb_ffn", "PE_DENSE embedding FFN")
        dff = size_of(net.ip_emb_ffn.dense1_b)
        if dff == 0:
            raise WeightsError("tensor weights.ip_emb_ffn.dense1_b is missing")
        check_dense(net.ip_emb_ffn, "dense1_w", "dense1_b", "weights.ip_emb_ffn", dff, embedding)
        check_dense(net.ip_emb_ffn, "dense2_w", "dense2_b", "weights.ip_emb_ffn", embedding, dff)
        expect(net.ip_emb_ffn_ln_gammas, "weights.ip_emb_ffn_ln_gammas", embedding)
        expect(net.ip_emb_ffn_ln_betas, "weights.ip_emb_ffn_ln_betas", embedding)
    check_dense(net, "ip_emb_w", "ip_emb_b", "weights", embedding, input_embedding_inputs(w))
    if (net.ip_mult_gate is None) != (net.ip_add_gate is None):
        raise WeightsError("weights.ip_mult_gate and weights.ip_add_gate must come together")
    if net.ip_mult_gate is not None:
        for field in ("ip_mult_gate", "ip_add_gate"):
            expect(getattr(net, field), f"weights.{field}", embedding * SQUARES,
                   f"{embedding} channels x 64 squares")
    if not net.encoder:
        raise WeightsError("weights.encoder is empty: an attention body needs encoder layers")
    check_encoder_stack(net.encoder, "weights.encoder", embedding, net.headcount or 0,
                        net.smolgen_w)
    return embedding


def check_policy_head(w: DecodedNet, head: Node, body: int) -> None:
    policy = w.format.policy
    name = head.path
    if policy == NF.POLICY_ATTENTION:
        p_embed = size_of(head.ip_pol_b)
        if p_embed == 0:
            raise WeightsError(f"tensor {name}.ip_pol_b is missing (attention policy embedding)")
        check_dense(head, "ip_pol_w", "ip_pol_b", name, p_embed, body)
        if head.pol_encoder:
            check_encoder_stack(head.pol_encoder, f"{name}.pol_encoder", p_embed,
                                head.pol_headcount or 0, w.net.smolgen_w,
                                f"{name}.pol_headcount")
        d_model = size_of(head.ip2_pol_b)
        if d_model == 0:
            raise WeightsError(f"tensor {name}.ip2_pol_b is missing (attention policy queries)")
        check_dense(head, "ip2_pol_w", "ip2_pol_b", name, d_model, p_embed)
        check_dense(head, "ip3_pol_w", "ip3_pol_b", name, d_model, p_embed)
        expect(head.ip4_pol_w, f"{name}.ip4_pol_w", ATTENTION_POLICY_PROMOTIONS * d_model,
               f"{ATTENTION_POLICY_PROMOTIONS} promotion pieces x {d_model}")
    elif policy == NF.POLICY_CONVOLUTION:
        check_conv(head.policy1, f"{name}.policy1", body, body, 3)
        planes = conv_channels(head.policy, f"{name}.policy")
        if planes < 73:
            raise WeightsError(f"{name}.policy has {planes} output planes; a convolution "
                               "policy needs at least the 73 lc0 maps")
        check_conv(head.policy, f"{name}.policy", planes, body, 3)
    else:
        planes = conv_channels(head.policy, f"{name}.policy")
        check_conv(head.policy, f"{name}.policy", planes, body, 1)
        check_dense(head, "ip_pol_w", "ip_pol_b", name, POLICY_SIZE, planes * SQUARES)


def check_value_head(w: DecodedNet, head: Node, body: int) -> None:
    name = head.path
    if is_attention_body(w.format):
        planes = size_of(head.ip_val_b)
        if planes == 0:
            raise WeightsError(f"tensor {name}.ip_val_b is missing (value embedding)")
        check_dense(head, "ip_val_w", "ip_val_b", name, planes, body)
    else:
        planes = conv_channels(head.value, f"{name}.value")
        check_conv(head.value, f"{name}.value", planes, body, 1)
    hidden = size_of(head.ip1_val_b)
    if hidden == 0:
        raise WeightsError(f"tensor {name}.ip1_val_b is missing")
    check_dense(head, "ip1_val_w", "ip1_val_b", name, hidden, planes * SQUARES)
    outputs = 3 if w.format.value == NF.VALUE_WDL else 1
    check_dense(head, "ip2_val_w", "ip2_val_b", name, outputs, hidden)


def _check_moves_left(w: DecodedNet, body: int) -> None:
    net = w.net
    if is_attention_body(w.format):
        planes = size_of(net.ip_mov_b)
        if planes == 0:
            raise WeightsError("tensor weights.ip_mov_b is missing (moves-left embedding; "
                               "the format says MOVES_LEFT_V1)")
        check_dense(net, "ip_mov_w", "ip_mov_b", "weights", planes, body)
    else:
        planes = conv_channels(net.moves_left, "weights.moves_left")
        check_conv(net.moves_left, "weights.moves_left", planes, body, 1)
    hidden = size_of(net.ip1_mov_b)
    if hidden == 0:
        raise WeightsError("tensor weights.ip1_mov_b is missing")
    check_dense(net, "ip1_mov_w", "ip1_mov_b", "weights", hidden, planes * SQUARES)
    check_dense(net, "ip2_mov_w", "ip2_mov_b", "weights", 1, hidden)
