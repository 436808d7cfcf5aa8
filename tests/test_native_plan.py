"""The GPU library's kernel plan (native/src/plan/) on the CPU: which kernel
each layer runs for a net, a batch size and a GPU, for the GPUs we know
(sm_80, sm_90, gfx90a, gfx942, gfx1100, and gfx1030 without matrix cores),
through tests/native/plan_shim.cpp built with the system C++ compiler from
the plan's sources alone. GPU runs of the same paths: test_native_gpu.py,
test_native_attention.py."""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess

import pytest

from lc0_rocm.backends import native

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Device facts a plan reads (multiprocessors, shared memory a block may opt
# in to), as the vendors publish them.
GPUS = {
    "sm_80": "arch=sm_80 warp=32 sms=108 shared=166912",       # A100
    "sm_90": "arch=sm_90 warp=32 sms=132 shared=232448",       # H100 SXM (H200 alike)
    "gfx90a": "arch=gfx90a warp=64 sms=110 shared=65536",      # MI250X (a GCD)
    "gfx942": "arch=gfx942 warp=64 sms=304 shared=65536",      # MI300X
    "gfx1100": "arch=gfx1100 warp=32 sms=48 shared=65536",     # RX 7900 XTX
    "gfx1030": "arch=gfx1030 warp=32 sms=40 shared=65536",     # RX 6900 XT: no matrix cores
}
# t82: 15 layers of 768, 24 heads of depth 32, FFN 1024, smolgen (generator
# inputs 256 a head); bt4: 1024, 32 heads, FFN 1536, PE_DENSE.
T82 = "layers=15 embedding=768 heads=24 depth=32 dff=1024 smolgen=1 gen=256"
BT4 = "layers=15 embedding=1024 heads=32 depth=32 dff=1536 smolgen=1 gen=256 pe_dense=1"
# maia-1900: 64 channels, 6 blocks with SE of 32 hidden, a convolution
# policy of 80 planes, WDL value head of 128 hidden.
MAIA = "channels=64 blocks=6 se=32 policy_planes=80 value_inputs=128 value_outputs=3"
# What resnet_tower_prepare finds for maia on an sm_90 GPU (each layout's
# ~200-215 KB of shared memory fits 227 KB; a cluster of 4 per 4
# multiprocessors, 33 at once on 132); on sm_80's 163 KB none fits.
TOWER_SM90 = "ready=1 split=1 pairs=1 clusters=33"


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    """plan(*cases) -> one dict per case line (plan_shim.cpp's keys)."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler to build the plan's test shim")
    exe = tmp_path_factory.mktemp("plan") / "plan_shim"
    sources = sorted(str(p) for p in (ROOT / "native" / "src" / "plan").glob("*.cpp"))
    build = subprocess.run([cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'native' / 'src'}",
                            "-o", str(exe), str(ROOT / "tests" / "native" / "plan_shim.cpp"), *sources],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]

    def run(*cases: str) -> list[dict]:
        out = subprocess.run([str(exe)], input="\n".join(cases) + "\n", capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines()]
    return run


def bits(*names: str) -> int:
    table = native.path_bits()
    return sum(table[n][0] for n in names)


def attention(plan, gpu, net=T82, batch=1, extra="", captured=1):
    [result] = plan(f"kind=attention {GPUS[gpu]} {net} batch={batch} captured={captured} {extra}")
    return result


def conv(plan, gpu, batch=1, extra="", tower=""):
    [result] = plan(f"kind=conv {GPUS[gpu]} {MAIA} batch={batch} {tower} {extra}")
    return result


@pytest.mark.parametrize("gpu,features", [
    ("sm_80", {"nvidia", "fast_fp16", "mma_fp16", "tf32_products"}),
    ("sm_90", {"nvidia", "fast_fp16", "mma_fp16", "tf32_products", "dependent_launch", "clusters", "wgmma"}),
    ("gfx90a", {"fast_fp16", "mfma_fp16"}),
    ("gfx942", {"fast_fp16", "mfma_fp16"}),
    ("gfx1100", {"fast_fp16", "rdna_wmma_fp16"}),
    ("gfx1030", {"fast_fp16"}),
])
def test_device_features_follow_the_architecture(plan, gpu, features):
    [device] = plan(f"kind=device {GPUS[gpu]}")
    assert {k for k, v in device.items() if v is True} == features
    assert device["arch"] == gpu


def test_wgmma_only_in_sm90a_builds_of_compute_capability_9_0(plan):
    not_a, later = plan("kind=device arch=sm_90 sm90a=0", "kind=device arch=sm_100 sm90a=1")
    assert not not_a["wgmma"] and not later["wgmma"]
    assert later["clusters"] and later["mma_fp16"]
    [suffixed] = plan("kind=device arch=gfx90a:sramecc+:xnack- warp=64")
    assert suffixed["arch"] == "gfx90a" and suffixed["mfma_fp16"]


def test_settings_defaults_are_the_backend_options_defaults(plan):
    """Settings{} (the plan's defaults for a config without options) equals
    what native.OPTIONS gives a backend created without options."""
    [defaults] = plan("kind=settings")
    options = native.OPTIONS
    for key in ("graphs", "gemm_tune", "half_sums", "side_stream", "mapped_io"):
        assert defaults[key] == options[key].default, key
    assert defaults["dependent_launch"] == native.DEPENDENT_LAUNCH[options["dependent_launch"].default]
    assert defaults["disabled"] == defaults["forced"] == 0
    assert options["disable"].default == options["force"].default == frozenset()


@pytest.mark.parametrize("gpu,kernel", [("sm_80", "mma"), ("sm_90", "mma"), ("gfx90a", "mfma"),
                                        ("gfx942", "mfma"), ("gfx1100", "rdna_wmma"), ("gfx1030", "scalar")])
def test_attention_kernel_per_gpu(plan, gpu, kernel):
    """The fused attention of half nets (head depth 32) on each GPU's matrix
    cores, the scalar kernel without them and in float, split heads and
    batched products for heads deeper than 48."""
    half = attention(plan, gpu, batch=16)
    assert {e["attention"] for e in half["encoders"]} == {kernel}
    assert {e["attention"] for e in attention(plan, gpu, batch=16, extra="half=0")["encoders"]} == {"scalar"}
    deep = attention(plan, gpu, net="layers=2 embedding=512 heads=8 depth=64 dff=512 smolgen=0", batch=16)
    assert {e["attention"] for e in deep["encoders"]} == {"unfused"}


@pytest.mark.parametrize("gpu", GPUS)
def test_sm90_kernels_only_on_sm90(plan, gpu):
    """At batch 256 a half t82 on sm_90 runs Q|K|V with its attention in one
    launch, the FFN's first product on our wgmma product and the output and
    FFN products with their layer norms; elsewhere none of them, and the
    compress shares the Q|K|V product."""
    result = attention(plan, gpu, batch=256)
    first = result["encoders"][0]
    if gpu == "sm_90":
        assert first == {"order": "one_launch", "attention": "qkv_sm90", "generate": False, "out_norm": True,
                         "ffn2_norm": True}
        assert result["products"]["ffn1"] == "sm90" and result["norm_exchange"]
        assert "the FFN's first products on sm_90 wgmma from 8192 rows (half sums)" in result["describe"]
    else:
        assert first["order"] == "with_compress" and not first["out_norm"] and not first["ffn2_norm"]
        assert result["products"]["ffn1"] == "blas" and not result["norm_exchange"]
        assert "sm_90" not in result["describe"]


@pytest.mark.parametrize("gpu", GPUS)
def test_batch_one_paths(plan, gpu):
    """Batch 1 of a half t82: Q|K|V beside smolgen on the side lane in a
    captured pass (in series in a plain one, the compress then in the Q|K|V
    product), smolgen's second layer norm in its generator on mma.sync
    (NVIDIA), per-position layers on gemv_rows, dependent launches where the
    device has them."""
    captured, plain = attention(plan, gpu, batch=1), attention(plan, gpu, batch=1, captured=0)
    assert {e["order"] for e in captured["encoders"]} == {"beside"}
    assert {e["order"] for e in plain["encoders"]} == {"with_compress"}
    nvidia = gpu.startswith("sm_")
    assert captured["encoders"][0]["generate"] == nvidia
    assert captured["products"]["smolgen_dense1"] == "gemv"
    assert captured["dependent_launch"] == (gpu == "sm_90")
    assert captured["describe"].endswith(", per-position layers on gemv_rows")
    assert ", beside Q|K|V" in captured["describe"]
    at_three = attention(plan, gpu, batch=3)
    assert {e["order"] for e in at_three["encoders"]} == {"with_compress"} and not at_three["dependent_launch"]
    assert at_three["products"]["smolgen_dense1"] == "blas"


@pytest.mark.parametrize("gpu,split", [("sm_80", True), ("sm_90", True), ("gfx90a", False), ("gfx942", False),
                                       ("gfx1100", False)])
def test_float_products_split_for_tf32_on_nvidia(plan, gpu, split):
    """Float nets on NVIDIA sm_80+: products of 128 rows or more as split tf32
    (batch 2: the per-square layers), plain below; never on AMD."""
    one, two = (attention(plan, gpu, batch=b, extra="half=0") for b in (1, 2))
    assert one["tf32_from_rows"] == (128 if split else 0)
    assert one["products"]["qkv"] == "blas"
    assert two["products"]["qkv"] == ("tf32" if split else "blas")
    assert ("as split tf32 (3 passes)" in two["describe"]) == split


def test_options_change_the_plan(plan):
    """disable= and force= (native.OPTIONS) and the settings move the plan
    as their help says, on sm_90."""
    def first(extra, batch=16, captured=1):
        return attention(plan, "sm_90", batch=batch, captured=captured, extra=extra)["encoders"][0]
    assert first(f"disabled={bits('matrix_attention')}")["attention"] == "scalar"
    assert first(f"disabled={bits('fused_attention')}")["attention"] == "unfused"
    assert first(f"disabled={bits('mma_attention')}")["attention"] == "wmma"
    assert first(f"disabled={bits('qkv_compress')}")["order"] == "qkv_first"
    assert first(f"disabled={bits('qkv_compress')}", batch=256)["order"] == "one_launch"
    assert first(f"disabled={bits('qkv_compress', 'qkv_attention')}", batch=256)["order"] == "smolgen_first"
    assert first(f"forced={bits('qkv_attention')}", batch=1, captured=0)["attention"] == "qkv_sm90"
    assert first(f"forced={bits('smolgen_beside')}", batch=64)["order"] == "beside"
    assert first(f"disabled={bits('smolgen_beside')}", batch=1)["order"] == "with_compress"
    assert first("side_stream=0", batch=1)["order"] == "with_compress"
    assert not attention(plan, "sm_90", extra="side_stream=0")["side_lane"]
    assert not first(f"disabled={bits('smolgen_generate')}", batch=1)["generate"]
    assert first(f"forced={bits('smolgen_generate')}", batch=64)["generate"]
    assert attention(plan, "sm_90", extra=f"forced={bits('gemv')}")["gemv_max_rows"] == 4
    assert attention(plan, "sm_90", extra=f"disabled={bits('gemv')}")["gemv_max_rows"] == 0
    forced = attention(plan, "sm_90", batch=1, extra=f"forced={bits('sm90_gemm', 'sm90_layer_norm')}")
    assert forced["products"]["ffn1"] == "sm90" and forced["encoders"][0]["out_norm"]
    assert "from 64 rows" in forced["describe"]
    float_sums = attention(plan, "sm_90", batch=256, extra="half_sums=0")
    assert "half sums" not in float_sums["describe"] and "(sm_90)" in float_sums["describe"]
    assert not first(f"disabled={bits('sm90_layer_norm')}", batch=256)["out_norm"]
    assert attention(plan, "sm_90", batch=1, extra=f"disabled={bits('sm90_gemm')}", net=T82)["products"]["ffn1"] == \
        "blas"
    assert attention(plan, "sm_90", batch=1, extra=f"forced={bits('tf32_split')} half=0")["products"]["qkv"] == "tf32"


def test_pe_dense_and_policy_encoders(plan):
    """bt4 (PE_DENSE) on sm_90 from batch 64: its embedding FFN's second
    product takes the layer norm too (the pass prepares the exchange). The
    attention policy's encoders never run beside, in one launch or with sm_90
    layer norms."""
    result = attention(plan, "sm_90", net=BT4 + " policy_layers=1 policy_heads=8 policy_depth=32 policy_smolgen=0",
                       batch=256)
    assert ", PE_DENSE embedding" in result["describe"] and result["norm_exchange"]
    [policy] = result["policy_encoders"]
    assert policy["order"] == "with_compress" or policy["order"] == "qkv_first"
    assert policy["attention"] == "mma" and not policy["out_norm"]


def test_residual_tower_layouts_on_sm90(plan):
    """maia in half on sm_90: the tower in one launch, a position per cluster
    of 4 blocks while the clusters last, then a position per block with K
    split, two positions per block beyond the multiprocessors (with the
    policy's first convolution inside)."""
    def at(batch, extra=""):
        return conv(plan, "sm_90", batch, extra, TOWER_SM90)
    assert at(1)["describe"] == "convolution body, 64 channels: residual tower in one launch, " \
                                "a position per cluster of 4 blocks"
    assert at(33)["layout"] == "cluster" and at(34)["layout"] == "split"
    assert at(132)["layout"] == "split" and not at(132)["head_in_tower"]
    assert at(133)["layout"] == "pair" and at(133)["head_in_tower"]
    assert at(200)["describe"].endswith("two positions per block, the policy's first convolution in it")
    assert not at(200, f"disabled={bits('tower_policy')}")["head_in_tower"]
    assert at(1, f"forced={bits('tower_pairs')}")["layout"] == "pair"
    assert at(200, f"disabled={bits('tower_pairs')}")["layout"] == "split"
    assert at(1, f"disabled={bits('tower_cluster')}")["layout"] == "split"
    assert at(1, f"disabled={bits('tower_cluster', 'tower_split')}")["layout"] == "single"
    assert at(1, "half=0")["tower"] == "winograd_chain"
    assert at(64, f"disabled={bits('resnet_tower')}")["tower"] == "winograd_chain"


@pytest.mark.parametrize("gpu", ["sm_80", "gfx90a", "gfx942", "gfx1100"])
def test_convolutions_without_the_tower(plan, gpu):
    """Where the tower does not run (no fit on sm_80's shared memory, AMD):
    in half the implicit-GEMM kernel below batch 32 on NVIDIA, im2col below
    16 elsewhere, Winograd from there as one chain; in float Winograd at
    every batch size."""
    nvidia = gpu.startswith("sm_")
    small = conv(plan, gpu, 8)
    assert small["tower"] == "layer_at_a_time"
    assert set(small["layers"]) == {"implicit" if nvidia else "im2col"}
    assert conv(plan, gpu, 24)["tower"] == ("layer_at_a_time" if nvidia else "winograd_chain")
    assert conv(plan, gpu, 64)["tower"] == "winograd_chain" and conv(plan, gpu, 64)["policy_chained"]
    assert conv(plan, gpu, 1, "half=0")["tower"] == "winograd_chain"
    assert conv(plan, gpu, 1)["tower_candidate"] == nvidia
    assert set(conv(plan, gpu, 1, f"forced={bits('winograd')}")["layers"]) == {"winograd"}
    assert set(conv(plan, gpu, 64, f"disabled={bits('winograd')}")["layers"]) == {"im2col"}
    assert conv(plan, gpu, 64, f"disabled={bits('winograd_chain')}")["tower"] == "layer_at_a_time"
    assert set(conv(plan, gpu, 64, f"forced={bits('implicit_conv')}")["layers"]) == \
        ({"implicit"} if nvidia else {"winograd"})


def test_fused_se_and_value_tail(plan):
    """The SE unit in one launch up to 64 channels (forced: at 128 too, where
    its shared memory allows), the value head's tail where its shape fits."""
    assert conv(plan, "sm_90", 1)["fused_se"]
    wide = "channels=128 blocks=2 se=32"
    [at_128] = plan(f"kind=conv {GPUS['sm_90']} {wide} batch=1")
    [forced] = plan(f"kind=conv {GPUS['sm_90']} {wide} batch=1 forced={bits('fused_se')}")
    assert not at_128["fused_se"] and forced["fused_se"]
    assert conv(plan, "sm_90", 1)["value_tail"]
    assert not conv(plan, "sm_90", 1, f"disabled={bits('value_tail')}")["value_tail"]
    [odd] = plan(f"kind=conv {GPUS['sm_90']} {MAIA} value_inputs=36")
    assert not odd["value_tail"]   # 36 halves are not whole 16-byte vectors
