"""Regenerate lc0_rocm/_proto/net_pb2.py from proto/net.proto.

    python scripts/gen_proto.py            # rewrite the committed module
    python scripts/gen_proto.py --out DIR  # write DIR/net_pb2.py instead

Needs grpcio-tools (in the `dev` extra), which bundles protoc. The generated
module is committed so that users need only the protobuf runtime;
tests/test_proto.py checks that it matches the schema.
"""
import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
DEFAULT_OUT = ROOT / "lc0_rocm" / "_proto"


def generate(out_dir: pathlib.Path) -> int:
    """Run protoc on proto/net.proto; returns protoc's exit status."""
    from grpc_tools import protoc

    out_dir.mkdir(parents=True, exist_ok=True)
    return protoc.main([
        "protoc",
        f"-I{PROTO_DIR}",
        f"--python_out={out_dir}",
        str(PROTO_DIR / "net.proto"),
    ])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                        help=f"output folder (default {DEFAULT_OUT.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    return generate(args.out)


if __name__ == "__main__":
    sys.exit(main())
