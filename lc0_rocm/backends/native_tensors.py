"""The network's weights as the native GPU library takes them: named float32
(and int32) tensors (native/src/attention.h and resnet.h name them); a big
layer the reader kept in LINEAR16 (Linear16Layer) goes as it is, for the
library to decode as it uploads it.

  * convolution bodies: "resnet.*", batch norm folded, matrices [in][out],
    NHWC (square-major) layouts; policy gather indices as int32;
  * attention bodies: every Layer of the proto tree under its dotted path
    ("encoder.3.mha.q_w", "ip_emb_w", "smolgen_w", ...), the resolved heads
    under "policy_head." and "value_head." (Weights.policy_head() /
    value_head(), so multi-head files look like single-head ones),
    "meta.headcount" and "meta.pol_headcount" (int32 scalars), and
    "map.attention_policy_gather" (int32 [1858], index into 64*64+8*24);
  * a convolution body with an attention policy also gets "policy_head.*",
    "meta.pol_headcount" and "map.attention_policy_gather".
"""
from __future__ import annotations

import numpy as np

from lc0_rocm._proto import net_pb2
from lc0_rocm.netspec import BN_EPSILON
from lc0_rocm.sizes import NUM_PLANES
from lc0_rocm.backends.native_build import NativeError
from lc0_rocm.weights.tree import Linear16Layer

NF = net_pb2.NetworkFormat
CONV_BODIES = (NF.NETWORK_CLASSICAL, NF.NETWORK_SE,
               NF.NETWORK_CLASSICAL_WITH_HEADFORMAT, NF.NETWORK_SE_WITH_HEADFORMAT)
ATTENTION_BODIES = (NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
                    NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT)



def flatten_node(node, prefix: str = "") -> dict[str, np.ndarray | Linear16Layer]:
    """Every Layer of a Node tree under its dotted proto path."""
    out: dict[str, np.ndarray | Linear16Layer] = {}
    if node is None:
        return out
    for key, value in vars(node).items():
        name = prefix + key
        if isinstance(value, (np.ndarray, Linear16Layer)):
            if value.size:
                out[name] = value
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, (np.ndarray, Linear16Layer)):
                    out[f"{name}.{i}"] = item
                else:
                    out.update(flatten_node(item, f"{name}.{i}."))
        elif hasattr(value, "__dict__") and not isinstance(value, (int, float, str, bytes)):
            out.update(flatten_node(value, name + "."))
    return out


def _as_f32(a) -> np.ndarray | Linear16Layer:
    """A layer as the library takes it: float32, or still LINEAR16 (the
    library decodes it as it uploads it)."""
    if isinstance(a, Linear16Layer):
        return a
    return np.ascontiguousarray(a, dtype=np.float32).ravel()


def _layer(node, field, name):
    value = getattr(node, field, None) if node is not None else None
    if value is None or len(value) == 0:
        raise NativeError(f"convolution-body net: missing tensor {name}.{field}")
    return np.asarray(value, np.float32)


def fold_conv(block, name: str, inputs: int, kernel: int) -> tuple[np.ndarray, np.ndarray]:
    """ConvBlock -> (weights (K, inputs, k, k), biases (K,)) with batch norm
    folded in as lc0 does: s = gamma / sqrt(var + eps), w' = w s, b' = beta + s (b - mean)."""
    w = _layer(block, "weights", name)
    has_bn = block.bn_means is not None and len(block.bn_means) > 0
    outputs = len(block.bn_means) if has_bn else len(_layer(block, "biases", name))
    if w.size != outputs * inputs * kernel * kernel:
        raise NativeError(f"{name}.weights has {w.size} values; expected {outputs} x {inputs} x "
                          f"{kernel} x {kernel}")
    w = w.reshape(outputs, inputs, kernel, kernel)
    present = lambda a: a is not None and len(a) > 0  # noqa: E731
    b = np.asarray(block.biases, np.float32) if present(block.biases) else np.zeros(outputs, np.float32)
    if not has_bn:
        return w, b
    gammas = np.asarray(block.bn_gammas, np.float32) if present(block.bn_gammas) else np.ones(outputs, np.float32)
    betas = np.asarray(block.bn_betas, np.float32) if present(block.bn_betas) else np.zeros(outputs, np.float32)
    var = _layer(block, "bn_stddivs", name)
    scale = gammas / np.sqrt(var + np.float32(BN_EPSILON))
    means = np.asarray(block.bn_means, np.float32)
    return w * scale[:, None, None, None], betas + scale * (b - means)


def conv3_tensors(block, name: str, inputs: int) -> tuple[np.ndarray, np.ndarray]:
    """3x3 conv -> ([9*inputs][K] with row tap*inputs + c, tap = ky*3 + kx; bias)."""
    w, b = fold_conv(block, name, inputs, 3)
    return w.transpose(2, 3, 1, 0).reshape(9 * inputs, -1), b


def conv1_tensors(block, name: str, inputs: int) -> tuple[np.ndarray, np.ndarray]:
    """1x1 conv -> ([inputs][K]; bias)."""
    w, b = fold_conv(block, name, inputs, 1)
    return w.reshape(-1, inputs).T, b


