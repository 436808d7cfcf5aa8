"""The decoded net as the rest of the package sees it: a tree of `Node`s
mirroring proto/net.proto's `Weights` (every Layer a 1-D float32 array,
absent fields None), the error every refusal raises, and the two facts
asked of it everywhere (a tensor's size, the body's kind)."""
from __future__ import annotations

from typing import Protocol

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
