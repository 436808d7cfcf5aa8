"""An lc0 net file -> its protobuf message -> a Node tree, as lc0 v0.32.1
reads it (src/neural/loader.cc, network_legacy.cc): gunzip with a size
bound, refusals (ONNX, text formats, unknown enum values, files too new,
unsupported structures), the format upgrades of old files, and the decoding
of every Layer (LINEAR16, FLOAT16, BFLOAT16, FLOAT32) with old convolution
blocks' missing biases and batch-norm parameters filled in."""
from __future__ import annotations

import zlib

import numpy as np
from google.protobuf import unknown_fields

from lc0_rocm._proto import net_pb2
from lc0_rocm.weights import inflated
from lc0_rocm.weights.tree import (LAYER, NF, Linear16Layer, Node, WeightsError, linear16_values,
                                   replace_leaves)

WEIGHTS_MAGIC = 0x1C0

# lc0 v0.32.1 refuses files whose min_version is newer than itself; lc0
# master (0.33) added per-layer encodings. We read both, nothing newer.
NEWEST_SUPPORTED_VERSION = (0, 33, 999)
# lc0 accepts this version signature whatever its own version is.
COMPATIBLE_SIGNATURE = (97, 98, 99)
PER_LAYER_ENCODING_VERSION = (0, 33, 0)

SUPPORTED = {
    "network": (NF.NETWORK_CLASSICAL_WITH_HEADFORMAT, NF.NETWORK_SE_WITH_HEADFORMAT,
                NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
                NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT),
    "input": (NF.INPUT_CLASSICAL_112_PLANE, NF.INPUT_112_WITH_CASTLING_PLANE,
              NF.INPUT_112_WITH_CANONICALIZATION, NF.INPUT_112_WITH_CANONICALIZATION_HECTOPLIES,
              NF.INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON,
              NF.INPUT_112_WITH_CANONICALIZATION_V2,
              NF.INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON),
    "policy": (NF.POLICY_CLASSICAL, NF.POLICY_CONVOLUTION, NF.POLICY_ATTENTION),
    "value": (NF.VALUE_CLASSICAL, NF.VALUE_WDL),
    "moves_left": (NF.MOVES_LEFT_NONE, NF.MOVES_LEFT_V1),
}
# Activations an FFN or smolgen may name (SOFTMAX is an output, not a layer activation).
LAYER_ACTIVATIONS = (NF.ACTIVATION_DEFAULT, NF.ACTIVATION_MISH, NF.ACTIVATION_RELU,
                     NF.ACTIVATION_NONE, NF.ACTIVATION_TANH, NF.ACTIVATION_SIGMOID,
                     NF.ACTIVATION_SELU, NF.ACTIVATION_SWISH, NF.ACTIVATION_RELU_2)


# ---------------------------------------------------------------- decoding

# Layers at least this big are converted on a thread pool (numpy releases
# the GIL): a big net's ~10^8 values take ~0.4 s on one core.
PARALLEL_LAYER_VALUES = 1 << 16
DECODE_THREADS = 8


