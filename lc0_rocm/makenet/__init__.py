"""Random-weight test nets in lc0's file format (`lc0-rocm make-net`).

Each preset is a function (rng, **shape) -> net_pb2.Net registered in
PRESETS by the module that builds that family: resnet.py (convolution
bodies) and attention.py (attention bodies). Weights are drawn at scales that
keep activations finite and outputs non-degenerate, and stored LINEAR16 so
that lc0 v0.32.1 loads every file.
"""
from __future__ import annotations

import argparse
import gzip
import pathlib
from typing import Callable

import numpy as np

from lc0_rocm._proto import net_pb2

PRESETS: dict[str, Callable[..., net_pb2.Net]] = {}
PRESET_HELP: dict[str, str] = {}


def preset(name: str, help: str):
    """Decorator: register a preset builder under `name`."""
    def register(fn):
        PRESETS[name] = fn
        PRESET_HELP[name] = help
        return fn
    return register


def fill_layer(layer: net_pb2.Weights.Layer, values: np.ndarray) -> None:
    """Store `values` in `layer` as LINEAR16 (lc0's classic encoding)."""
    v = np.asarray(values, dtype=np.float32).ravel()
    lo, hi = float(v.min()), float(v.max())
    if hi == lo:
        hi = lo + 1e-6  # a constant tensor still needs a non-empty range
    q = np.round((v - lo) / (hi - lo) * 0xFFFF).astype("<u2")
    layer.min_val, layer.max_val = lo, hi
    layer.params = q.tobytes()


def new_net(network, policy, value, moves_left, input_format=1, **fmt) -> net_pb2.Net:
    """An empty Net with lc0's magic, version floor and format filled in."""
    net = net_pb2.Net()
    net.magic = 0x1C0
    net.license = "lc0-rocm random test net (no chess knowledge)"
    net.min_version.major, net.min_version.minor = 0, 30
    net.format.weights_encoding = net_pb2.Format.LINEAR16
    nf = net.format.network_format
    nf.input = input_format
    nf.output = net_pb2.NetworkFormat.OUTPUT_WDL
    nf.network = network
    nf.policy = policy
    nf.value = value
    nf.moves_left = moves_left
    for key, val in fmt.items():
        setattr(nf, key, val)
    return net


def save_net(net: net_pb2.Net, path) -> pathlib.Path:
    """Write `net` gzipped (a .pb path is written plain)."""
    path = pathlib.Path(path)
    data = net.SerializeToString()
    # Level 1: random weights barely compress, and bt4 writes 10x faster.
    path.write_bytes(data if path.suffix == ".pb" else gzip.compress(data, 1))
    return path


def _load_presets() -> None:
    from lc0_rocm.makenet import attention, resnet  # noqa: F401  (registers)


def make_net(preset_name: str, path, seed: int = 0, **shape) -> pathlib.Path:
    _load_presets()
    if preset_name not in PRESETS:
        raise ValueError(f"unknown preset {preset_name!r}; known: {', '.join(sorted(PRESETS))}")
    rng = np.random.default_rng(seed)
    return save_net(PRESETS[preset_name](rng, **shape), path)


def main(argv=None) -> int:
    _load_presets()
    parser = argparse.ArgumentParser(prog="lc0-rocm make-net", description=__doc__.splitlines()[0])
    parser.add_argument("preset", choices=sorted(PRESETS), help="; ".join(
        f"{k}: {PRESET_HELP[k]}" for k in sorted(PRESETS)))
    parser.add_argument("-o", "--output", required=True, help="file to write (.pb.gz or .pb)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--blocks", type=int, help="residual blocks or encoder layers")
    parser.add_argument("--filters", type=int, help="residual filters or embedding size")
    parser.add_argument("--heads", type=int, help="attention heads")
    parser.add_argument("--input-format", type=int, help="NetworkFormat.InputFormat value")
    args = parser.parse_args(argv)
    shape = {k: v for k, v in dict(blocks=args.blocks, filters=args.filters, heads=args.heads,
                                    input_format=args.input_format).items() if v is not None}
    path = make_net(args.preset, args.output, seed=args.seed, **shape)
    print(f"wrote {path} ({args.preset}, seed {args.seed})")
    return 0
