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
- the format upgrades of old files (`decode.upgrade_format`);
- old convolution blocks: missing biases become zeros, missing batch-norm
  gammas ones and betas zeros (so every ConvBlock with batch norm has all of
  biases, bn_means, bn_stddivs, bn_gammas, bn_betas);
- refusals: files too new, unknown enum values, ONNX nets, text formats,
  unsupported structures, RPE attention, and any tensor whose size does not
  fit the shape the net's format implies (`shapes.check_shapes`).
Every refusal is a `WeightsError` whose message names the field and value.

Multi-head nets (BT3/BT4) keep several policy and value heads; lc0 builds
them (and the single head of older nets) the same way, which
`Weights.policy_head(name)` / `Weights.value_head(name)` reproduce.

Modules: `tree` (Node, WeightsError), `decode` (file -> tree, upgrades,
refusals), `heads`, `shapes` (size checks), `loader` (Weights, load_weights).
"""
from __future__ import annotations

from lc0_rocm.weights.decode import decode_layer
from lc0_rocm.weights.loader import Weights, load_weights
from lc0_rocm.weights.tree import Node, WeightsError

__all__ = ["Node", "Weights", "WeightsError", "decode_layer", "load_weights"]
