"""Load lc0 network files (.pb.gz or .pb) into plain numpy arrays.

`load_weights(path)` returns a `Weights`: the network's format facts and a
tree that mirrors proto/net.proto's `Weights` message, where every `Layer`
becomes a 1-D float32 numpy array, every sub-message a `Node` (attribute
access with the proto's field names), every repeated message a list, and a
field absent from the file is None (or an empty list when repeated). A Layer
present in the file but holding no values counts as absent (lc0 treats an
empty tensor as a missing one).

What loading does beyond decoding, as lc0 v0.32.1 does (src/neural/loader.cc,
network_legacy.cc):
- the format upgrades of old files (`upgrade_format`);
- old convolution blocks: missing biases become zeros, missing batch-norm
  gammas ones and betas zeros (so every ConvBlock with batch norm has all of
  biases, bn_means, bn_stddivs, bn_gammas, bn_betas);
- refusals: files too new, unknown enum values, ONNX nets, text formats,
  unsupported structures, RPE attention, and any tensor whose size does not
  fit the shape the net's format implies (`check_shapes`).
Every refusal is a `WeightsError` whose message names the field and value.

Multi-head nets (BT3/BT4) keep several policy and value heads; lc0 builds
them (and the single head of older nets) the same way, which
`Weights.policy_head(name)` / `Weights.value_head(name)` reproduce.
"""
from __future__ import annotations

import dataclasses
import gzip
import io
import zlib

import numpy as np
from google.protobuf import unknown_fields

from lc0_rocm._proto import net_pb2
from lc0_rocm.errors import Lc0RocmError
from lc0_rocm.sizes import POLICY_SIZE

LAYER = net_pb2.Weights.Layer
NF = net_pb2.NetworkFormat
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

# Head names lc0 uses (its option values) -> our proto field names.
POLICY_HEAD_FIELDS = {"vanilla": "vanilla", "optimistic": "optimistic_st",
                      "soft": "soft", "opponent": "opponent"}
VALUE_HEAD_FIELDS = {"winner": "winner", "q": "q", "st": "st"}

POS_ENCODING_CHANNELS = 64  # lc0's fixed PE_MAP positional encoding
ATTENTION_POLICY_PROMOTIONS = 4  # ip4_pol_w rows: q, r, b, n


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


@dataclasses.dataclass
class Weights:
    """A loaded network: format facts plus decoded tensors.

    `format` is the NetworkFormat after lc0's upgrades of old files;
    `training_params` the file's TrainingParams as a Node (or None);
    `weights_encoding` the file-wide Format.Encoding value."""

    format: net_pb2.NetworkFormat
    net: Node
    license: str = ""
    min_version: tuple[int, int, int] = (0, 0, 0)
    path: str = ""
    training_params: Node | None = None
    weights_encoding: int | None = None

    def policy_head_names(self) -> list[str]:
        """Policy heads the net has, lc0's names, 'vanilla' first."""
        heads = self.net.policy_heads
        if heads is None:
            return ["vanilla"]
        return [name for name, field in POLICY_HEAD_FIELDS.items()
                if getattr(heads, field) is not None]

    def value_head_names(self) -> list[str]:
        """Value heads the net has, lc0's names, 'winner' first."""
        heads = self.net.value_heads
        if heads is None:
            return ["winner"]
        return [name for name, field in VALUE_HEAD_FIELDS.items()
                if getattr(heads, field) is not None]

    def policy_head(self, name: str = "vanilla") -> Node:
        """The named policy head as a Node with PolicyHead's fields.

        Single-head files keep the head in top-level fields; multi-head files
        in policy_heads, where a head without its own ip_pol_w/b uses the
        shared policy_heads.ip_pol_w/b (or the top-level ones)."""
        if name not in self.policy_head_names():
            raise WeightsError(f"{self.path}: no policy head {name!r} "
                               f"(the net has {', '.join(self.policy_head_names())})")
        head = _policy_head(self.net, name)
        if name != "vanilla":  # load_weights checked the default head already
            _checked(self, _check_policy_head, head)
        return head

    def value_head(self, name: str = "winner") -> Node:
        """The named value head as a Node with ValueHead's fields."""
        if name not in self.value_head_names():
            raise WeightsError(f"{self.path}: no value head {name!r} "
                               f"(the net has {', '.join(self.value_head_names())})")
        head = _value_head(self.net, name)
        if name != "winner":
            _checked(self, _check_value_head, head)
        return head


def _checked(w: Weights, check, head: Node) -> None:
    """Run a head check, naming the file in its error. Heads other than the
    default ones are checked when asked for: lc0 loads a net whose unused
    heads are incomplete, and so do we."""
    try:
        check(w, head, body_channels(w))
    except WeightsError as e:
        raise WeightsError(f"{w.path}: {e}") from None


# ---------------------------------------------------------------- decoding

