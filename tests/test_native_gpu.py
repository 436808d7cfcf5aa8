"""Native GPU backends on a GPU (tests marked `gpu`, skipped with a reason
where no GPU backend is usable): parity with the cpu backend on every path
the plan (native/src/plan/) can take, which the backend options disable= /
force= and the settings select (native.OPTIONS); describe() names the path
where the GPU is one whose plan the test knows."""
from __future__ import annotations

import dataclasses
import pathlib
import re
import subprocess
import threading

import numpy as np
import pytest

from lc0_rocm import backends
from lc0_rocm.backends import native, native_build
from lc0_rocm.backends.base import unpack_planes
from lc0_rocm.makenet import attention as attention_nets
from lc0_rocm.makenet import resnet as resnet_nets
from lc0_rocm.makenet import save_net
from lc0_rocm.weights import load_weights
from tests.gpu_paths import check_paths_match_cpu, gpu_backend_or_skip, paths, random_packed, with_disabled


ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 1e-2)])
@pytest.mark.parametrize("net", ["maia", "tiny-resnet", "tiny-resnet-classical",
                                 "tiny-resnet-mish", "tiny-resnet-attnpolicy", "tiny-attn", "tiny-bt"])
def test_gpu_parity_with_cpu(net, precision, tol, maia_path, make_test_net):
    name = gpu_backend_or_skip(precision)
    w = load_weights(maia_path if net == "maia" else make_test_net(net))
    masks, values = random_packed(w, 70)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    gpu = backends.create(name, w, max_batch=32)   # 70 positions: split into 3 passes
    got = gpu.forward_packed(masks, values)
    for g, r in zip(got, ref):
        assert not np.isnan(g).any()
        assert np.linalg.norm(g - r) <= tol * max(np.linalg.norm(r), 1e-6)
    planes = gpu.forward(unpack_planes(masks[:5], values[:5]))
    assert np.linalg.norm(planes[0] - ref[0][:5]) <= tol * np.linalg.norm(ref[0][:5])
    gpu.close()


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("net", ["tiny-attn", "tiny-bt"])
def test_gpu_layers_kept_in_linear16_give_the_decoded_results_bit_for_bit(net, precision, make_test_net, monkeypatch):
    """Layers passed undecoded (LINEAR16, which the library decodes as it
    uploads them: native/src/tensor/linear16.h) give a backend whose
    outputs equal, bit for bit, those of one made from float32 arrays;
    every layer is kept here (the reader keeps only big ones), so the
    library meets them in each of its uses: uploaded as they are, joined
    (Q|K|V), copied to the host and re-ordered (gates). Attention bodies
    only: the reader decodes a convolution body's layers (folded on the
    host), so none of them reaches the library undecoded."""
    from lc0_rocm.backends.native_tensors import named_tensors
    from lc0_rocm.weights import decode
    from lc0_rocm.weights.tree import Linear16Layer
    name = gpu_backend_or_skip(precision)
    path = make_test_net(net)
    decoded = load_weights(path)
    monkeypatch.setattr(decode, "PARALLEL_LAYER_VALUES", 1)
    kept = load_weights(path, keep_linear16=True)
    assert sum(isinstance(v, Linear16Layer) for v in named_tensors(kept).values()) > 0
    masks, values = random_packed(decoded, 70)
    results = []
    for w in (decoded, kept):
        gpu = backends.create(name, w, max_batch=32)
        try:
            results.append(gpu.forward_packed(masks, values))
        finally:
            gpu.close()
    assert kept.keeps_linear16()            # the GPU backend took them as they were
    for a, b in zip(*results):
        assert not np.isnan(a).any()
        np.testing.assert_array_equal(a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("net", ["maia", "tiny-attn"])
def test_gpu_mapped_io_equals_copies(net, maia_path, make_test_net):
    """Batches up to mapped_io (a backend option) read their input from and write their
    outputs into pinned host memory in place (no copies on the stream): the
    same kernels, so the same outputs bit for bit as with the copies, packed
    and from planes, plain, captured and replayed; batches above the limit
    keep the copies. maia has no moves-left head (its output must read
    zero), tiny-attn has one."""
    name = gpu_backend_or_skip("fp16")
    w = load_weights(maia_path if net == "maia" else make_test_net(net))
    masks, values = random_packed(w, 40)
    results = {}
    for mapped in ("0", "16"):
        gpu = backends.create(name, w, max_batch=40, mapped_io=mapped)
        for n in (1, 7, 16, 17, 40):
            assert ("in mapped host memory" in gpu.describe(n)) == (mapped == "16" and n <= 16), gpu.describe(n)
        runs = []
        for n in (1, 1, 1, 7, 7, 7, 16, 16, 16, 40):
            runs.append(gpu.forward_packed(masks[:n], values[:n]))
        runs.append(gpu.forward(unpack_planes(masks[:5], values[:5])))
        gpu.close()
        results[mapped] = runs
    for copied, in_place in zip(results["0"], results["16"]):
        for a, b in zip(copied, in_place):
            assert not np.isnan(b).any()
            np.testing.assert_array_equal(a, b)
    if net == "maia":
        assert not results["16"][0][2].any()  # moves left: zeros without the head


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 1e-2)])
@pytest.mark.parametrize("opts", [{"disable": "fused_se"}, {"force": "fused_se"},
                                  {"disable": "winograd/implicit_conv"}, {"disable": "implicit_conv"},
                                  {"force": "implicit_conv"}, {"disable": "value_tail"},
                                  {"force": "implicit_conv", "disable": "fused_se"}, {"force": "winograd"},
                                  {"force": "winograd", "disable": "fused_se"},
                                  {"force": "winograd", "disable": "winograd_chain"}, {"dependent_launch": "off"}])
