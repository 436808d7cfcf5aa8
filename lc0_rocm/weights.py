"""Load lc0 network files (.pb.gz or .pb) into plain numpy arrays.

`load_weights(path)` returns a `Weights`: the network's format facts and a
tree that mirrors proto/net.proto's `Weights` message, where every `Layer`
becomes a 1-D float32 numpy array, every sub-message a `Node` (attribute
access with the proto's field names), every repeated message a list, and a
field absent from the file is None (or an empty list when repeated).
"""
from __future__ import annotations

import dataclasses
import gzip
import zlib

import numpy as np

from lc0_rocm._proto import net_pb2

LAYER = net_pb2.Weights.Layer
WEIGHTS_MAGIC = 0x1C0


class WeightsError(Exception):
    """A network file that cannot be read or is not supported."""


class Node:
    """One decoded sub-message: fields as attributes, proto names."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        names = ", ".join(k for k, v in self.__dict__.items() if v is not None)
        return f"Node({names})"


@dataclasses.dataclass
class Weights:
    """A loaded network: format facts plus decoded tensors."""

    format: net_pb2.NetworkFormat
    net: Node
    license: str = ""
    min_version: tuple[int, int, int] = (0, 0, 0)
    path: str = ""


def decode_layer(layer: net_pb2.Weights.Layer, name: str = "layer") -> np.ndarray:
    """One Layer message -> float32 array (1-D, or shaped by `dims` if set)."""
    raw = layer.params
    encoding = layer.encoding or LAYER.LINEAR16
    if encoding == LAYER.LINEAR16:
        if len(raw) % 2:
            raise WeightsError(f"{name}: LINEAR16 data has an odd byte count ({len(raw)})")
        q = np.frombuffer(raw, dtype="<u2").astype(np.float32)
        lo, hi = np.float32(layer.min_val), np.float32(layer.max_val)
        values = q / np.float32(0xFFFF) * (hi - lo) + lo
    elif encoding == LAYER.FLOAT16:
        if len(raw) % 2:
            raise WeightsError(f"{name}: FLOAT16 data has an odd byte count ({len(raw)})")
        values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif encoding == LAYER.BFLOAT16:
        if len(raw) % 2:
            raise WeightsError(f"{name}: BFLOAT16 data has an odd byte count ({len(raw)})")
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        values = bits.view(np.float32)
    elif encoding == LAYER.FLOAT32:
        if len(raw) % 4:
            raise WeightsError(f"{name}: FLOAT32 data is not a multiple of 4 bytes ({len(raw)})")
        values = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    else:
        raise WeightsError(f"{name}: unsupported layer encoding {encoding}")
    return np.ascontiguousarray(values, dtype=np.float32)


def decode_message(msg, path: str = "weights") -> Node:
    """Decode any message of the Weights tree into Nodes and arrays."""
    fields = {}
    for fd in msg.DESCRIPTOR.fields:
        name = fd.name
        if fd.message_type is None:
            fields[name] = getattr(msg, name) if msg.HasField(name) else None
            continue
        is_layer = fd.message_type.full_name == LAYER.DESCRIPTOR.full_name
        if fd.is_repeated:
            fields[name] = [
                decode_layer(m, f"{path}.{name}[{i}]") if is_layer
                else decode_message(m, f"{path}.{name}[{i}]")
                for i, m in enumerate(getattr(msg, name))
            ]
        elif not msg.HasField(name):
            fields[name] = None
        elif is_layer:
            fields[name] = decode_layer(getattr(msg, name), f"{path}.{name}")
        else:
            fields[name] = decode_message(getattr(msg, name), f"{path}.{name}")
    return Node(**fields)


def read_net_bytes(path: str) -> bytes:
    """File contents, gunzipped when gzip-compressed."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise WeightsError(f"{path}: damaged gzip data ({e})") from None
    return data


def parse_net(data: bytes, path: str = "<bytes>") -> net_pb2.Net:
    net = net_pb2.Net()
    try:
        net.ParseFromString(data)
    except Exception as e:  # protobuf raises DecodeError and others
        raise WeightsError(f"{path}: not an lc0 network file ({type(e).__name__})") from None
    if net.magic != WEIGHTS_MAGIC:
        raise WeightsError(f"{path}: not an lc0 network file (bad magic number)")
    return net


def load_weights(path: str) -> Weights:
    """Read an lc0 network file into a `Weights`."""
    net = parse_net(read_net_bytes(str(path)), str(path))
    fmt = net_pb2.NetworkFormat()
    fmt.CopyFrom(net.format.network_format)
    v = net.min_version
    return Weights(
        format=fmt,
        net=decode_message(net.weights),
        license=net.license,
        min_version=(v.major, v.minor, v.patch),
        path=str(path),
    )