def decode_layer(layer: net_pb2.Weights.Layer, name: str = "layer") -> np.ndarray:
    """One Layer message -> 1-D float32 array.

    LINEAR16 is q / 65535 * (max - min) + min in float32, in lc0 v0.32.1's
    operation order; FLOAT16, BFLOAT16 and FLOAT32 (lc0 master) are raw
    little-endian values. A layer without an encoding is LINEAR16."""
    raw = layer.params
    encoding = layer.encoding if layer.HasField("encoding") else LAYER.LINEAR16
    width = 4 if encoding == LAYER.FLOAT32 else 2
    if encoding not in (LAYER.LINEAR16, LAYER.FLOAT16, LAYER.BFLOAT16, LAYER.FLOAT32):
        raise WeightsError(f"{name}.encoding = {_enum_name(LAYER.Encoding, encoding)} "
                           "is not a supported layer encoding")
    if len(raw) % width:
        raise WeightsError(f"{name}: {LAYER.Encoding.Name(encoding)} data of {len(raw)} bytes "
                           f"is not a whole number of {width}-byte values")
    if encoding == LAYER.LINEAR16:
        lo = np.float32(layer.min_val)
        span = np.float32(layer.max_val) - lo
        values = np.frombuffer(raw, dtype="<u2").astype(np.float32)
        values /= np.float32(0xFFFF)  # in place: big nets hold ~10^8 values
        values *= span
        values += lo
    elif encoding == LAYER.FLOAT16:
        values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif encoding == LAYER.BFLOAT16:
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << np.uint32(16)
        values = bits.view(np.float32)
    else:
        values = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if len(layer.dims) and int(np.prod(layer.dims)) != values.size:
        raise WeightsError(f"{name}: dims {list(layer.dims)} do not match its "
                           f"{values.size} values")
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
            values = decode_layer(getattr(msg, name), f"{path}.{name}")
            fields[name] = values if values.size else None
        else:
            fields[name] = decode_message(getattr(msg, name), f"{path}.{name}")
    if msg.DESCRIPTOR.full_name == net_pb2.Weights.ConvBlock.DESCRIPTOR.full_name:
        _fill_conv_defaults(fields)
    return Node(**fields)


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
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                data = f.read(limit + 1)   # stops inflating just past the limit
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


def _check_version(net: net_pb2.Net, path: str) -> tuple[int, int, int]:
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


def _check_supported(net: net_pb2.Net, path: str) -> None:
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


def load_weights(path) -> Weights:
    """Read an lc0 network file into a `Weights` (see the module doc)."""
    path = str(path)
    net = parse_net(read_net_bytes(path), path)
    version = _check_version(net, path)
    upgrade_format(net)
    _check_supported(net, path)
    fmt = net_pb2.NetworkFormat()
    fmt.CopyFrom(net.format.network_format)
    weights = Weights(
        format=fmt,
        net=decode_message(net.weights, "weights"),
        license=net.license,
        min_version=version,
        path=path,
        training_params=(decode_message(net.training_params, "training_params")
                         if net.HasField("training_params") else None),
        weights_encoding=(net.format.weights_encoding
                          if net.format.HasField("weights_encoding") else None),
    )
    try:
        check_shapes(weights)
    except WeightsError as e:
        raise WeightsError(f"{path}: {e}") from None
    return weights


# ------------------------------------------------------------------- heads

def _policy_head(net: Node, name: str) -> Node:
    """lc0's MultiHeadWeights policy head `name`, fields of PolicyHead, with
    `path` naming where its tensors live (for messages)."""
    heads = net.policy_heads
    if heads is None:
        # Single-head file: the vanilla head is in the top-level fields.
        return Node(path="weights", ip_pol_w=net.ip_pol_w, ip_pol_b=net.ip_pol_b,
                    ip2_pol_w=net.ip2_pol_w, ip2_pol_b=net.ip2_pol_b,
                    ip3_pol_w=net.ip3_pol_w, ip3_pol_b=net.ip3_pol_b,
                    ip4_pol_w=net.ip4_pol_w, pol_encoder=net.pol_encoder,
                    pol_headcount=net.pol_headcount, policy1=net.policy1, policy=net.policy)
    field = POLICY_HEAD_FIELDS[name]
    head = getattr(heads, field)
    shared_w = heads.ip_pol_w if heads.ip_pol_w is not None else net.ip_pol_w
    shared_b = heads.ip_pol_b if heads.ip_pol_b is not None else net.ip_pol_b
    fields = dict(head.__dict__)
    fields["path"] = f"weights.policy_heads.{field}"
    if fields["ip_pol_w"] is None:
        fields["ip_pol_w"] = shared_w
    if fields["ip_pol_b"] is None:
        fields["ip_pol_b"] = shared_b
    return Node(**fields)