@pytest.mark.parametrize("net", ["maia", "tiny-resnet", "tiny-resnet-classical"])
def test_gpu_convolution_paths_match_cpu(net, opts, precision, tol, maia_path, make_test_net):
    """Every implementation of a convolution layer (native/src/conv3x3.h):
    SE fused or in 7 launches at any width, im2col + GEMM at every batch size (and below Winograd's threshold, with
    the deferred epilogue), the implicit-GEMM tensor-core kernel at every
    batch size (a no-op where the device has none), Winograd F(4x4, 3x3) at
    every batch size, the residual tower's Winograd chain
    (winograd_output_input.hip) or a layer at a time; kernels launched as
    dependent launches (gpu_compat.h; where the GPU has them) or plainly;
    the value head's last layer and its output in one launch
    (value_head_tail.hip, WDL and classical heads) or as before.
    The residual tower in one launch (resnet_tower.hip, the default for
    64-channel nets in half) is off here, so that every layer takes the
    path asked for; test_gpu_resnet_tower_matches_cpu covers it."""
    name = gpu_backend_or_skip(precision)
    w = load_weights(maia_path if net == "maia" else make_test_net(net))
    check_paths_match_cpu(w, name, with_disabled(opts, "resnet_tower"), 200, tol)


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 1e-2)])
@pytest.mark.parametrize("value_hidden", [36, 40, 64])
@pytest.mark.parametrize("body", ["resnet", "resnet-classical", "attention"])
def test_gpu_value_head_tail_widths_match_cpu(body, value_hidden, precision, tol, tmp_path):
    """The value head's last layer and output in one launch
    (value_head_tail.hip) at hidden widths that take each of its ways: 64
    eight threads a position (fp16 and fp32), 40 a thread a position, 36
    (not 16 bytes' worth in half) the product and value_output instead;
    WDL and classical heads, residual and attention bodies."""
    name = gpu_backend_or_skip(precision)
    rng = np.random.default_rng(value_hidden)
    if body == "attention":
        net = attention_nets.build(rng, dataclasses.replace(attention_nets.TINY_ATTN, value_hidden=value_hidden))
    else:
        classical = body == "resnet-classical"
        net = resnet_nets.build_resnet(rng, resnet_nets.ResNetShape(
            blocks=2, filters=16, value="classical" if classical else "wdl", moves_left=not classical,
            value_hidden=value_hidden))
    w = load_weights(save_net(net, tmp_path / "net.pb.gz"))
    check_paths_match_cpu(w, name, {}, 40, tol)