def dense_tensors(w, b, inputs: int, name: str, square_major_from: int = 0):
    """Dense [out][in] -> ([in][out], bias). square_major_from=P: the input is
    a channel-major flatten (c*64 + square) of P channels, re-ordered to the
    library's square-major one (square*P + c)."""
    w = np.asarray(w if w is not None else [], np.float32)
    b = np.asarray(b if b is not None else [], np.float32)
    if b.size == 0 or w.size != b.size * inputs:
        raise NativeError(f"{name}: {w.size} weights and {b.size} biases do not fit {inputs} inputs")
    m = w.reshape(b.size, inputs).T
    if square_major_from:
        p = square_major_from
        m = m.reshape(p, 64, b.size).transpose(1, 0, 2).reshape(inputs, b.size)
    return m, b


def resnet_tensors(weights) -> dict[str, np.ndarray]:
    """Derived tensors of a convolution body (see native/src/resnet.h)."""
    fmt, net = weights.format, weights.net
    t: dict[str, np.ndarray] = {}

    def put(prefix, pair):
        t[prefix + ".w"], t[prefix + ".b"] = _as_f32(pair[0]), _as_f32(pair[1])

    put("resnet.input", conv3_tensors(net.input, "input", NUM_PLANES))
    c = len(t["resnet.input.b"])
    for i, res in enumerate(net.residual):
        p = f"resnet.block.{i}"
        put(p + ".conv1", conv3_tensors(res.conv1, f"residual[{i}].conv1", c))
        put(p + ".conv2", conv3_tensors(res.conv2, f"residual[{i}].conv2", c))
        se = res.se
        if se is not None and se.w1 is not None and len(se.w1):
            put(p + ".se1", dense_tensors(se.w1, se.b1, c, f"residual[{i}].se.w1"))
            hidden = len(t[p + ".se1.b"])
            put(p + ".se2", dense_tensors(se.w2, se.b2, hidden, f"residual[{i}].se.w2"))

    head = weights.policy_head()
    policy = fmt.policy or NF.POLICY_CLASSICAL
    if policy == NF.POLICY_CONVOLUTION:
        from lc0_rocm import tables
        put("resnet.policy1", conv3_tensors(head.policy1, "policy1", c))
        put("resnet.policy", conv3_tensors(head.policy, "policy", len(t["resnet.policy1.b"])))
        planes = len(t["resnet.policy.b"])
        gather = np.asarray(tables.CONV_POLICY_GATHER, dtype=np.int64)  # plane*64 + square
        if gather.max() >= planes * 64:
            raise NativeError(f"convolution policy: {planes} output planes do not fit the policy map")
        t["resnet.policy.gather"] = np.ascontiguousarray((gather % 64) * planes + gather // 64, np.int32)
    elif policy == NF.POLICY_CLASSICAL:
        put("resnet.policy", conv1_tensors(head.policy, "policy", c))
        planes = len(t["resnet.policy.b"])
        put("resnet.policy_ip", dense_tensors(head.ip_pol_w, head.ip_pol_b, planes * 64, "ip_pol_w", planes))
    elif policy == NF.POLICY_ATTENTION:
        t.update(attention_policy_tensors(weights))
    else:
        raise NativeError(f"unsupported policy format {NF.PolicyFormat.Name(policy)}")

    vh = weights.value_head()
    put("resnet.value", conv1_tensors(vh.value, "value", c))
    planes = len(t["resnet.value.b"])
    put("resnet.value_ip1", dense_tensors(vh.ip1_val_w, vh.ip1_val_b, planes * 64, "ip1_val_w", planes))
    put("resnet.value_ip2", dense_tensors(vh.ip2_val_w, vh.ip2_val_b, len(t["resnet.value_ip1.b"]), "ip2_val_w"))

    if fmt.moves_left == NF.MOVES_LEFT_V1:
        put("resnet.mlh", conv1_tensors(net.moves_left, "moves_left", c))
        planes = len(t["resnet.mlh.b"])
        put("resnet.mlh_ip1", dense_tensors(net.ip1_mov_w, net.ip1_mov_b, planes * 64, "ip1_mov_w", planes))
        put("resnet.mlh_ip2", dense_tensors(net.ip2_mov_w, net.ip2_mov_b, len(t["resnet.mlh_ip1.b"]), "ip2_mov_w"))
    return t


def attention_policy_tensors(weights) -> dict[str, np.ndarray]:
    from lc0_rocm import tables

    head = weights.policy_head()
    t = {k: _as_f32(v) for k, v in flatten_node(head, "policy_head.").items()}
    heads = head.pol_headcount or weights.net.pol_headcount or 0
    t["meta.pol_headcount"] = np.array([heads], np.int32)
    t["map.attention_policy_gather"] = np.ascontiguousarray(tables.ATTN_POLICY_GATHER, dtype=np.int32)
    return t


def attention_tensors(weights) -> dict[str, np.ndarray]:
    net = weights.net
    t = {k: _as_f32(v) for k, v in flatten_node(net).items()
         if not k.startswith(("policy_heads.", "value_heads."))}
    t.update(attention_policy_tensors(weights))
    t.update({k: _as_f32(v) for k, v in flatten_node(weights.value_head(), "value_head.").items()})
    t["meta.headcount"] = np.array([net.headcount or 0], np.int32)
    return t


def named_tensors(weights) -> dict[str, np.ndarray]:
    network = weights.format.network
    if network in CONV_BODIES:
        return resnet_tensors(weights)
    if network in ATTENTION_BODIES:
        return attention_tensors(weights)
    raise NativeError(f"unsupported network structure {NF.NetworkStructure.Name(network)}")