def _value_head(net: Node, name: str) -> Node:
    heads = net.value_heads
    if heads is None:
        return Node(path="weights", ip_val_w=net.ip_val_w, ip_val_b=net.ip_val_b,
                    ip1_val_w=net.ip1_val_w, ip1_val_b=net.ip1_val_b,
                    ip2_val_w=net.ip2_val_w, ip2_val_b=net.ip2_val_b,
                    ip_val_err_w=None, ip_val_err_b=None, ip_val_cat_w=None,
                    ip_val_cat_b=None, value=net.value)
    field = VALUE_HEAD_FIELDS[name]
    fields = dict(getattr(heads, field).__dict__)
    fields["path"] = f"weights.value_heads.{field}"
    return Node(**fields)


# ------------------------------------------------------------------ shapes

def is_attention_body(fmt: net_pb2.NetworkFormat) -> bool:
    return fmt.network in (NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
                           NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT)


def body_channels(w: Weights) -> int:
    """Channels per square the heads read: embedding size or filters."""
    if is_attention_body(w.format):
        return size_of(w.net.ip_emb_b)
    return size_of(w.net.input.biases) if w.net.input is not None else 0


def size_of(values) -> int:
    return 0 if values is None else int(values.size)


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
    check_dense(smolgen, "dense1_w", "dense1_b", name, hidden, 64 * channels)
    expect(smolgen.ln1_gammas, f"{name}.ln1_gammas", hidden)
    expect(smolgen.ln1_betas, f"{name}.ln1_betas", hidden)
    check_dense(smolgen, "dense2_w", "dense2_b", name, gen, hidden)
    expect(smolgen.ln2_gammas, f"{name}.ln2_gammas", gen)
    expect(smolgen.ln2_betas, f"{name}.ln2_betas", gen)
    if gen % heads:
        raise WeightsError(f"{name}: {gen} generator outputs are not a multiple of "
                           f"{heads} heads")
    expect(smolgen_w, "weights.smolgen_w", 64 * 64 * (gen // heads),
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


def input_embedding_inputs(w: Weights) -> int:
    """Channels per square fed to the attention body's input embedding."""
    if w.format.input_embedding == NF.INPUT_EMBEDDING_PE_DENSE:
        return 112 + size_of(w.net.ip_emb_preproc_b) // 64
    # PE_MAP (and NONE, which lc0's eigen backend treats the same way).
    return 112 + POS_ENCODING_CHANNELS


def check_shapes(w: Weights) -> None:
    """Every tensor the forward pass uses has the size the format implies."""
    fmt, net = w.format, w.net
    # lc0 always builds a "vanilla" policy and a "winner" value head.
    if "vanilla" not in w.policy_head_names():
        raise WeightsError("weights.policy_heads.vanilla is missing (every net needs it)")
    if "winner" not in w.value_head_names():
        raise WeightsError("weights.value_heads.winner is missing (every net needs it)")
    if is_attention_body(fmt):
        body = _check_attention_body(w)
    else:
        body = _check_resnet_body(w)
    # Only the heads lc0 uses by default; Weights.policy_head/value_head check
    # the others when asked for.
    _check_policy_head(w, _policy_head(net, "vanilla"), body)
    _check_value_head(w, _value_head(net, "winner"), body)
    if fmt.moves_left == NF.MOVES_LEFT_V1:
        _check_moves_left(w, body)


def _check_resnet_body(w: Weights) -> int:
    net = w.net
    filters = conv_channels(net.input, "weights.input")
    check_conv(net.input, "weights.input", filters, 112, 3)
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


def _check_attention_body(w: Weights) -> int:
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
        if pre == 0 or pre % 64:
            raise WeightsError(f"tensor weights.ip_emb_preproc_b has {pre} values, expected "
                               "a non-zero multiple of 64 squares")
        check_dense(net, "ip_emb_preproc_w", "ip_emb_preproc_b", "weights", pre, 64 * 12)
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
            expect(getattr(net, field), f"weights.{field}", embedding * 64,
                   f"{embedding} channels x 64 squares")
    if not net.encoder:
        raise WeightsError("weights.encoder is empty: an attention body needs encoder layers")
    check_encoder_stack(net.encoder, "weights.encoder", embedding, net.headcount or 0,
                        net.smolgen_w)
    return embedding


def _check_policy_head(w: Weights, head: Node, body: int) -> None:
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
        check_dense(head, "ip_pol_w", "ip_pol_b", name, POLICY_SIZE, planes * 64)


def _check_value_head(w: Weights, head: Node, body: int) -> None:
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
    check_dense(head, "ip1_val_w", "ip1_val_b", name, hidden, planes * 64)
    outputs = 3 if w.format.value == NF.VALUE_WDL else 1
    check_dense(head, "ip2_val_w", "ip2_val_b", name, outputs, hidden)


def _check_moves_left(w: Weights, body: int) -> None:
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
    check_dense(net, "ip1_mov_w", "ip1_mov_b", "weights", hidden, planes * 64)
    check_dense(net, "ip2_mov_w", "ip2_mov_b", "weights", 1, hidden)
