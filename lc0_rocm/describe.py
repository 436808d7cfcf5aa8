"""`lc0-rocm describenet`: a summary of a network file, like `lc0 describenet`.

The General, Format, Training Parameters and Weights sections carry the same
lines as lc0 v0.32.1's (src/tools/describenet.cc), read from the upgraded
format as lc0 shows it. Where lc0 reads a multi-head net's top-level head
fields (empty there), we read the default heads ("vanilla", "winner"), and
we add the head names of multi-head nets and the parameter count.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from lc0_rocm._proto import net_pb2
from lc0_rocm.netspec import NetSpec
from lc0_rocm.weights import Node, Weights, WeightsError, load_weights
from lc0_rocm.weights.tree import size_of

NF = net_pb2.NetworkFormat
ENCODING = net_pb2.Format.Encoding

# (NetworkFormat field, label, enum) in lc0's order.
FORMAT_LINES = [
    ("input", "Input", NF.InputFormat),
    ("network", "Network", NF.NetworkStructure),
    ("policy", "Policy", NF.PolicyFormat),
    ("value", "Value", NF.ValueFormat),
    ("moves_left", "MLH", NF.MovesLeftFormat),
    ("default_activation", "Default activation", NF.DefaultActivation),
    ("smolgen_activation", "Smolgen activation", NF.ActivationFunction),
    ("ffn_activation", "FFN activation", NF.ActivationFunction),
    ("input_embedding", "Input embedding", NF.InputEmbeddingFormat),
]
TRAINING_LINES = [
    ("training_steps", "Training steps"), ("learning_rate", "Learning rate"),
    ("mse_loss", "MSE loss"), ("policy_loss", "Policy loss"), ("accuracy", "Accuracy"),
    ("lc0_params", "Lc0 Params"),
]


def line(label: str, value) -> str:
    """lc0's layout: the label right-aligned in 28 columns, then ': value'."""
    return f"{label:>28}: {value}"


def section(title: str) -> list[str]:
    return ["", title, "~" * len(title)]


def number(value) -> str:
    """A float the way C++ streams print it (6 significant digits)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def count_parameters(node) -> int:
    """Numbers stored in the file's tensors (all heads included)."""
    if node is None:
        return 0
    if isinstance(node, np.ndarray):
        return int(node.size)
    if isinstance(node, list):
        return sum(count_parameters(item) for item in node)
    if isinstance(node, Node):
        return sum(count_parameters(v) for v in node.__dict__.values())
    return 0


def describe(weights: Weights) -> str:
    w, fmt, net = weights, weights.format, weights.net
    spec = NetSpec.from_weights(w)
    out = section("General")
    major, minor, patch = w.min_version
    out.append(line("Minimal Lc0 version", f"v{major}.{minor}.{patch}"))

    out += section("Format")
    if w.weights_encoding is not None:
        out.append(line("Weights encoding", ENCODING.Name(w.weights_encoding)))
    for field, label, enum in FORMAT_LINES:
        if fmt.HasField(field):
            out.append(line(label, enum.Name(getattr(fmt, field))))

    if w.training_params is not None:
        out += section("Training Parameters")
        for field, label in TRAINING_LINES:
            value = getattr(w.training_params, field)
            if value is not None:
                out.append(line(label, number(value)))

    out += section("Weights")
    if net.encoder:
        out.append(line("Encoders", len(net.encoder)))
        out.append(line("Encoder heads", spec.heads))
        out.append(line("Embedding size", spec.embedding_size))
        out.append(line("Dmodel", spec.d_model))
        out.append(line("Encoder DFF", spec.dff))
    else:
        out.append(line("Blocks", spec.blocks))
        se_blocks = sum(1 for block in net.residual if block.se is not None)
        if se_blocks:
            out.append(line("SE blocks", se_blocks))
        out.append(line("Filters", spec.filters))
    out += policy_lines(w, spec)
    out.append(line("Value", "WDL" if spec.value == "wdl" else "Classical"))
    out.append(line("MLH", "Present" if net.ip2_mov_w is not None else "Absent"))
    if spec.multihead or len(spec.policy_heads) > 1 or len(spec.value_heads) > 1:
        out.append(line("Policy heads", ", ".join(spec.policy_heads)))
        out.append(line("Value heads", ", ".join(spec.value_heads)))
    out.append(line("Parameters", f"{count_parameters(net):,}"))
    return "\n".join(out[1:]) + "\n"


def policy_lines(w: Weights, spec: NetSpec) -> list[str]:
    head = w.policy_head("vanilla")
    if spec.policy == "attention":
        # lc0 names SELU for convolution bodies and DEFAULT otherwise.
        activation = "ACTIVATION_SELU" if spec.body == "resnet" else "ACTIVATION_DEFAULT"
        out = [line("Policy", "Attention"), line("Policy activation", activation)]
        if head.pol_encoder:
            ffn = (NF.ActivationFunction.Name(w.format.ffn_activation)
                   if spec.body == "attention" else "ACTIVATION_SELU")
            out += [line("Policy encoders", spec.policy_encoder_layers),
                    line("Policy encoder heads", spec.policy_encoder_heads),
                    line("Policy encoder Dmodel", size_of(head.pol_encoder[0].mha.q_b)),
                    line("Policy encoder DFF", spec.policy_encoder_dff),
                    line("Policy FFN activation", ffn)]
        out.append(line("Policy Dmodel", spec.policy_d_model))
        return out
    out = [line("Policy", "Convolution" if head.policy1 is not None else "Dense"),
           line("Policy activation", "ACTIVATION_DEFAULT")]
    if head.policy1 is None:
        out.append(line("Policy channels", spec.policy_channels))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="lc0-rocm describenet",
                                     description="Describe an lc0 network file.")
    parser.add_argument("path", nargs="?", help="network file (.pb.gz or .pb)")
    parser.add_argument("-w", "--weights", help="network file (same as PATH)")
    args = parser.parse_args(argv)
    if args.path and args.weights and args.path != args.weights:
        parser.error("give the network once: PATH or --weights PATH")
    target = args.weights or args.path
    try:
        from lc0_rocm.netfiles import NetNotFoundError, resolve_weights
        try:
            target = resolve_weights(target)   # a path, a fetched net's name, or discovery
        except NetNotFoundError as e:
            print(f"lc0-rocm describenet: {e}", file=sys.stderr)
            return 1
        text = describe(load_weights(target))
    except WeightsError as e:
        print(f"lc0-rocm describenet: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
