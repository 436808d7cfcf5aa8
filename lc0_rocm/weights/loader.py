"""`load_weights(path) -> Weights`: a net file read, upgraded, decoded and
checked (see the package doc), and `Weights`, what the rest of the package
reads a net from."""
from __future__ import annotations

import dataclasses
import os

from lc0_rocm._proto import net_pb2
from lc0_rocm.weights import decode, heads, shapes
from lc0_rocm.weights.tree import Node, WeightsError, decoded, has_linear16, is_attention_body


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

    def keeps_linear16(self) -> bool:
        """Are big layers kept in the file's LINEAR16 encoding
        (load_weights(..., keep_linear16=True))?"""
        return has_linear16(self.net)

    def decoded(self) -> "Weights":
        """These weights with every layer as float32 values (the kept
        LINEAR16 layers decoded, in place): what a backend that computes
        with the arrays takes. Returns self."""
        decoded(self.net)
        return self

    def policy_head_names(self) -> list[str]:
        """Policy heads the net has, lc0's names, 'vanilla' first."""
        return heads.policy_head_names(self.net)

    def value_head_names(self) -> list[str]:
        """Value heads the net has, lc0's names, 'winner' first."""
        return heads.value_head_names(self.net)

    def policy_head(self, name: str = "vanilla") -> Node:
        """The named policy head as a Node with PolicyHead's fields.

        Single-head files keep the head in top-level fields; multi-head files
        in policy_heads, where a head without its own ip_pol_w/b uses the
        shared policy_heads.ip_pol_w/b (or the top-level ones)."""
        if name not in self.policy_head_names():
            raise WeightsError(f"{self.path}: no policy head {name!r} "
                               f"(the net has {', '.join(self.policy_head_names())})")
        head = heads.policy_head(self.net, name)
        if name != "vanilla":  # load_weights checked the default head already
            _checked(self, shapes.check_policy_head, head)
        return head

    def value_head(self, name: str = "winner") -> Node:
        """The named value head as a Node with ValueHead's fields."""
        if name not in self.value_head_names():
            raise WeightsError(f"{self.path}: no value head {name!r} "
                               f"(the net has {', '.join(self.value_head_names())})")
        head = heads.value_head(self.net, name)
        if name != "winner":
            _checked(self, shapes.check_value_head, head)
        return head


def _checked(w: Weights, check, head: Node) -> None:
    """Run a head check, naming the file in its error. Heads other than the
    default ones are checked when asked for: lc0 loads a net whose unused
    heads are incomplete, and so do we."""
    try:
        check(w, head, shapes.body_channels(w))
    except WeightsError as e:
        raise WeightsError(f"{w.path}: {e}") from None


def load_weights(path, keep_linear16: bool = False) -> Weights:
    """Read an lc0 network file into a `Weights` (see the package doc).
    `keep_linear16`: an attention body's big LINEAR16 layers stay encoded
    (Linear16Layer), for the GPU backends, which decode them as they upload
    them. A convolution body's are decoded here all the same (on the
    decoding pool): the backends fold them with their batch norms on the
    host, so keeping them would only move their decoding onto one thread."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_weights() takes a net file's path, got {type(path).__name__} {path!r}")
    path = os.fspath(path)
    net, params = decode.load_net(path)           # params: the big layers', taken out of the message
    version = decode.check_version(net, path)
    decode.upgrade_format(net)
    decode.check_supported(net, path)
    fmt = net_pb2.NetworkFormat()
    fmt.CopyFrom(net.format.network_format)
    weights = Weights(
        format=fmt,
        net=decode.decode_weights(net.weights, "weights", keep_linear16 and is_attention_body(fmt), params),
        license=net.license,
        min_version=version,
        path=path,
        training_params=(decode.decode_message(net.training_params, "training_params")
                         if net.HasField("training_params") else None),
        weights_encoding=(net.format.weights_encoding
                          if net.format.HasField("weights_encoding") else None),
    )
    try:
        shapes.check_shapes(weights)
    except WeightsError as e:
        raise WeightsError(f"{path}: {e}") from None
    return weights
