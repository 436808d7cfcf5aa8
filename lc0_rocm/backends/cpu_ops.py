"""Elementwise numpy ops shared by the reference bodies (float32 in, out)."""
from __future__ import annotations

import numpy as np

from lc0_rocm._proto import net_pb2

NF = net_pb2.NetworkFormat


def relu(x):
    return np.maximum(x, 0, out=x) if x.flags.writeable else np.maximum(x, 0)


def mish(x):
    # x * tanh(softplus(x)), softplus written to stay finite for large x.
    return x * np.tanh(np.logaddexp(0, x)).astype(np.float32)


def swish(x):
    return x * sigmoid(x)


def sigmoid(x):
    # exp clamped where 1 / (1 + e^t) is 0 in float32 anyway: no overflow warning
    return (1 / (1 + np.exp(np.minimum(-x, 88)))).astype(np.float32)


def selu(x):
    alpha, scale = 1.67326324, 1.05070098
    return (scale * np.where(x > 0, x, alpha * (np.exp(np.minimum(x, 0)) - 1))).astype(np.float32)


def relu2(x):
    r = np.maximum(x, 0)
    return r * r


def identity(x):
    return x


ACTIVATIONS = {
    NF.ACTIVATION_RELU: relu,
    NF.ACTIVATION_MISH: mish,
    NF.ACTIVATION_NONE: identity,
    NF.ACTIVATION_TANH: lambda x: np.tanh(x),
    NF.ACTIVATION_SIGMOID: sigmoid,
    NF.ACTIVATION_SELU: selu,
    NF.ACTIVATION_SWISH: swish,
    NF.ACTIVATION_RELU_2: relu2,
}


def activation(fn_enum: int):
    """Activation function for a NetworkFormat.ActivationFunction value."""
    try:
        return ACTIVATIONS[fn_enum]
    except KeyError:
        raise ValueError(f"unsupported activation {NF.ActivationFunction.Name(fn_enum)}") from None


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, gammas, betas, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gammas + betas