def resnet_tower_path(opts, conv_policy=True):
    """expect_path for the residual tower in one launch under `opts`: which
    layout resnet_tower.hip / resnet_tower_cluster.hip must take on an
    sm_90 GPU (H100, H200: 227 KB of shared memory per block, clusters; the
    plan's rules, plan/conv_plan.cpp), and whether resnet_tower.hip runs a
    convolution policy's first layer too (with two positions per block;
    disable=tower_policy keeps it out); None elsewhere (other GPUs have
    other shared memory and no clusters; there only the parity is checked)."""
    disabled, forced = paths(opts, "disable"), paths(opts, "force")

    def expect(info, n):
        if info["vendor"] != "nvidia" or info["arch"] != "sm_90":
            return None
        if "resnet_tower" in disabled:
            return r"residual tower (a layer at a time|as one Winograd chain) \(batch"
        pairs_forced = "tower_pairs" in forced
        clusters = 0 if "tower_cluster" in disabled or pairs_forced else info["multiprocessors"] // 4
        if n <= clusters:
            path = "a position per cluster of 4 blocks"
        elif (pairs_forced or n > info["multiprocessors"]) and "tower_pairs" not in disabled:
            path = "two positions per block"
        else:
            path = "a position per block" + ("" if "tower_split" in disabled else ", K split")
        if conv_policy and "tower_policy" not in disabled and path == "two positions per block":
            path += ", the policy's first convolution in it"
        return re.escape(f"residual tower in one launch, {path} (batch {n})")
    return expect


@pytest.mark.gpu
@pytest.mark.parametrize("opts", [{}, {"dependent_launch": "off"}, {"disable": "tower_cluster"},
                                  {"disable": "tower_cluster", "dependent_launch": "off"},
                                  {"disable": "tower_cluster/tower_pairs"},
                                  {"disable": "tower_cluster/tower_pairs/tower_split"}, {"force": "tower_pairs"},
                                  {"disable": "resnet_tower"}, {"disable": "tower_policy"},
                                  {"disable": "tower_policy", "force": "tower_pairs"}])
@pytest.mark.parametrize("net", ["maia", "tiny-resnet", "tiny-resnet-classical", "tiny-resnet-mish"])
def test_gpu_resnet_tower_matches_cpu(net, opts, maia_path, make_test_net):
    """The residual tower in one launch (native/src/kernels/resnet_tower.hip:
    64 channels, half, where the GPU has mma.sync; the default there) or
    off: a position per cluster of 4 blocks (resnet_tower_cluster.hip,
    small batches on sm_90), a position (K split over two warp groups or
    not) or a pair of positions per block at a time, against the cpu
    backend: with SE and ReLU (maia-1900), without SE (classical heads),
    with mish and convolution biases; batches 1 and 17 leave a pair short,
    200 gives blocks more than one turn on any current GPU. The convolution
    policy's first layer runs as the tower kernel's last step (with two
    positions per block) or after it. On an sm_90 GPU the backend's
    describe() must name the layout asked for."""
    name = gpu_backend_or_skip("fp16")
    path = maia_path if net == "maia" else make_test_net(net, blocks=3, filters=64)
    check_paths_match_cpu(load_weights(path), name, opts, 200, 1e-2,
                          expect_path=resnet_tower_path(opts, conv_policy=net != "tiny-resnet-classical"))


@pytest.mark.gpu
def test_gpu_describe_names_the_body(maia_path, make_test_net):
    """describe() says what kind of body runs, at any batch (clamped to
    max_batch), on every GPU."""
    name = gpu_backend_or_skip("fp16")
    conv = backends.create(name, load_weights(maia_path), max_batch=32)
    attn = backends.create(name, load_weights(make_test_net("tiny-attn")), max_batch=32)
    assert conv.describe(1).startswith("convolution body, 64 channels: ")
    assert conv.describe(1000).endswith("(batch 32)")
    assert "(batch 1)" in conv.describe(0)
    assert attn.describe(5).startswith("attention body, ")
    conv.close()
    attn.close()


@pytest.mark.gpu
def test_gpu_warm_up_captures_the_search_streams_graphs(make_test_net):
    """graph_sizes is the library's padding (describe() names the batch a
    pass runs at), and an Engine on a GPU backend warms its search's
    streams at creation (a graph per size up to minibatch + prefetch on
    each) and searches as before."""
    import chess

    from lc0_rocm.engine import Engine
    from lc0_rocm.network import load_network

    name = gpu_backend_or_skip("fp16")
    gpu = backends.create(name, load_weights(make_test_net("tiny-resnet")), max_batch=300)
    for n in range(1, 301):
        ran = int(re.search(r"\(batch (\d+)\)", gpu.describe(n)).group(1))
        assert ran == native.graph_sizes(n, 300)[-1], n
    gpu.close()
    net = load_network(make_test_net("tiny-resnet"), backend=name)
    engine = Engine(net, Threads=2, MinibatchSize=64, MaxPrefetch=8)
    warmed = net.backend._warmed_streams
    assert len(warmed) == 2 and set(warmed.values()) == {native.graph_sizes(72, 1024)[-1]} == {80}
    assert engine.search(chess.Board(), nodes=300).best_move in chess.Board().legal_moves
    net.close()


