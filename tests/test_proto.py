"""The committed lc0_rocm/_proto/net_pb2.py is what scripts/gen_proto.py
makes from proto/net.proto today."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

from lc0_rocm._proto import net_pb2

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "lc0_rocm" / "_proto" / "net_pb2.py"


def load_script():
    spec = importlib.util.spec_from_file_location("gen_proto", ROOT / "scripts" / "gen_proto.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generated_descriptor(out_dir: pathlib.Path):
    """FileDescriptorProto that protoc makes from proto/net.proto."""
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc
    desc = out_dir / "net.desc"
    assert protoc.main(["protoc", f"-I{ROOT / 'proto'}", f"--descriptor_set_out={desc}",
                        str(ROOT / "proto" / "net.proto")]) == 0
    files = descriptor_pb2.FileDescriptorSet()
    files.ParseFromString(desc.read_bytes())
    return without_json_names(files.file[0])


def without_json_names(file_proto):
    """protoc's descriptor sets add json_name, which generated modules leave out."""
    def clear(message):
        for field in message.field:
            field.ClearField("json_name")
        for nested in message.nested_type:
            clear(nested)
    for message in file_proto.message_type:
        clear(message)
    return file_proto


def test_committed_module_matches_schema(tmp_path):
    pytest.importorskip("grpc_tools", reason="regenerating needs grpcio-tools (dev extra)")
    from google.protobuf import descriptor_pb2
    committed = descriptor_pb2.FileDescriptorProto()
    committed.ParseFromString(net_pb2.DESCRIPTOR.serialized_pb)
    assert without_json_names(committed) == generated_descriptor(tmp_path), (
        "lc0_rocm/_proto/net_pb2.py is stale: run `python scripts/gen_proto.py`")


def test_regeneration_is_reproducible(tmp_path):
    pytest.importorskip("grpc_tools", reason="regenerating needs grpcio-tools (dev extra)")
    assert load_script().main(["--out", str(tmp_path)]) == 0
    fresh = (tmp_path / "net_pb2.py").read_text().splitlines()
    committed = COMMITTED.read_text().splitlines()
    if fresh[4] != committed[4]:  # "# Protobuf Python Version: x.y.z"
        pytest.skip(f"this grpcio-tools bundles another protoc ({fresh[4]!r} vs "
                    f"{committed[4]!r}); the descriptor test still applies")
    assert fresh == committed


def test_schema_has_lc0_field_numbers():
    # A few numbers that files from lc0's training tools depend on
    # (lc0's proto/net.proto).
    w = net_pb2.Weights.DESCRIPTOR.fields_by_name
    assert (w["input"].number, w["residual"].number, w["encoder"].number,
            w["smolgen_w"].number, w["policy_heads"].number, w["value_heads"].number) \
        == (1, 2, 27, 35, 45, 44)
    layer = net_pb2.Weights.Layer.DESCRIPTOR.fields_by_name
    assert (layer["encoding"].number, layer["dims"].number) == (4, 5)
    assert net_pb2.Net.DESCRIPTOR.fields_by_name["magic"].type == \
        net_pb2.Net.DESCRIPTOR.fields_by_name["magic"].TYPE_FIXED32