class _LayerData:
    """One Layer's bytes, checked, and how to turn them into float32."""
    __slots__ = ("raw", "encoding", "lo", "hi", "size")

    def __init__(self, layer: net_pb2.Weights.Layer, name: str, raw=None):
        raw = layer.params if raw is None else raw       # a kept copy's params (inflated.Copy) or the message's
        encoding = layer.encoding if layer.HasField("encoding") else LAYER.LINEAR16
        width = 4 if encoding == LAYER.FLOAT32 else 2
        if encoding not in (LAYER.LINEAR16, LAYER.FLOAT16, LAYER.BFLOAT16, LAYER.FLOAT32):
            raise WeightsError(f"{name}.encoding = {_enum_name(LAYER.Encoding, encoding)} "
                               "is not a supported layer encoding")
        if len(raw) % width:
            raise WeightsError(f"{name}: {LAYER.Encoding.Name(encoding)} data of {len(raw)} bytes "
                               f"is not a whole number of {width}-byte values")
        self.size = len(raw) // width
        if len(layer.dims) and int(np.prod(layer.dims)) != self.size:
            raise WeightsError(f"{name}: dims {list(layer.dims)} do not match its "
                               f"{self.size} values")
        self.raw, self.encoding = raw, encoding
        self.lo, self.hi = layer.min_val, layer.max_val   # LINEAR16's range

    def values(self) -> np.ndarray:
        """LINEAR16 is q / 65535 * (max - min) + min in float32, in lc0
        v0.32.1's operation order; FLOAT16, BFLOAT16 and FLOAT32 (lc0
        master) are raw little-endian values."""
        raw, encoding = self.raw, self.encoding
        if encoding == LAYER.LINEAR16:
            values = linear16_values(np.frombuffer(raw, dtype="<u2"), self.lo, self.hi)
        elif encoding == LAYER.FLOAT16:
            values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif encoding == LAYER.BFLOAT16:
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << np.uint32(16)
            values = bits.view(np.float32)
        else:
            values = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        return np.ascontiguousarray(values, dtype=np.float32)


def decode_layer(layer: net_pb2.Weights.Layer, name: str = "layer") -> np.ndarray:
    """One Layer message -> 1-D float32 array (see _LayerData.values; a
    layer without an encoding is LINEAR16)."""
    return _LayerData(layer, name).values()


class _Pending:
    """A layer's values being converted on the pool; its size is known."""
    __slots__ = ("future", "size")

    def __init__(self, future, size: int):
        self.future, self.size = future, size


def decode_weights(msg, path: str = "weights", keep_linear16: bool = False, params=None) -> Node:
    """decode_message over the whole tree, the big layers' conversions on a
    thread pool; the same Nodes and arrays as one thread makes. With
    `keep_linear16`, big LINEAR16 layers stay encoded (Linear16Layer).
    `params`: layers' params by name, taken out of `msg` (load_net)."""
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(DECODE_THREADS, thread_name_prefix="lc0-rocm-decode") as pool:
        root = decode_message(msg, path, pool, keep_linear16, params)
        return _resolved(root)


def _resolved(value):
    """`value` with every _Pending replaced by its array (in place)."""
    return replace_leaves(value, _Pending, lambda pending: pending.future.result())


def _decoded_layer(m, name: str, pool, keep_linear16: bool = False, params=None):
    data = _LayerData(m, name, params.get(name) if params else None)
    if data.size >= PARALLEL_LAYER_VALUES and keep_linear16 and data.encoding == LAYER.LINEAR16:
        return Linear16Layer(np.frombuffer(data.raw, dtype="<u2"), data.lo, data.hi)
    if pool is None or data.size < PARALLEL_LAYER_VALUES:
        return data.values()
    return _Pending(pool.submit(data.values), data.size)


def decode_message(msg, path: str = "weights", pool=None, keep_linear16: bool = False, params=None) -> Node:
    """Decode any message of the Weights tree into Nodes and arrays (with a
    `pool`, big layers as _Pending conversions: decode_weights resolves them;
    with `keep_linear16`, big LINEAR16 layers as Linear16Layers; `params`:
    layers' params by name where they were taken out of the message)."""
    fields = {}
    for fd in msg.DESCRIPTOR.fields:
        name = fd.name
        if fd.message_type is None:
            fields[name] = getattr(msg, name) if msg.HasField(name) else None
            continue
        is_layer = fd.message_type.full_name == LAYER.DESCRIPTOR.full_name
        if fd.is_repeated:
            fields[name] = [
                _decoded_layer(m, f"{path}.{name}[{i}]", pool, keep_linear16, params) if is_layer
                else decode_message(m, f"{path}.{name}[{i}]", pool, keep_linear16, params)
                for i, m in enumerate(getattr(msg, name))
            ]
        elif not msg.HasField(name):
            fields[name] = None
        elif is_layer:
            values = _decoded_layer(getattr(msg, name), f"{path}.{name}", pool, keep_linear16, params)
            fields[name] = values if values.size else None
        else:
            fields[name] = decode_message(getattr(msg, name), f"{path}.{name}", pool, keep_linear16, params)
    if msg.DESCRIPTOR.full_name == net_pb2.Weights.ConvBlock.DESCRIPTOR.full_name:
        _fill_conv_defaults(fields)
    return Node(**fields)


