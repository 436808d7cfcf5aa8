"""The decoded net as the rest of the package sees it: a tree of `Node`s
mirroring proto/net.proto's `Weights` (every Layer a 1-D float32 array,
or, where the reader was asked to keep them, a big LINEAR16 layer as its
`Linear16Layer`; absent fields None), the error every refusal raises, and
the two facts asked of it everywhere (a tensor's size, the body's kind)."""
from __future__ import annotations

from typing import Protocol

import numpy as np

from lc0_rocm._proto import net_pb2
from lc0_rocm.errors import Lc0RocmError

LAYER = net_pb2.Weights.Layer
NF = net_pb2.NetworkFormat


class WeightsError(Lc0RocmError):
    """A network file that cannot be read or is not supported."""


class Node:
    """One decoded sub-message: fields as attributes, proto names."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        names = ", ".join(k for k, v in self.__dict__.items()
                          if v is not None and not (isinstance(v, list) and not v))
        return f"Node({names})"


def linear16_values(steps: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """LINEAR16 steps as float32: q / 65535 * (max - min) + min, in lc0
    v0.32.1's operation order (each step rounded on its own)."""
    lo = np.float32(lo)
    span = np.float32(hi) - lo
    values = steps.astype(np.float32)
    values /= np.float32(0xFFFF)  # in place: big nets hold ~10^8 values
    values *= span
    values += lo
    return values


class Linear16Layer:
    """A big Layer kept in the file's LINEAR16 encoding (16-bit steps from
    `lo` to `hi`) for a backend that decodes it as it uploads it (the GPU
    library: no float32 copy of a big net in this process). `size` and
    `len()` are its values'; `np.asarray(layer)` (or `values()`) decodes
    it as `decode_layer` does, bit for bit."""
    __slots__ = ("steps", "lo", "hi")
    dtype = np.dtype(np.float32)
    ndim = 1

    def __init__(self, steps: np.ndarray, lo: float, hi: float):
        self.steps, self.lo, self.hi = steps, lo, hi      # steps: little-endian uint16

    @property
    def size(self) -> int:
        return int(self.steps.size)

    @property
    def shape(self) -> tuple[int]:
        return (self.size,)

    def __len__(self) -> int:
        return self.size

    def values(self) -> np.ndarray:
        return linear16_values(self.steps, self.lo, self.hi)

    def __array__(self, dtype=None, copy=None):
        values = self.values()
        return values if dtype is None else values.astype(dtype, copy=False)


def replace_leaves(value, kind: type, make):
    """`value` (a Node, list or leaf) with every leaf of type `kind` under
    it replaced by make(leaf), in place; returns it."""
    if isinstance(value, kind):
        return make(value)
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = replace_leaves(item, kind, make)
    elif isinstance(value, Node):
        for key, item in value.__dict__.items():
            if isinstance(item, (kind, list, Node)):
                value.__dict__[key] = replace_leaves(item, kind, make)
    return value


def decoded(value):
    """`value` with every Linear16Layer under it (a Node, list or layer)
    replaced by its float32 values, in place; returns it."""
    return replace_leaves(value, Linear16Layer, Linear16Layer.values)


def has_linear16(value) -> bool:
    """Does `value` (a Node, list or layer) hold a Linear16Layer?"""
    if isinstance(value, Linear16Layer):
        return True
    if isinstance(value, list):
        return any(has_linear16(item) for item in value)
    if isinstance(value, Node):
        return any(has_linear16(item) for item in value.__dict__.values())
    return False


def is_attention_body(fmt: net_pb2.NetworkFormat) -> bool:
    return fmt.network in (NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
                           NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT)


def size_of(values) -> int:
    return 0 if values is None else int(values.size)


class DecodedNet(Protocol):
    """A net's format (after lc0's upgrades) and its Node tree: what the
    shape checks read (a Weights is one)."""

    format: net_pb2.NetworkFormat
    net: Node