@pytest.mark.gpu
def test_gpu_engines_made_one_after_another_reuse_the_streams(make_test_net):
    """An Engine dropped gives its search streams back to the backend: the
    next one takes them instead of making more, so engines
    made in a loop on one network keep the device's memory flat."""
    import gc

    import chess

    from lc0_rocm.engine import Engine
    from lc0_rocm.network import load_network

    name = gpu_backend_or_skip("fp16")
    net = load_network(make_test_net("tiny-resnet"), backend=name)
    try:
        counts = []
        for _ in range(4):
            engine = Engine(net, Threads=2, MinibatchSize=32, MaxPrefetch=0)
            assert engine.search(chess.Board(), nodes=200).best_move in chess.Board().legal_moves
            del engine
            gc.collect()
            counts.append(len(net.backend._all))
        assert counts[0] >= 2 and counts == [counts[0]] * 4, counts
    finally:
        net.close()


@pytest.mark.gpu
def test_gpu_timed_products_shared_by_class_and_stream(tmp_path):
    """The half products' timed algorithms (native/docs/GEMM_TUNER.md): one
    per power-of-two class of shapes and network, timed at the first shape
    of a class met and taken by its other shapes, on every stream. A net
    wide enough for its products to be timed (512 channels: from batch 40),
    batches that time a class at one size and reuse it at others (70 then
    100 and 128; 200 then 250 and 129; 40 then 60), from two threads (a
    stream each), and after warm_up(): within the fp16 bound of the cpu
    backend, no NaN."""
    name = gpu_backend_or_skip("fp16")
    shape = attention_nets.reshape(attention_nets.TINY_ATTN, blocks=1, filters=512, heads=8)
    w = load_weights(save_net(attention_nets.build(np.random.default_rng(3), shape), tmp_path / "wide.pb.gz"))
    masks, values = random_packed(w, 250)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    errors = []

    def check(gpu, sizes):
        for n in sizes:
            got = gpu.forward_packed(masks[:n], values[:n])
            for g, r in zip(got, ref):
                if np.isnan(g).any() or np.linalg.norm(g - r[:n]) > 1e-2 * max(np.linalg.norm(r[:n]), 1e-6):
                    errors.append(n)

    gpu = backends.create(name, w, max_batch=256)
    threads = [threading.Thread(target=check, args=(gpu, sizes))
               for sizes in ([70, 100, 128, 40, 60, 100], [200, 250, 129, 70, 250, 60])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gpu.close()
    warmed = backends.create(name, w, max_batch=256)
    warmed.warm_up(250)
    assert warmed._warmed == {32, 64, 128, 256}
    check(warmed, [250, 33, 129, 90])
    warmed.close()
    assert errors == []


@pytest.mark.gpu
@pytest.mark.parametrize("net", ["maia", "tiny-resnet", "tiny-resnet-attnpolicy", "tiny-attn"])
def test_gpu_side_lane_matches_one_stream(net, maia_path, make_test_net):
    """The side lane's branches (native/docs/SIDE_LANE.md: a convolution body's
    value and moves-left heads, an attention body's Q|K|V beside smolgen
    when force=smolgen_beside asks for it) give the same bits as
    everything on one stream, on the plain first pass, the captured second
    and the replays after it; every pass gets new positions, so outputs
    copied before the side lane joined would show."""
    name = gpu_backend_or_skip("fp16")
    w = load_weights(maia_path if net == "maia" else make_test_net(net))
    masks, values = random_packed(w, 4 * 24)
    results = {}
    for side in ("on", "off"):
        gpu = backends.create(name, w, max_batch=24, side_stream=side, force="smolgen_beside")
        if net == "tiny-attn":
            assert ("beside Q|K|V" in gpu.describe(24)) == (side == "on"), gpu.describe(24)
        results[side] = [gpu.forward_packed(masks[i * 24:(i + 1) * 24], values[i * 24:(i + 1) * 24])
                         for i in range(4)]
        gpu.close()
    for with_side, alone in zip(results["on"], results["off"]):
        for a, b in zip(with_side, alone):
            assert not np.isnan(a).any()
            np.testing.assert_array_equal(a, b)


@pytest.mark.gpu
def test_gpu_threads_match_one_thread(maia_path):
    name = gpu_backend_or_skip("fp16")
    w = load_weights(maia_path)
    masks, values = random_packed(w, 4 * 16)
    gpu = backends.create(name, w, max_batch=16)
    chunks = [(masks[i * 16:(i + 1) * 16], values[i * 16:(i + 1) * 16]) for i in range(4)]
    single = [gpu.forward_packed(m, v) for m, v in chunks]
    outs = [None] * 4

    def run(i):
        for _ in range(5):
            outs[i] = gpu.forward_packed(*chunks[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o, s in zip(outs, single):
        for a, b in zip(o, s):
            np.testing.assert_array_equal(a, b)
    gpu.close()


@pytest.mark.gpu
def test_gpu_bad_input_is_a_clear_error(maia_path):
    name = gpu_backend_or_skip("fp32")
    gpu = backends.create(name, load_weights(maia_path), max_batch=8)
    with pytest.raises(ValueError, match="masks and values"):
        gpu.forward_packed(np.zeros((2, 111), np.uint64), np.zeros((2, 111), np.float32))
    with pytest.raises(ValueError, match="unknown option colour; valid options: "):
        backends.create(name, load_weights(maia_path), colour="blue")
    gpu.close()


@pytest.mark.gpu
def test_create_with_missing_tensor_reports_its_name():
    """The library's own validation, through the C ABI (GPU needed)."""
    name = gpu_backend_or_skip("fp32")
    ffi, lib = native.load_library(native.build(native.split_name(name)[0]))
    cfg = ffi.new("lc0rocm_config*")
    cfg.max_batch, cfg.network, cfg.policy, cfg.value = 8, 4, 2, 2
    cfg.default_activation = cfg.ffn_activation = cfg.smolgen_activation = 2
    native.fill_settings(cfg, native.read_settings(name, {}))
    out = ffi.new("lc0rocm_net**")
    status = lib.lc0rocm_create(cfg, ffi.NULL, 0, out)
    assert status == lib.LC0ROCM_INVALID_ARGUMENT
    assert "resnet.input" in ffi.string(lib.lc0rocm_last_error()).decode()


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_gpu_pinned_inputs_and_outputs_equal_the_staged_path(precision, maia_path):
    """Inputs and outputs in host_empty() memory move by one DMA each (blocks
    of 64 KB and more), with no staging copy: bit for bit the staged path's
    results, for every mix of pinned, plain and small blocks, slices at an
    offset into a pinned pool, sizes padded to a graph bucket and full
    planes; outputs outside the n rows are left alone."""
    name = gpu_backend_or_skip(precision)
    w = load_weights(maia_path)
    total = 320
    masks, values = random_packed(w, total, seed=9)
    gpu = backends.create(name, w, max_batch=total)
    pinned_masks, pinned_values = gpu.host_empty(masks.shape, np.uint64), gpu.host_empty(values.shape, np.float32)
    pinned_masks[:], pinned_values[:] = masks, values
    spare = 2
    pinned_out = tuple(gpu.host_empty((total + spare, *shape)) for shape in ((1858,), (3,), ()))
    # 100 rows: the masks go direct, the values (45 KB) are staged; 200 and 320: both direct
    for n, start in ((1, 0), (7, 3), (13, 20), (100, 7), (200, 120), (320, 0)):
        rows = slice(start, start + n)
        want = gpu.forward_packed(masks[rows], values[rows])          # plain memory: staged
        for in_masks, in_values in ((pinned_masks, values), (masks, pinned_values), (pinned_masks, pinned_values)):
            for pin in ((True, True, True), (True, False, True), (False, True, False)):
                for a in pinned_out:
                    a[:] = -7.0
                out = tuple(p[:n] if pinned else np.full(p[:n].shape, -7.0, np.float32)
                            for p, pinned in zip(pinned_out, pin))
                got = gpu.forward_packed_into(in_masks[rows], in_values[rows], out)
                for g, r in zip(got, want):
                    np.testing.assert_array_equal(g, r)
                assert all((p[n:] == -7.0).all() for p in pinned_out)
        planes = gpu.host_empty((n, 112, 8, 8))
        planes[:] = unpack_planes(masks[rows], values[rows])
        out = tuple(p[:n] for p in pinned_out)
        for g, r in zip(gpu.forward_into(planes, out), gpu.forward(unpack_planes(masks[rows], values[rows]))):
            np.testing.assert_array_equal(g, r)
    ffi, lib = gpu.ffi, gpu.lib
    assert lib.lc0rocm_host_free(ffi.cast("void*", pinned_masks.ctypes.data + 8)) == lib.LC0ROCM_INVALID_ARGUMENT
    gpu.close()


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("net", ["maia", "tiny-bt"])
def test_gpu_packed_input_gives_the_planes_results_bit_for_bit(net, precision, maia_path, make_test_net):
    """lc0's packed input (a mask and a value per plane) expanded on the
    device gives the same planes as the float planes sent whole: the same
    outputs bit for bit, at batch 1 (read in place from mapped memory), 9,
    100 and 256, for positions from games and for random masks with values
    other than 1 (every plane and square of the expansion)."""
    name = gpu_backend_or_skip(precision)
    w = load_weights(maia_path if net == "maia" else make_test_net(net))
    rng = np.random.default_rng(17)
    game_masks, game_values = random_packed(w, 256, seed=13)
    # every bit of a mask reachable (bit 63 and bit 0 included), one in 16
    # set, about as dense as real positions (far denser planes overflow half
    # activations into NaN)
    bits = [rng.integers(0, 2**63, size=(256, 112), dtype=np.uint64) * np.uint64(2) +
            rng.integers(0, 2, size=(256, 112), dtype=np.uint64) for _ in range(4)]
    noise_masks = bits[0] & bits[1] & bits[2] & bits[3]
    noise_values = rng.choice(np.array([1.0, 0.5, 0.25], np.float32), size=(256, 112))
    gpu = backends.create(name, w, max_batch=256)
    try:
        for masks, values in ((game_masks, game_values), (noise_masks, noise_values)):
            for n in (1, 9, 100, 256):
                packed = gpu.forward_packed(masks[:n], values[:n])
                planes = gpu.forward(unpack_planes(masks[:n], values[:n]))
                for a, b in zip(packed, planes):
                    assert not np.isnan(a).any()
                    np.testing.assert_array_equal(a, b)
    finally:
        gpu.close()


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 1e-2)])
def test_gpu_calls_padded_to_a_graph_bucket_return_their_own_rows(precision, tol, maia_path):
    """A call of n positions runs at the next batch-size bucket (zeros after
    the n rows, graphs shared between sizes): each size still gets exactly
    its rows' results, repeated calls (graph replays) included; describe()
    names the size a call runs at, as padded_size has it."""
    name = gpu_backend_or_skip(precision)
    w = load_weights(maia_path)
    masks, values = random_packed(w, 120, seed=5)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    gpu = backends.create(name, w, max_batch=120)
    for n, size in {9: 16, 57: 64, 65: 80, 100: 112}.items():
        ran = int(re.search(r"\(batch (\d+)\)", gpu.describe(n)).group(1))
        assert ran == size == native.padded_size(n, 120) == gpu.padded_size(n)
    for n in (9, 13, 63, 65, 100, 117, 120, 13, 100):
        got = gpu.forward_packed(masks[:n], values[:n])
        for g, r in zip(got, ref):
            assert g.shape[0] == n and not np.isnan(g).any()
            assert np.linalg.norm(g - r[:n]) <= tol * max(np.linalg.norm(r[:n]), 1e-6)
    gpu.close()


@pytest.mark.gpu
def test_gpu_mish_half2_within_its_bound(tmp_path):
    """mish_half2 (the half-pair Mish of gemm_sm90's epilogue, sm_80+): every
    finite half and a float sweep against Mish in double, within 8e-3
    relative + 2e-5; NaN stays NaN, +inf stays +inf
    (tests/native/mish_half2_check.cu)."""
    try:
        tc, arch = native.detect_target("nvidia")
    except native.NativeError as e:
        pytest.skip(f"no NVIDIA GPU and toolchain: {e}")
    if int(arch.removeprefix("sm_")) < 80:
        pytest.skip(f"mish_half2 is for sm_80+ ({arch} keeps the float Mish)")
    exe = tmp_path / "mish_half2_check"
    src = native_build.source_dir()
    built = subprocess.run([tc.compiler, "-x", "cu", *native_build.nvidia_arch_flags(arch), native_build.CXX_STD, "-O3",
                            f"-I{src / 'src'}", *[f"-I{d}" for d in tc.include_dirs],
                            str(ROOT / "tests" / "native" / "mish_half2_check.cu"), "-o", str(exe)],
                           env=tc.run_env(), capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, env=tc.run_env())
    print(run.stdout)
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stdout[-2000:]