def layer_messages(msg, path: str = "weights"):
    """(name, Layer) for every layer set in a message of the Weights tree,
    named as decode_message names them."""
    for fd in msg.DESCRIPTOR.fields:
        if fd.message_type is None:
            continue
        is_layer = fd.message_type.full_name == LAYER.DESCRIPTOR.full_name
        if fd.is_repeated:
            items = [(f"{path}.{fd.name}[{i}]", m) for i, m in enumerate(getattr(msg, fd.name))]
        elif msg.HasField(fd.name):
            items = [(f"{path}.{fd.name}", getattr(msg, fd.name))]
        else:
            continue
        for name, m in items:
            if is_layer:
                yield name, m
            else:
                yield from layer_messages(m, name)


def _fill_conv_defaults(block: dict) -> None:
    """Old files leave out conv biases or batch-norm gammas/betas; lc0 uses
    zeros, ones and zeros (network_legacy.cc)."""
    channels = block["bn_means"].size if block["bn_means"] is not None else None
    if block["weights"] is None or channels is None:
        return
    if block["biases"] is None:
        block["biases"] = np.zeros(channels, np.float32)
    if block["bn_gammas"] is None:
        block["bn_gammas"] = np.ones(channels, np.float32)
    if block["bn_betas"] is None:
        block["bn_betas"] = np.zeros(channels, np.float32)


# ------------------------------------------------------------ file reading

# The largest net file we read, decompressed. lc0's biggest published nets
# (the BT4 transformers) are a few hundred MB with 16-bit weights; protobuf
# cannot parse a message over 2 GiB at all. The bound stops a gzip bomb
# (a few MB that inflate to GBs) before it takes the machine's memory.
MAX_NET_BYTES = 1 << 30


def gunzip(data: bytes, most: int) -> bytes:
    """The gzip members of `data` inflated, at most `most` bytes of them:
    what gzip.GzipFile(...).read(most) gives (CRC and size checked, zero
    padding between members allowed, anything else after one an error), in
    zlib's own loop (GzipFile's reads of 8 KiB blocks cost a 184 MB net
    about a quarter of its load time)."""
    parts: list[bytes] = []
    have = 0
    rest = memoryview(data)
    while have < most:
        inflater = zlib.decompressobj(wbits=31)          # one gzip member, trailer checked
        part = inflater.decompress(rest, most - have)
        parts.append(part)
        have += len(part)
        if have >= most:
            break
        if not inflater.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
        rest = memoryview(inflater.unused_data.lstrip(b"\x00"))
        if not len(rest):
            break
        if bytes(rest[:2]) != b"\x1f\x8b":
            raise OSError(f"not a gzipped file ({bytes(rest[:2])!r} after a member)")
    return b"".join(parts)


def read_net_bytes(path: str) -> bytes:
    """File contents, gunzipped when gzip-compressed."""
    limit = MAX_NET_BYTES
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise WeightsError(f"{path}: cannot read the file ({e.strerror or e})") from None
    if data[:2] == b"\x1f\x8b":
        # gzip's trailer holds the size mod 2^32: above the limit, the data is surely larger
        if len(data) >= 18 and int.from_bytes(data[-4:], "little") > limit:
            raise WeightsError(f"{path}: damaged or truncated gzip data, or it inflates to more than "
                               f"{limit >> 20} MiB (larger than any lc0 net); not a network file")
        try:
            data = gunzip(data, limit + 1)   # stops inflating just past the limit
        except (OSError, EOFError, zlib.error) as e:
            raise WeightsError(f"{path}: damaged or truncated gzip data ({e})") from None
    if len(data) > limit:
        raise WeightsError(f"{path}: more than {limit >> 20} MiB of network data (decompressed), "
                           "larger than any lc0 net; not a network file")
    if len(data) < 2:
        raise WeightsError(f"{path}: not an lc0 network file (only {len(data)} bytes)")
    if data[:2] in (b"1\n", b"2\n"):
        raise WeightsError(f"{path}: old text-format weights (version {data[:1].decode()}) "
                           "are not supported; convert the file to lc0's protobuf format")
    return data


