"""The GPU library's host decoding of a net file's LINEAR16 layers
(native/src/tensor/linear16.h), which it applies to big layers passed
undecoded, against the file reader's numpy decoding
(lc0_rocm/weights/decode.py): the same float32 bits for every one of the
65536 steps over varied ranges, compiled with the system C++ compiler as
the library's build compiles it and again with the host's fused
multiply-add allowed and encouraged (which the header must not use)."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import hip_cpu

from lc0_rocm._proto import net_pb2
from lc0_rocm.weights import decode_layer

ROOT = pathlib.Path(__file__).resolve().parent.parent


def compiled(tmp_path, flags: list[str]) -> pathlib.Path | None:
    compiler = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if compiler is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / f"linear16{len(flags)}"
    build = subprocess.run([compiler, "-std=c++17", *flags, f"-I{ROOT / 'native' / 'src'}", "-o", str(exe),
                            str(ROOT / "tests" / "native_linear16_check.cpp")], capture_output=True, text=True)
    return exe if build.returncode == 0 else None


def ranges() -> list[tuple[float, float]]:
    rng = np.random.default_rng(72)
    fixed = [(-1.0, 1.0), (0.0, 1.0), (-0.0371, 0.0412), (-3.5e-3, 2.9e-3), (1e-8, 3e-8), (-250.0, 125.5),
             (0.5, 0.5)]
    drawn = [tuple(sorted(rng.normal(0, 10.0 ** rng.integers(-4, 2), 2).astype(np.float32).tolist()))
             for _ in range(25)]
    return fixed + drawn


def test_linear16_decodes_as_the_file_reader(tmp_path):
    build = compiled(tmp_path, ["-O2"])
    assert build is not None, "the plain build failed"
    builds = [build]
    fused = compiled(tmp_path, ["-O3", "-march=native", "-ffp-contract=fast"])
    if fused is not None:
        builds.append(fused)
    steps = np.arange(1 << 16, dtype=np.uint16)
    with open(tmp_path / "in.bin", "wb") as f:
        for lo, hi in ranges():
            np.array([lo, hi], np.float32).tofile(f)
            steps.tofile(f)
    expected = []
    for lo, hi in ranges():
        layer = net_pb2.Weights.Layer(min_val=lo, max_val=hi, params=steps.tobytes())
        expected.append(decode_layer(layer))
    expected = np.concatenate(expected).view(np.uint32)
    for exe in builds:
        run = subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
        ours = np.fromfile(tmp_path / "out.bin", dtype=np.uint32)
        wrong = np.flatnonzero(ours != expected)
        assert wrong.size == 0, (exe.name, wrong.size, [(int(i), hex(int(ours[i])), hex(int(expected[i])))
                                                        for i in wrong[:5]])


@pytest.mark.parametrize("preset", ["tiny-resnet", "tiny-resnet-attnpolicy"])
def test_the_reader_decodes_a_convolution_body_whole(preset, make_test_net, monkeypatch):
    """A convolution body's layers are folded on the host by every backend:
    load_weights decodes them even when asked to keep big ones."""
    from lc0_rocm.weights import decode, load_weights

    monkeypatch.setattr(decode, "PARALLEL_LAYER_VALUES", 1)
    assert not load_weights(make_test_net(preset), keep_linear16=True).keeps_linear16()


@pytest.mark.parametrize("preset", ["tiny-attn", "tiny-bt"])
def test_the_reader_keeps_big_layers_for_the_gpu_and_decodes_them_for_others(preset, make_test_net, monkeypatch):
    """load_weights(keep_linear16=True) keeps big LINEAR16 layers encoded:
    their sizes (what the shape checks and NetSpec read) and decoded values
    are the usual ones; the GPU library's tensors carry them as they are;
    a backend that computes with arrays gets them decoded from
    backends.create, with the same outputs; load_network keeps them for
    GPU backends and auto only."""
    import chess

    from lc0_rocm import backends, network
    from lc0_rocm.backends.native_tensors import named_tensors
    from lc0_rocm.netspec import NetSpec
    from lc0_rocm.weights import decode, load_weights
    from lc0_rocm.weights.tree import Linear16Layer

    path = make_test_net(preset)
    monkeypatch.setattr(decode, "PARALLEL_LAYER_VALUES", 1000)   # a tiny net's biggest layers are kept
    plain, kept = load_weights(path), load_weights(path, keep_linear16=True)
    assert kept.keeps_linear16() and not plain.keeps_linear16()
    assert NetSpec.from_weights(kept) == NetSpec.from_weights(plain)
    ours, theirs = named_tensors(kept), named_tensors(plain)
    assert ours.keys() == theirs.keys()
    layers = [k for k, v in ours.items() if isinstance(v, Linear16Layer)]
    assert layers and len(layers) < len(ours)          # big ones kept, small ones decoded
    for key in ours:
        np.testing.assert_array_equal(np.asarray(ours[key]), theirs[key])
        assert np.asarray(ours[key]).dtype == theirs[key].dtype

    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    with network.load_network(plain, backend="cpu") as a, network.load_network(kept, backend="cpu") as b:
        assert not kept.keeps_linear16()                  # decoded for the cpu backend
        ea, eb = a.evaluate(board), b.evaluate(board)
        assert ea.wdl == eb.wdl and ea.policy == eb.policy

    read = []
    monkeypatch.setattr(network, "load_weights", lambda file, keep_linear16=False:
                        read.append(keep_linear16) or load_weights(file, keep_linear16))
    for backend in ("cpu", "auto", "random"):
        network.load_network(str(path), backend=backend).close()
    assert read == [False, True, False]
    assert backends.takes_linear16("cuda-fp16") and backends.takes_linear16("demux")
    assert not backends.takes_linear16("cpu")


def test_weight_upload_under_hip_cpu(tmp_path):
    """The library's weights upload (tensor/weight_store.cpp and
    staged_upload.cpp: page-locked slots, pieces converted by several
    threads) run on the CPU under HIP-CPU: LINEAR16 and float32 tensors,
    alone and joined, bigger than a slot, to float32 and half buffers, read
    back bit for bit as linear16.h and half_bits.h make them."""
    hip_cpu.checkout()
    hip_cpu.build_and_run(tmp_path, hip_cpu.copy_sources(tmp_path), "native_upload_hipcpu.cpp")
