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

ROOT = pathlib.Path(__file__).resolve().parent.parent


def paths(opts: dict, key: str) -> set[str]:
    """The path names of opts' disable= or force= (a/b/c)."""
    return {n for n in opts.get(key, "").split("/") if n}


def with_disabled(opts: dict, *names: str) -> dict:
    """opts with names added to its disable= list."""
    return {**opts, "disable": "/".join(sorted(paths(opts, "disable") | set(names)))}


def gpu_backend_or_skip(precision: str) -> str:
    for prefix in ("rocm", "cuda"):
        name = prefix + ("" if precision == "fp32" else "-" + precision)
        ok, reason = native.is_available(name)
        if ok:
            return name
    pytest.skip(f"no GPU backend usable here ({native.is_available('rocm')[1]}; "
                f"{native.is_available('cuda')[1]})")


def random_packed(weights, count, seed=3):
    from lc0_rocm import encoder
    from lc0_rocm.backendbench import bench_positions
    boards = bench_positions(count, seed)
    masks, values, _ = encoder.encode_batch_packed(boards, weights.format.input or 1)
    return masks, values


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


def check_paths_match_cpu(w, name, opts, count, tol, expect_path=None):
    """GPU backend `name` created with backend options `opts` against the
    cpu backend, at batch 1, 2, 17 and `count`; the small sizes three times
    each: a plain pass, a captured graph's first launch and its replay.
    expect_path(device_info, batch): a pattern the backend's describe() must
    match at that (graph-padded) batch, or None."""
    masks, values = random_packed(w, count)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    gpu = backends.create(name, w, max_batch=count, **opts)
    for n in (1, 2, 17, count):
        described = gpu.describe(n)
        padded = int(re.search(r"\(batch (\d+)\)", described).group(1))
        wanted = expect_path(gpu.device_info, padded) if expect_path else None
        assert wanted is None or re.search(wanted, described), (n, described, wanted)
    for n in (1, 1, 1, 2, 2, 2, 17, 17, 17, count):
        got = gpu.forward_packed(masks[:n], values[:n])
        for g, r in zip(got, ref):
            assert not np.isnan(g).any()
            assert np.linalg.norm(g - r[:n]) <= tol * max(np.linalg.norm(r[:n]), 1e-6)
    gpu.close()


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


def has_tf32_products(info):
    """NVIDIA compute capability 8.0 on (DeviceInfo::tf32_products)."""
    found = re.match(r"sm_(\d+)", info["arch"])
    return info["vendor"] == "nvidia" and found is not None and int(found.group(1)) >= 80


def attention_path(opts, precision, ffn_fits=False, ffn_tiles_256=False):
    """expect_path for an attention body under backend options `opts`, on
    NVIDIA GPUs; None elsewhere (the plan's rules, plan/attention_plan.cpp):
    float products as split tf32 (TF32_SPLIT.md; compute capability 8.0 on)
    from 128 rows (force: 1, disable: never); half layers of one row on
    gemv_rows at batch 1 (force: up to 4); half nets' Q|K|V on the side lane
    beside smolgen's chain up to batch 2 (force: 64; never with
    side_stream=off); half nets' FFN's first product on our sm_90 product
    from 8,192 rows (force: 64), where its shape fits (ffn_fits), its
    products summed in half on the wide ping-pong schedule where its 256-wide
    tiles fit the FFN (ffn_tiles_256) unless half_sums=off; half nets'
    smolgen compress in the Q|K|V product where the chain does not run beside
    Q|K|V and the attention is fused."""
    disabled, forced = paths(opts, "disable"), paths(opts, "force")

    def threshold(name, by_default, when_forced):
        return 0 if name in disabled else when_forced if name in forced else by_default

    def expect(info, n):
        if info["vendor"] != "nvidia":
            return None
        half = precision == "fp16"
        path = "smolgen a layer at a time"
        beside = half and opts.get("side_stream") != "off" and n <= threshold("smolgen_beside", 2, 64)
        if half and not beside and "qkv_compress" not in disabled and "fused_attention" not in disabled:
            path += ", its compress in the Q|K|V product"
        if beside:
            path += ", beside Q|K|V"
        split_rows = threshold("tf32_split", 128, 1)
        if not half and has_tf32_products(info) and split_rows > 0:
            path += f", float products from {split_rows} rows as split tf32 (3 passes)"
        sm90_rows = threshold("sm90_gemm", 8192, 64)
        if half and info["arch"] == "sm_90" and ffn_fits and sm90_rows and 64 * n >= sm90_rows:
            path += f", the FFN's first products on sm_90 wgmma from {sm90_rows} rows"
            if opts.get("half_sums") != "off" and ffn_tiles_256:
                path += " (half sums) (ping-pong on 128 x 256 tiles)"
        if half and n <= threshold("gemv", 1, 4):
            path += ", per-position layers on gemv_rows"
        return re.escape(f"{path} (batch {n})")
    return expect