def load_net(path: str) -> tuple[net_pb2.Net, dict]:
    """(the file's Net, params taken out of it by layer name): from the file's
    kept copy (inflated.Copy: the message without its big layers' params,
    and those params as views of one buffer) where it has one that checks
    out, else parse_net(read_net_bytes(path)) with the big layers' params
    taken out the same way and a copy kept for the next load."""
    try:
        with open(path, "rb") as f:
            kept = inflated.entry(path, f)
    except OSError:
        kept = None                         # read_net_bytes says why
    copy = kept.read(MAX_NET_BYTES) if kept is not None else None
    if copy is not None:
        try:
            net = parse_net(copy.message, path)
        except WeightsError:
            net = None
        if net is not None and _taken_out(net, copy.params):
            return net, copy.params
    data = read_net_bytes(path)
    net = parse_net(data, path)
    if kept is None:
        return net, {}
    params = []
    for name, layer in layer_messages(net.weights):
        if len(layer.params) >= inflated.MIN_PARAMS:
            params.append((name, layer.params))
            layer.ClearField("params")
    kept.write(data, net.SerializeToString(), params)
    return net, dict(params)


def _taken_out(net: net_pb2.Net, params: dict) -> bool:
    """Whether each of `params` names a layer of `net` without params of its own."""
    layers = dict(layer_messages(net.weights))
    return all(name in layers and not layers[name].params for name in params)


def looks_like_onnx(data: bytes) -> bool:
    """A bare ONNX ModelProto starts with ir_version (field 1, varint);
    an lc0 file starts with its fixed32 magic (field 1, 32-bit)."""
    return data[:1] == b"\x08" and data[1:2] < b"\x80"


def parse_net(data: bytes, path: str = "<bytes>") -> net_pb2.Net:
    if looks_like_onnx(data):
        raise WeightsError(f"{path}: this looks like a bare ONNX model; lc0-rocm reads lc0 "
                           "network files (.pb.gz / .pb) only")
    net = net_pb2.Net()
    try:
        net.ParseFromString(data)
    except Exception as e:  # protobuf raises DecodeError and others
        raise WeightsError(f"{path}: not an lc0 network file (the data is not a "
                           f"valid network protobuf: {type(e).__name__})") from None
    if net.magic != WEIGHTS_MAGIC:
        raise WeightsError(f"{path}: not an lc0 network file (magic number "
                           f"{net.magic:#x}, expected {WEIGHTS_MAGIC:#x})")
    check_unknown_enums(net, "net")
    return net


def _enum_name(enum_type, value: int) -> str:
    try:
        return f"{enum_type.Name(value)} ({value})"
    except ValueError:
        return str(value)


def check_unknown_enums(msg, path: str) -> None:
    """proto2 keeps an enum value it does not know as an unknown field and
    reports the field as unset; find such values and name the field."""
    for field in unknown_fields.UnknownFieldSet(msg):
        fd = msg.DESCRIPTOR.fields_by_number.get(field.field_number)
        if fd is not None and fd.enum_type is not None:
            known = ", ".join(v.name for v in fd.enum_type.values)
            raise WeightsError(f"{path}.{fd.name} = {field.data} is not a known "
                               f"{fd.enum_type.name} value (known: {known}); the file "
                               "needs a newer lc0 than lc0-rocm supports")
    for fd in msg.DESCRIPTOR.fields:
        if fd.message_type is None:
            continue
        if fd.is_repeated:
            for i, sub in enumerate(getattr(msg, fd.name)):
                check_unknown_enums(sub, f"{path}.{fd.name}[{i}]")
        elif msg.HasField(fd.name):
            check_unknown_enums(getattr(msg, fd.name), f"{path}.{fd.name}")


