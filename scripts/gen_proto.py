"""Regenerate lc0_rocm/_proto/net_pb2.py from proto/net.proto.

Needs grpcio-tools (in the `dev` extra). The generated module is committed so
that users need only the protobuf runtime; tests/test_proto.py checks that it
matches the schema.
"""
import pathlib
import sys

from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> int:
    out = ROOT / "lc0_rocm" / "_proto"
    rc = protoc.main([
        "protoc",
        f"-I{ROOT / 'proto'}",
        f"--python_out={out}",
        str(ROOT / "proto" / "net.proto"),
    ])
    return rc


if __name__ == "__main__":
    sys.exit(main())
