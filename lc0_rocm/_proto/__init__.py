"""Generated protobuf code for proto/net.proto (see scripts/gen_proto.py)."""