def upgrade_format(net: net_pb2.Net) -> None:
    """lc0's FixOlderWeightsFile: fill in what old files leave implicit."""
    had_format = net.format.HasField("network_format")
    nf = net.format.network_format
    weights = net.weights
    if not had_format:
        nf.input = NF.INPUT_CLASSICAL_112_PLANE
        nf.output = NF.OUTPUT_CLASSICAL
        nf.network = NF.NETWORK_CLASSICAL_WITH_HEADFORMAT
        nf.value = NF.VALUE_CLASSICAL
        nf.policy = NF.POLICY_CLASSICAL
    elif nf.network == NF.NETWORK_CLASSICAL:
        nf.network = NF.NETWORK_CLASSICAL_WITH_HEADFORMAT
        nf.value = NF.VALUE_CLASSICAL
        nf.policy = NF.POLICY_CLASSICAL
    elif nf.network == NF.NETWORK_SE:
        nf.network = NF.NETWORK_SE_WITH_HEADFORMAT
        nf.value = NF.VALUE_CLASSICAL
        nf.policy = NF.POLICY_CLASSICAL
    elif nf.network == NF.NETWORK_SE_WITH_HEADFORMAT and len(weights.encoder) > 0:
        # Attention body written with the old format enum.
        nf.network = NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT
        if weights.HasField("smolgen_w"):
            nf.ffn_activation = NF.ACTIVATION_RELU_2
            nf.smolgen_activation = NF.ACTIVATION_SWISH
    elif nf.network == NF.NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT:
        nf.network = NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT

    if nf.network == NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT:
        if weights.HasField("policy_heads") and weights.HasField("value_heads"):
            nf.network = NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT
            nf.input_embedding = NF.INPUT_EMBEDDING_PE_DENSE
        if not nf.HasField("input_embedding"):
            nf.input_embedding = NF.INPUT_EMBEDDING_PE_MAP


def check_version(net: net_pb2.Net, path: str) -> tuple[int, int, int]:
    v = net.min_version
    version = (v.major, v.minor, v.patch)
    if version != COMPATIBLE_SIGNATURE and version > NEWEST_SUPPORTED_VERSION:
        raise WeightsError(f"{path}: min_version = v{v.major}.{v.minor}.{v.patch}: the net "
                           "needs a newer lc0 than lc0-rocm supports (up to v0.33)")
    encoding = net.format.weights_encoding
    if (net.HasField("weights") and encoding != net_pb2.Format.LINEAR16
            and version < PER_LAYER_ENCODING_VERSION):
        raise WeightsError(f"{path}: format.weights_encoding = "
                           f"{_enum_name(net_pb2.Format.Encoding, encoding)} is not supported "
                           "(files older than lc0 v0.33 must be LINEAR16)")
    return version


def check_supported(net: net_pb2.Net, path: str) -> None:
    nf = net.format.network_format
    if nf.network == NF.NETWORK_ONNX or net.HasField("onnx_model"):
        raise WeightsError(f"{path}: format.network_format.network = NETWORK_ONNX: "
                           "ONNX networks are not supported")
    if not net.HasField("weights"):
        raise WeightsError(f"{path}: the file holds no weights")
    for field, allowed in SUPPORTED.items():
        value = getattr(nf, field)
        if value not in allowed:
            enum = nf.DESCRIPTOR.fields_by_name[field].enum_type
            raise WeightsError(f"{path}: format.network_format.{field} = "
                               f"{enum.values_by_number[value].name} is not supported")
    for field in ("ffn_activation", "smolgen_activation"):
        value = getattr(nf, field)
        if value not in LAYER_ACTIVATIONS:
            raise WeightsError(f"{path}: format.network_format.{field} = "
                               f"{NF.ActivationFunction.Name(value)} is not supported")
    attention_body = nf.network in (NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
                                    NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT)
    if attention_body and nf.policy != NF.POLICY_ATTENTION:
        raise WeightsError(f"{path}: format.network_format.policy = "
                           f"{NF.PolicyFormat.Name(nf.policy)} is not supported with an "
                           "attention body (lc0 supports only POLICY_ATTENTION there)")