ATTENTION_SHAPES = {"tiny-attn": attention_nets.TINY_ATTN, "tiny-bt": attention_nets.TINY_BT}


def ffn_fits_sm90(shape) -> bool:
    """Whether an attention net's FFN's first product takes our sm_90 product:
    gemm_sm90_fits (native/src/kernels/gemm_sm90.hip) on N = dff, K = embedding."""
    return shape.dff >= 128 and shape.dff % 128 == 0 and shape.embedding >= 64 and shape.embedding % 64 == 0


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 1e-2)])
@pytest.mark.parametrize("opts", [{}, {"disable": "fused_attention"}, {"disable": "matrix_attention"},
                                  {"disable": "mma_attention"}, {"gemm_tune": "off"}, {"dependent_launch": "on"},
                                  {"disable": "tf32_split"}, {"force": "tf32_split"}, {"disable": "gemv"},
                                  {"force": "gemv", "dependent_launch": "on"}, {"disable": "smolgen_beside"},
                                  {"side_stream": "off"}, {"force": "smolgen_beside", "dependent_launch": "on"},
                                  {"force": "smolgen_first", "disable": "qkv_compress"}, {"disable": "sm90_gemm"},
                                  {"force": "sm90_gemm"}, {"force": "sm90_gemm", "half_sums": "off"},
                                  {"disable": "qkv_compress"}])
@pytest.mark.parametrize("net", ["tiny-attn", "tiny-bt"])
def test_gpu_attention_paths_match_cpu(net, opts, precision, tol, make_test_net):
    """Every path of the attention body (the plan's, plan/attention_plan.h)
    against the cpu backend: the fused attention on mma.sync fragments,
    wmma or the scalar kernel, or split heads + batched GEMMs + softmax +
    merge; dense layers on BLAS (half products on the algorithm that timed
    fastest per shape, or with gemm_tune=off on cublasGemmEx's own choice);
    float dense layers as split tf32 products from 128 rows (batch 2 on for
    the per-square layers), at every size, or never; half layers of one row
    (batch 1) on gemv_rows, of up to 4 rows, or none; in half precision Q|K|V
    on the side lane beside smolgen's chain up to batch 2 (the default, with
    dependent launches there), up to 64, or never (asked, or no side lane);
    smolgen's chain before Q|K|V from batch 1 (where the compress does not
    share the Q|K|V product); on sm_90 the FFN's first product on our own
    (wgmma, its activation in the epilogue, where the FFN's shape fits it:
    tiny-attn's does, tiny-bt's 96 columns do not) from batch 128 (the
    default), from batch 1 with half sums (on the wide ping-pong schedule
    where its 256-wide tiles fit: not tiny-attn's 128 columns) or float
    sums, or never; smolgen's compress in the Q|K|V product (the fused
    attention reading wider rows) wherever its chain does not run beside
    (the default), or never; kernels launched plainly or as dependent
    launches."""
    name = gpu_backend_or_skip(precision)
    check_paths_match_cpu(load_weights(make_test_net(net)), name, opts, 70, tol,
                          expect_path=attention_path(opts, precision, ffn_fits_sm90(ATTENTION_SHAPES[net]),
                                                     ATTENTION_SHAPES[net].dff % 256 == 0))


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
@pytest.mark.parametrize("filters,heads,smolgen", [(128, 4, False), (192, 6, True)],
                         ids=["two-pairs-no-smolgen", "three-pairs-smolgen"])
