"""Native GPU backends on attention bodies (tests marked `gpu`, skipped with
a reason where no GPU backend is usable): parity with the cpu backend on
every path the attention plan (native/src/plan/attention_plan.cpp) can
take, the sm_90 Q|K|V attention, smolgen's wide layer norm and float
products as split tf32; describe() names the path where the GPU is one
whose plan the test knows."""
from __future__ import annotations

import re

import numpy as np
import pytest

from lc0_rocm import backends
from lc0_rocm.makenet import attention as attention_nets
from lc0_rocm.weights import load_weights
from tests.gpu_paths import check_paths_match_cpu, gpu_backend_or_skip, paths, random_packed


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
