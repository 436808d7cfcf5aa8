"""Random-weight test nets in lc0's file format (`lc0-rocm make-net`).

Each preset is a function (rng, **shape) -> net_pb2.Net registered in
PRESETS by the module that builds that family: resnet.py (convolution
bodies) and attention.py (attention bodies). Weights are drawn at scales that
keep activations finite and outputs non-degenerate, and stored LINEAR16 so
that lc0 v0.32.1 loads every file.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import zlib
from typing import Callable

import numpy as np

from lc0_rocm._proto import net_pb2
from lc0_rocm.netfiles import TEST_NET_LICENSE
from lc0_rocm.outputs import OutputPathError, check_writable
from lc0_rocm.progress import Progress

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
    net.license = TEST_NET_LICENSE   # how discovery and loading tell a test net apart
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


WRITE_CHUNK = 4 << 20   # bytes per compress/write step (and progress update)


def save_net(net: net_pb2.Net, path: str | os.PathLike[str],
             progress: Progress | None = None) -> pathlib.Path:
    """Write `net` gzipped (a .pb path is written plain). A regular file is
    written under a temporary name and renamed when complete, so a failed
    write (disk full, Ctrl-C) leaves neither a partial net for discovery to
    pick up nor a damaged earlier file."""
    path = pathlib.Path(path)
    if progress is not None:
        progress.phase("serializing")
    data = memoryview(net.SerializeToString())
    if progress is not None:
        progress.phase(f"writing {len(data) / 1e6:.0f} MB to {path}")
        progress.set_total(len(data))
    special = path.exists() and not path.is_file()   # /dev/stdout, a pipe: write in place
    target = path if special else path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        with open(target, "wb") as f:
            # Level 0 (stored blocks): random weights barely compress. t82's
            # 189 MB took 7.5 s at level 1 to save 3 %, 0.2 s stored.
            # wbits 31: the gzip container, as gzip.compress writes it.
            packer = None if path.suffix == ".pb" else zlib.compressobj(0, zlib.DEFLATED, 31)
            for start in range(0, len(data), WRITE_CHUNK):
                chunk = data[start:start + WRITE_CHUNK]
                f.write(chunk if packer is None else packer.compress(chunk))
                if progress is not None:
                    progress.advance(len(chunk))
            if packer is not None:
                f.write(packer.flush())
        if not special:
            os.replace(target, path)
    except BaseException:
        if not special:
            target.unlink(missing_ok=True)
        raise
    return path


def _load_presets() -> None:
    from lc0_rocm.makenet import attention, resnet  # noqa: F401  (registers)


def make_net(preset_name: str, path: str | os.PathLike[str], seed: int = 0,
             progress: Progress | None = None, **shape: int) -> pathlib.Path:
    """Write a random-weight net of preset `preset_name` to `path`; `shape`
    (blocks, filters, heads, input_format) overrides the preset's sizes."""
    _load_presets()
    if preset_name not in PRESETS:
        raise ValueError(f"unknown preset {preset_name!r}; known: {', '.join(sorted(PRESETS))}")
    rng = np.random.default_rng(seed)
    if progress is not None:
        progress.phase("drawing random weights")
    return save_net(PRESETS[preset_name](rng, **shape), path, progress)


def main(argv: list[str] | None = None) -> int:
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
    if args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    for key, value in shape.items():
        if key != "input_format" and value < 1:
            parser.error(f"--{key} must be at least 1, got {value}")
    formats = net_pb2.NetworkFormat.InputFormat
    if args.input_format is not None and args.input_format not in formats.values():
        known = ", ".join(f"{v} ({formats.Name(v)})" for v in formats.values() if v)
        parser.error(f"--input-format {args.input_format} is not an lc0 input format; known: {known}")
    try:
        output = check_writable(args.output, "the net")
        with Progress(f"make-net {args.preset}", unit="B") as progress:
            path = make_net(args.preset, output, seed=args.seed, progress=progress, **shape)
    except (OutputPathError, ValueError) as e:
        print(f"lc0-rocm make-net: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:   # numpy: "Unable to allocate 671 GiB for an array ..."
        print(f"lc0-rocm make-net: not enough memory for this shape ({e}); "
              "use smaller --blocks/--filters", file=sys.stderr)
        return 1
    except OSError as e:       # disk full, permission lost mid-write
        print(f"lc0-rocm make-net: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"wrote {path} ({args.preset}, seed {args.seed}; random weights, a test net "
          "with no chess knowledge)")
    return 0