def test_gpu_qkv_attention_sm90_matches_cpu(filters, heads, smolgen, tmp_path):
    """The Q|K|V product with its attention in one launch on sm_90
    (native/docs/QKV_ATTENTION_SM90.md) from batch 1, on small nets of head depth
    32 that the big presets do not cover: without smolgen (no logits fetched)
    and with three pairs of heads; batches 1, 2, 17 and 70 (the last 128-row
    tile half past the end at 1 and 17), plain, captured and replayed.
    Within the fp16 bound of the cpu backend; describe() names the one launch
    on sm_90 (elsewhere only the parity of the other paths is checked)."""
    import dataclasses

    from lc0_rocm.makenet import save_net

    name = gpu_backend_or_skip("fp16")
    net = attention_nets.reshape(attention_nets.TINY_ATTN, filters=filters, heads=heads)
    if not smolgen:
        net = dataclasses.replace(net, smolgen=None)
    path = save_net(attention_nets.build(np.random.default_rng(7), net), tmp_path / "qkv-attention.pb.gz")

    def expect(info, n):
        return r"Q\|K\|V with the attention in one launch" if info["arch"] == "sm_90" else None

    check_paths_match_cpu(load_weights(path), name, {"force": "qkv_attention", "disable": "smolgen_beside"},
                          70, 1e-2, expect_path=expect)


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 1e-2)])
@pytest.mark.parametrize("gen", [1024, 2304])
@pytest.mark.parametrize("wide", ["force", "disable"])
def test_gpu_smolgen_wide_layer_norm(wide, gen, precision, tol, tmp_path):
    """Smolgen's second layer norm over 4 heads x `gen` values a row on
    blocks of 256 threads (force=wide_norm: at every batch; the default
    takes it from batch 256) and on the row-a-block kernel (disable=wide_norm). Half
    rows of 4,096 and 9,216 values take 2 and 5 vectors a thread, float rows
    of 4,096 take 4; float rows of 9,216 (9 vectors) stay on the other
    kernel. Rows over 8,192 values give the row-a-block kernel more than one
    vector a thread, which must fit a block of 1,024 threads' registers
    (without launch bounds it failed to launch, float and half, on an
    H100)."""
    import dataclasses

    from lc0_rocm.makenet import save_net

    name = gpu_backend_or_skip(precision)
    shape = dataclasses.replace(attention_nets.TINY_ATTN, smolgen=(8, 32, gen))
    path = save_net(attention_nets.build(np.random.default_rng(5), shape), tmp_path / "wide-smolgen.pb.gz")
    check_paths_match_cpu(load_weights(path), name, {wide: "wide_norm"}, 70, tol)


@pytest.mark.gpu
@pytest.mark.parametrize("net", ["tiny-attn", "tiny-bt", "tiny-resnet-attnpolicy"])
def test_gpu_tf32_split_keeps_float_precision(net, make_test_net):
    """Float products as split tf32 (native/docs/TF32_SPLIT.md) stay within a
    few float roundings of the cpu reference: 2e-5 relative, where plain
    tf32 products (10 mantissa bits) are off by ~3e-4 in every GEMM. On
    attention bodies and on the attention policy head of a convolution
    body. Skips where the GPU has no tf32 products."""
    name = gpu_backend_or_skip("fp32")
    w = load_weights(make_test_net(net))
    masks, values = random_packed(w, 64)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    gpu = backends.create(name, w, max_batch=64, force="tf32_split")
    try:
        info = gpu.device_info
        if not has_tf32_products(info):
            pytest.skip(f"no tf32 products on {info['arch']} (NVIDIA compute capability 8.0 on)")
        if net != "tiny-resnet-attnpolicy":
            assert "split tf32" in gpu.describe(64)
        got = gpu.forward_packed(masks, values)
    finally:
        gpu.close()
    for g, r in zip(got, ref):
        assert not np.isnan(g).any()
        err = np.linalg.norm(g.astype(np.float64) - r) / max(np.linalg.norm(r), 1e-6)
        print(net, f"relative error {err:.2e}")
        assert err <= 2e-5, err


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
