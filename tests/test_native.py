"""Native GPU backend: the Python side without a GPU (ABI header, toolchain
and architecture detection, cached builds, clear errors, `auto` falling back
to cpu, weights -> named tensors), plus GPU parity tests marked `gpu` that
skip with a reason when no GPU backend is usable here."""
from __future__ import annotations

import dataclasses
import pathlib
import re
import shutil
import stat
import subprocess
import textwrap
import threading

import numpy as np
import pytest

from lc0_rocm import backends
from lc0_rocm.backends import native
from lc0_rocm.backends.base import unpack_planes
from lc0_rocm.backends.native import NativeError
from lc0_rocm.makenet import attention as attention_nets
from lc0_rocm.makenet import resnet as resnet_nets
from lc0_rocm.makenet import save_net
from lc0_rocm.weights import load_weights

ROOT = pathlib.Path(__file__).resolve().parent.parent
ALL_NAMES = ["rocm", "rocm-fp16", "rocm-auto", "cuda", "cuda-fp16", "cuda-auto"]


def fake_tool(folder: pathlib.Path, name: str, script: str) -> pathlib.Path:
    """An executable shell script `name` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(script))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


# ---------------------------------------------------------------- ABI header
def test_cdef_block_parses_and_declares_the_abi():
    cffi = pytest.importorskip("cffi")
    ffi = cffi.FFI()
    ffi.cdef(native.cdef_text())
    libc = ffi.dlopen(None)
    assert libc.LC0ROCM_ABI_VERSION == 3
    assert libc.LC0ROCM_OK == 0 and libc.LC0ROCM_INVALID_ARGUMENT != 0
    for fn in ("lc0rocm_abi_version", "lc0rocm_last_error", "lc0rocm_get_device_info",
               "lc0rocm_create", "lc0rocm_destroy", "lc0rocm_stream_create",
               "lc0rocm_stream_destroy", "lc0rocm_forward", "lc0rocm_forward_planes",
               "lc0rocm_stream_describe", "lc0rocm_host_alloc", "lc0rocm_host_free"):
        assert fn in native.cdef_text()
    assert ffi.sizeof("lc0rocm_tensor") >= 8 + 8 + 8 + 4


def test_only_the_compat_header_names_a_vendor():
    """cuda*/cublas* names appear in gpu_compat.h only (HIP names elsewhere)."""
    offenders = []
    for path in (ROOT / "native").rglob("*"):
        if path.suffix not in (".h", ".cpp", ".hip") or path.name == "gpu_compat.h":
            continue
        for line in path.read_text().splitlines():
            code = line.split("//")[0]
            if any(tok in code for tok in ("cudaMalloc", "cudaStream", "cublas", "cuda_runtime",
                                           "__shfl_xor_sync", "warpSize == 32", "warpSize == 64")):
                offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert not offenders, offenders


def test_no_literal_warp_width_in_kernels():
    pattern = ("__shfl_down_sync(0xffffffff", "WARP_SIZE 32", "WARP_SIZE 64", "kWarpSize = 32",
               "kWarpSize = 64")
    for path in (ROOT / "native" / "src").rglob("*"):
        if path.suffix in (".h", ".cpp", ".hip") and path.name != "gpu_compat.h":
            text = path.read_text()
            assert not any(p in text for p in pattern), path


def test_every_kernel_waits_for_the_prior_grid():
    """gpu_launch may start a kernel before the one ahead of it ends
    (dependent launch, gpu_compat.h), so every kernel calls
    gpu_wait_for_prior_grid() (before it reads activations: review's part)
    and every launch goes through gpu_launch."""
    missing, plain = [], []
    for path in (ROOT / "native" / "src").rglob("*"):
        if path.suffix not in (".h", ".cpp", ".hip") or path.name == "gpu_compat.h":
            continue
        text = path.read_text()
        if "<<<" in text:
            plain.append(path.name)
        for found in re.finditer(r"__global__", text):
            body_start = text.index("{", found.start())
            header = text[found.start():body_start]
            name = [n for n in re.findall(r"(\w+)\s*\(", header) if n != "__launch_bounds__"][0]
            depth, end = 0, body_start
            while True:
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                if depth == 0:
                    break
                end += 1
            if "gpu_wait_for_prior_grid();" not in text[body_start:end]:
                missing.append(f"{path.name}: {name}")
    assert not plain, f"launches not through gpu_launch: {plain}"
    assert not missing, f"kernels that do not wait for the prior grid: {missing}"


# ---------------------------------------------------------------- names
@pytest.mark.parametrize("name,vendor,precision", [
    ("rocm", "amd", "fp32"), ("rocm-fp16", "amd", "fp16"), ("rocm-auto", "amd", "auto"),
    ("cuda", "nvidia", "fp32"), ("cuda-fp16", "nvidia", "fp16"), ("cuda-auto", "nvidia", "auto")])
def test_split_name(name, vendor, precision):
    assert native.split_name(name) == (vendor, precision)


@pytest.mark.parametrize("bad", ["cpu", "rocm-fp8", "cuda16", "metal"])
def test_split_name_rejects_others(bad):
    with pytest.raises(NativeError, match="not a native backend"):
        native.split_name(bad)


# ---------------------------------------------------------------- detection
def test_no_toolchain_is_a_clear_error(bare_env):
    with pytest.raises(NativeError) as e:
        native.detect_toolchain()
    assert "hipcc" in str(e.value) and "nvcc" in str(e.value)
    for name in ALL_NAMES:
        ok, reason = native.is_available(name)
        assert not ok
        assert reason.startswith(name + ": ") and "not found" in reason


@pytest.fixture
def fake_rocm(bare_env, tmp_path, monkeypatch):
    """A ROCm folder with a hipBLAS header (hipcc itself comes separately)."""
    rocm = tmp_path / "rocm"
    (rocm / "include" / "hipblas").mkdir(parents=True)
    (rocm / "include" / "hipblas" / "hipblas.h").write_text("")
    monkeypatch.setenv("ROCM_PATH", str(rocm))
    return rocm


def test_hipcc_found_on_path(bare_env, fake_rocm):
    hipcc = fake_tool(bare_env, "hipcc", "exit 0\n")
    tc = native.detect_toolchain("amd")
    assert tc.vendor == "amd" and tc.compiler == str(hipcc)
    assert "-lhipblas" in tc.libraries
    assert tc.include_dirs == (str(fake_rocm / "include"),)


def test_hipcc_without_hipblas_is_a_clear_error(bare_env):
    fake_tool(bare_env, "hipcc", "exit 0\n")
    if pathlib.Path("/usr/include/hipblas/hipblas.h").is_file():
        pytest.skip("this machine has hipBLAS in /usr/include")
    with pytest.raises(NativeError, match="hipBLAS not found"):
        native.detect_toolchain("amd")


def test_toolchain_env_override_picks_vendor(bare_env, fake_rocm, monkeypatch):
    fake_tool(bare_env, "hipcc", "exit 0\n")
    monkeypatch.setenv("LC0ROCM_TOOLCHAIN", "cuda")
    with pytest.raises(NativeError, match="nvcc"):
        native.detect_toolchain()


def test_nvcc_without_cublas_is_a_clear_error(bare_env, tmp_path, monkeypatch):
    cuda = tmp_path / "cuda"
    fake_tool(cuda / "bin", "nvcc", "exit 0\n")
    monkeypatch.setenv("PATH", f"{cuda / 'bin'}:{bare_env}")
    monkeypatch.setattr(native, "_cuda_roots", lambda nvcc: [cuda])
    with pytest.raises(NativeError, match="cuBLAS not found"):
        native.detect_toolchain("nvidia")
    (cuda / "include").mkdir()
    (cuda / "include" / "cublas_v2.h").write_text("")
    (cuda / "lib64").mkdir()
    (cuda / "lib64" / "libcublas.so.13").write_text("")
    (cuda / "lib64" / "libcublasLt.so.13").write_text("")
    tc = native.detect_toolchain("nvidia")
    assert tc.include_dirs == (str(cuda / "include"),)
    assert tc.libraries == ("-l:libcublas.so.13", "-l:libcublasLt.so.13")


def test_arch_from_rocm_agent_enumerator(bare_env):
    fake_tool(bare_env, "rocm_agent_enumerator", "echo gfx000; echo gfx90a; echo gfx90a\n")
    assert native.detect_arch("amd") == "gfx90a"


def test_arch_from_nvidia_smi(bare_env):
    fake_tool(bare_env, "nvidia-smi", "echo 9.0\n")
    assert native.detect_arch("nvidia") == "sm_90"


def test_arch_env_override(bare_env, monkeypatch):
    monkeypatch.setenv("LC0ROCM_GPU_ARCH", "gfx1030")
    assert native.detect_arch("amd") == "gfx1030"


@pytest.mark.parametrize("vendor,what", [("amd", "no AMD GPU"), ("nvidia", "no NVIDIA GPU")])
def test_no_gpu_is_a_clear_error(bare_env, vendor, what):
    fake_tool(bare_env, "nvidia-smi", "exit 9\n")  # present but lists nothing
    with pytest.raises(NativeError, match=what):
        native.detect_arch(vendor)


def test_auto_falls_back_to_cpu_with_one_line(bare_env, capsys, maia_path):
    weights = load_weights(maia_path)
    backend = backends.create("auto", weights)
    assert backend.name == "cpu"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "using cpu" in err[0] and "not found" in err[0]


def test_asking_for_a_gpu_backend_without_toolchain_raises(bare_env, maia_path):
    with pytest.raises(NativeError, match="no NVIDIA GPU found"):   # the GPU is the first lack
        backends.create("cuda", load_weights(maia_path))


# ---------------------------------------------------------------- build
@pytest.fixture
def fake_hip(bare_env, fake_rocm, tmp_path, monkeypatch):
    """A fake hipcc that logs its calls and writes the -o file."""
    calls = tmp_path / "calls.log"
    fake_tool(bare_env, "hipcc", f"""
        echo "$@" >> {calls}
        out=""; prev=""
        for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
        [ -n "$FAKE_FAIL" ] && {{ echo "boom: $FAKE_FAIL" >&2; exit 1; }}
        echo fake > "$out"
        """)
    monkeypatch.setenv("LC0ROCM_GPU_ARCH", "gfx90a")
    return calls


def test_build_compiles_every_file_and_caches_by_hash_and_arch(fake_hip, tmp_path):
    lib = native.build("amd")
    assert lib.name == "liblc0rocm.so" and lib.is_file()
    assert lib.parent.name.endswith("-gfx90a")
    assert lib.parent.parent == tmp_path / "builds"   # bare_env's LC0ROCM_BUILD_CACHE
    lines = fake_hip.read_text().splitlines()
    sources = native.source_files(native.source_dir())
    compiles = [ln for ln in lines if " -c " in ln]
    assert len(compiles) == len(sources)
    assert all("--offload-arch=gfx90a" in ln for ln in compiles)
    assert any("-shared" in ln and "-lhipblas" in ln for ln in lines)
    # second call: cached, no compiler run
    assert native.build("amd") == lib
    assert len(fake_hip.read_text().splitlines()) == len(lines)
    # another arch: another folder
    other = native.build("amd", arch="gfx1030")
    assert other != lib and other.parent.name.endswith("-gfx1030")


def test_nvcc_builds_sm90_as_sm90a_for_wgmma(tmp_path):
    """sm_90 (H100, H200) compiles as sm_90a, whose warpgroup products the
    library's own GEMM needs (native/src/kernels/gemm_sm90.hip), and says so
    to the code (LC0ROCM_SM90A); other architectures keep their own name
    and never see the define."""
    tc = native.Toolchain("nvidia", "nvcc")
    src = tmp_path / "a.hip"

    def flags(arch):
        return native.compile_command(tc, arch, tmp_path, src, tmp_path / "a.o")

    assert "-arch=sm_90a" in flags("sm_90") and "-DLC0ROCM_SM90A" in flags("sm_90")
    for arch in ("sm_80", "sm_89", "sm_100"):
        cmd = flags(arch)
        assert f"-arch={arch}" in cmd and not any("SM90A" in a for a in cmd)


def test_build_failure_names_the_file_and_the_compiler_message(fake_hip, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "bad kernel")
    with pytest.raises(NativeError, match=r"compiling src/.* failed:\n.*boom: bad kernel"):
        native.build("amd")


def test_build_native_command_reports_errors(bare_env, capsys):
    assert native.build_main([]) == 1
    err = capsys.readouterr().err
    assert "no GPU found" in err and "--arch" in err


def test_source_hash_follows_the_sources(tmp_path):
    src = tmp_path / "native"
    shutil.copytree(native.source_dir(), src)
    h1 = native.source_hash(src, "recipe")
    assert native.source_hash(src, "recipe") == h1
    assert native.source_hash(src, "other recipe") != h1
    kernel = next((src / "src" / "kernels").glob("*.hip"))
    kernel.write_text(kernel.read_text() + "\n// changed\n")
    assert native.source_hash(src, "recipe") != h1


# ---------------------------------------------------------------- loading
def test_loading_a_non_library_is_a_clear_error(tmp_path):
    pytest.importorskip("cffi")
    bogus = tmp_path / "liblc0rocm.so"
    bogus.write_text("not an ELF file")
    with pytest.raises(NativeError, match="cannot load the native library"):
        native.load_library(bogus)


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build a stand-in library")
def test_abi_version_mismatch_is_refused(tmp_path):
    pytest.importorskip("cffi")
    c = tmp_path / "old.c"
    c.write_text("int lc0rocm_abi_version(void) { return 99; }\n")
    so = tmp_path / "libold.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(c)], check=True)
    with pytest.raises(NativeError, match="ABI version 99"):
        native.load_library(so)


# ---------------------------------------------------------------- tensors
def test_maia_tensors_names_and_shapes(maia_path):
    t = native.named_tensors(load_weights(maia_path))
    c = 64
    assert t["resnet.input.w"].shape == (9 * 112 * c,)
    assert t["resnet.block.5.conv2.w"].shape == (9 * c * c,)
    assert "resnet.block.6.conv1.w" not in t
    assert t["resnet.block.0.se1.w"].size == c * len(t["resnet.block.0.se1.b"])
    assert t["resnet.block.0.se2.b"].shape == (2 * c,)
    gather = t["resnet.policy.gather"]
    assert gather.dtype == np.int32 and gather.shape == (1858,)
    assert gather.min() >= 0 and gather.max() < 64 * 80 and len(set(gather.tolist())) == 1858
    assert t["resnet.value_ip2.b"].shape == (3,)
    assert not any(k.startswith("resnet.mlh") for k in t)   # maia has no moves-left head
    assert all(v.dtype in (np.float32, np.int32) for v in t.values())


def test_attention_tensors_carry_raw_paths_heads_and_maps(make_test_net):
    w = load_weights(make_test_net("tiny-bt"))
    t = native.named_tensors(w)
    assert "encoder.0.mha.q_w" in t and "encoder.1.ffn.dense2_b" in t
    assert "policy_head.ip2_pol_w" in t and "value_head.ip2_val_w" in t
    assert not any(k.startswith(("policy_heads.", "value_heads.")) for k in t)
    assert t["meta.headcount"].dtype == np.int32 and t["meta.headcount"][0] == w.net.headcount
    assert t["map.attention_policy_gather"].shape == (1858,)


def emulate_resnet(t: dict, masks, values) -> tuple:
    """numpy replay of native/src/resnet.cpp over the named tensors, in its
    layouts (NHWC, im2col column = tap*C + c, [in][out] matrices)."""
    from lc0_rocm.backends.base import unpack_planes

    def act(x):
        return np.maximum(x, 0)

    def im2col(x):  # x (n, 64, C) -> (n*64, 9C)
        n, _, c = x.shape
        pad = np.zeros((n, 10, 10, c), np.float32)
        pad[:, 1:9, 1:9] = x.reshape(n, 8, 8, c)
        cols = [pad[:, dy:dy + 8, dx:dx + 8] for dy in range(3) for dx in range(3)]
        return np.concatenate(cols, axis=-1).reshape(n * 64, 9 * c)

    def conv(x, name, a=True):
        y = im2col(x) @ t[name + ".w"].reshape(-1, len(t[name + ".b"])) + t[name + ".b"]
        return (act(y) if a else y).reshape(x.shape[0], 64, -1)

    def dense(x, name):
        return x @ t[name + ".w"].reshape(-1, len(t[name + ".b"])) + t[name + ".b"]

    planes = unpack_planes(masks, values)
    n = planes.shape[0]
    flow = conv(planes.reshape(n, 112, 64).transpose(0, 2, 1), "resnet.input")
    i = 0
    while f"resnet.block.{i}.conv1.w" in t:
        p = f"resnet.block.{i}"
        branch = conv(conv(flow, p + ".conv1"), p + ".conv2", a=False)
        g = dense(act(dense(branch.mean(axis=1), p + ".se1")), p + ".se2")
        c = flow.shape[2]
        flow = act(1 / (1 + np.exp(-g[:, None, :c])) * branch + g[:, None, c:] + flow)
        i += 1
    hidden = conv(flow, "resnet.policy1")
    raw = conv(hidden, "resnet.policy", a=False).reshape(n, -1)
    policy = raw[:, t["resnet.policy.gather"]]
    v = act(dense(flow.reshape(n * 64, -1), "resnet.value")).reshape(n, -1)
    logits = dense(act(dense(v, "resnet.value_ip1")), "resnet.value_ip2")
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return policy, e / e.sum(axis=1, keepdims=True)


def test_named_tensor_layouts_reproduce_the_reference(maia_path):
    """The tensors and layouts the library gets compute what the cpu backend
    computes (catches a transposed matrix or a wrong gather without a GPU)."""
    import chess
    from lc0_rocm import encoder

    w = load_weights(maia_path)
    boards = [chess.Board(), chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4")]
    boards[1].push_san("O-O")
    masks, values, _ = encoder.encode_batch_packed(boards, w.format.input)
    policy, wdl = emulate_resnet(native.named_tensors(w), masks, values)
    ref_policy, ref_wdl, _ = backends.create("cpu", w).forward_packed(masks, values)
    np.testing.assert_allclose(policy, ref_policy, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wdl, ref_wdl, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- GPU (skipped without one)
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
    planes = gpu.forward(backends.base.unpack_planes(masks[:5], values[:5]))
    assert np.linalg.norm(planes[0] - ref[0][:5]) <= tol * np.linalg.norm(ref[0][:5])
    gpu.close()


@pytest.mark.gpu
@pytest.mark.parametrize("net", ["maia", "tiny-attn"])
def test_gpu_mapped_io_equals_copies(net, maia_path, make_test_net, monkeypatch):
    """Batches up to LC0ROCM_MAPPED_IO read their input from and write their
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
        monkeypatch.setenv("LC0ROCM_MAPPED_IO", mapped)
        gpu = backends.create(name, w, max_batch=40)
        for n in (1, 7, 16, 17, 40):
            assert ("in mapped host memory" in gpu.describe(n)) == (mapped == "16" and n <= 16), gpu.describe(n)
        runs = []
        for n in (1, 1, 1, 7, 7, 7, 16, 16, 16, 40):
            runs.append(gpu.forward_packed(masks[:n], values[:n]))
        runs.append(gpu.forward(backends.base.unpack_planes(masks[:5], values[:5])))
        gpu.close()
        results[mapped] = runs
    for copied, in_place in zip(results["0"], results["16"]):
        for a, b in zip(copied, in_place):
            assert not np.isnan(b).any()
            np.testing.assert_array_equal(a, b)
    if net == "maia":
        assert not results["16"][0][2].any()  # moves left: zeros without the head


def check_paths_match_cpu(w, name, env, count, tol, monkeypatch, expect_path=None):
    """GPU backend `name` with the library's `env` (read when a network is
    created) against the cpu backend, at batch 1, 2, 17 and `count`; the
    small sizes three times each: a plain pass, a captured graph's first
    launch and its replay. expect_path(device_info, batch): a pattern the
    backend's describe() must match at that (graph-padded) batch, or None."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    masks, values = random_packed(w, count)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    gpu = backends.create(name, w, max_batch=count)
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
@pytest.mark.parametrize("env", [{"LC0ROCM_FUSED_SE": "0"}, {"LC0ROCM_FUSED_SE": "1"},
                                 {"LC0ROCM_WINOGRAD": "0", "LC0ROCM_IMPLICIT_CONV": "0"},
                                 {"LC0ROCM_IMPLICIT_CONV": "0"},
                                 {"LC0ROCM_IMPLICIT_CONV": "1"},
                                 {"LC0ROCM_VALUE_TAIL": "0"},
                                 {"LC0ROCM_IMPLICIT_CONV": "1", "LC0ROCM_FUSED_SE": "0"},
                                 {"LC0ROCM_WINOGRAD": "1"}, {"LC0ROCM_WINOGRAD": "1", "LC0ROCM_FUSED_SE": "0"},
                                 {"LC0ROCM_WINOGRAD": "1", "LC0ROCM_WINOGRAD_CHAIN": "0"},
                                 {"LC0ROCM_PDL": "0"}])
@pytest.mark.parametrize("net", ["maia", "tiny-resnet", "tiny-resnet-classical"])
def test_gpu_convolution_paths_match_cpu(net, env, precision, tol, maia_path, make_test_net, monkeypatch):
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
    env = {"LC0ROCM_RESNET_TOWER": "0", **env}
    w = load_weights(maia_path if net == "maia" else make_test_net(net))
    check_paths_match_cpu(w, name, env, 200, tol, monkeypatch)


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 1e-2)])
@pytest.mark.parametrize("value_hidden", [36, 40, 64])
@pytest.mark.parametrize("body", ["resnet", "resnet-classical", "attention"])
def test_gpu_value_head_tail_widths_match_cpu(body, value_hidden, precision, tol, tmp_path, monkeypatch):
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
    check_paths_match_cpu(w, name, {}, 40, tol, monkeypatch)


def resnet_tower_path(env, conv_policy=True):
    """expect_path for the residual tower in one launch under `env`: which
    layout resnet_tower.hip / resnet_tower_cluster.hip must take on an
    sm_90 GPU (H100, H200: 227 KB of shared memory per block, clusters),
    and whether resnet_tower.hip runs a convolution policy's first layer
    too (with two positions per block; LC0ROCM_RESNET_TOWER_POLICY=0 keeps
    it out); None elsewhere (other GPUs have other shared memory and no
    clusters; there only the parity is checked)."""
    def expect(info, n):
        if info["vendor"] != "nvidia" or info["arch"] != "sm_90":
            return None
        if env.get("LC0ROCM_RESNET_TOWER") == "0":
            return r"residual tower (a layer at a time|as one Winograd chain) \(batch"
        forced = int(env.get("LC0ROCM_RESNET_TOWER_POSITIONS", "0"))
        clusters = info["multiprocessors"] // 4
        if "LC0ROCM_RESNET_TOWER_CLUSTER" in env:
            clusters = min(clusters, int(env["LC0ROCM_RESNET_TOWER_CLUSTER"]))
        if not forced and n <= clusters:
            path = "a position per cluster of 4 blocks"
        elif (forced or (2 if n > info["multiprocessors"] else 1)) == 2:
            path = "two positions per block"
        else:
            path = "a position per block" + ("" if env.get("LC0ROCM_RESNET_TOWER_SPLIT") == "0" else ", K split")
        if conv_policy and env.get("LC0ROCM_RESNET_TOWER_POLICY") != "0" and path == "two positions per block":
            path += ", the policy's first convolution in it"
        return re.escape(f"residual tower in one launch, {path} (batch {n})")
    return expect


@pytest.mark.gpu
@pytest.mark.parametrize("env", [{}, {"LC0ROCM_PDL": "0"}, {"LC0ROCM_RESNET_TOWER_CLUSTER": "0"},
                                 {"LC0ROCM_RESNET_TOWER_CLUSTER": "2"},
                                 {"LC0ROCM_RESNET_TOWER_CLUSTER": "0", "LC0ROCM_PDL": "0"},
                                 {"LC0ROCM_RESNET_TOWER_POSITIONS": "1"},
                                 {"LC0ROCM_RESNET_TOWER_POSITIONS": "1", "LC0ROCM_RESNET_TOWER_SPLIT": "0"},
                                 {"LC0ROCM_RESNET_TOWER_POSITIONS": "2"}, {"LC0ROCM_RESNET_TOWER": "0"},
                                 {"LC0ROCM_RESNET_TOWER_POLICY": "0"},
                                 {"LC0ROCM_RESNET_TOWER_POLICY": "0", "LC0ROCM_RESNET_TOWER_POSITIONS": "2"}])
@pytest.mark.parametrize("net", ["maia", "tiny-resnet", "tiny-resnet-classical", "tiny-resnet-mish"])
def test_gpu_resnet_tower_matches_cpu(net, env, maia_path, make_test_net, monkeypatch):
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
    check_paths_match_cpu(load_weights(path), name, env, 200, 1e-2, monkeypatch,
                          expect_path=resnet_tower_path(env, conv_policy=net != "tiny-resnet-classical"))


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


def attention_path(env, precision, ffn_fits=False, ffn_tiles_256=False):
    """expect_path for an attention body under `env`, on NVIDIA GPUs; None
    elsewhere. Smolgen's chain a layer at a time; float products as split tf32 (native/TF32_SPLIT.md;
    compute capability 8.0 on) unless LC0ROCM_TF32_SPLIT_ROWS=0; half
    layers of one row on gemv_rows (native/GEMV_ROWS.md) at batch 1 unless
    LC0ROCM_GEMV_ROWS says otherwise; half nets' Q|K|V on the
    side lane beside smolgen's chain up to LC0ROCM_SMOLGEN_BESIDE positions;
    half nets' FFN's first product on our sm_90 product
    (native/GEMM_SM90.md) from LC0ROCM_GEMM_SM90_ROWS rows unless
    LC0ROCM_GEMM_SM90=0, where its shape fits (ffn_fits), its products summed
    in half on 256-wide tiles where those fit the FFN (ffn_tiles_256) unless
    LC0ROCM_GEMM_SM90_HALF_SUMS=0, there on the wide ping-pong schedule;
    half nets' smolgen
    compress in the Q|K|V product from LC0ROCM_QKV_COMPRESS positions where
    the chain runs a layer at a time, not beside Q|K|V, and the attention is
    fused."""
    def expect(info, n):
        if info["vendor"] != "nvidia":
            return None
        sm90 = info["arch"] == "sm_90"
        path = "smolgen a layer at a time"
        beside = int(env.get("LC0ROCM_SMOLGEN_BESIDE", SMOLGEN_BESIDE_DEFAULT_POSITIONS))
        beside = precision == "fp16" and n <= beside and env.get("LC0ROCM_SIDE_STREAM") != "0"
        compress_from = int(env.get("LC0ROCM_QKV_COMPRESS", QKV_COMPRESS_DEFAULT_POSITIONS))
        if (precision == "fp16" and not beside and 0 < compress_from <= n
                and env.get("LC0ROCM_ATTN_UNFUSED") != "1"):
            path += ", its compress in the Q|K|V product"
        if beside:
            path += ", beside Q|K|V"
        split_rows = int(env.get("LC0ROCM_TF32_SPLIT_ROWS", TF32_SPLIT_DEFAULT_ROWS))
        if precision == "fp32" and has_tf32_products(info) and split_rows > 0:
            path += f", float products from {split_rows} rows as split tf32 (3 passes)"
        sm90_rows = int(env.get("LC0ROCM_GEMM_SM90_ROWS", SM90_DEFAULT_ROWS))
        if (precision == "fp16" and sm90 and ffn_fits and env.get("LC0ROCM_GEMM_SM90") != "0"
                and 64 * n >= sm90_rows):
            path += f", the FFN's first products on sm_90 wgmma from {sm90_rows} rows"
            if env.get("LC0ROCM_GEMM_SM90_HALF_SUMS", "1") != "0" and ffn_tiles_256:
                path += " (half sums) (ping-pong on 128 x 256 tiles)"
        if precision == "fp16" and n <= int(env.get("LC0ROCM_GEMV_ROWS", GEMV_DEFAULT_ROWS)):
            path += ", per-position layers on gemv_rows"
        return re.escape(f"{path} (batch {n})")
    return expect


# kTf32SplitFromRows, kGemvDefaultRows, kSmolgenBesideDefaultPositions, kSm90FromRows and
# kQkvCompressDefaultPositions in native/src/attention.cpp.
TF32_SPLIT_DEFAULT_ROWS = 128
SM90_DEFAULT_ROWS = 8192
GEMV_DEFAULT_ROWS = 1
SMOLGEN_BESIDE_DEFAULT_POSITIONS = 2
QKV_COMPRESS_DEFAULT_POSITIONS = 1
ATTENTION_SHAPES = {"tiny-attn": attention_nets.TINY_ATTN, "tiny-bt": attention_nets.TINY_BT}


def ffn_fits_sm90(shape) -> bool:
    """Whether an attention net's FFN's first product takes our sm_90 product:
    gemm_sm90_fits (native/src/kernels/gemm_sm90.hip) on N = dff, K = embedding."""
    return shape.dff >= 128 and shape.dff % 128 == 0 and shape.embedding >= 64 and shape.embedding % 64 == 0


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 1e-2)])
@pytest.mark.parametrize("env", [{}, {"LC0ROCM_ATTN_UNFUSED": "1"}, {"LC0ROCM_ATTN_NO_TC": "1"},
                                 {"LC0ROCM_ATTN_WMMA": "1"}, {"LC0ROCM_GEMM_TUNE": "0"},
                                 {"LC0ROCM_PDL": "1"},
                                 {"LC0ROCM_TF32_SPLIT_ROWS": "0"}, {"LC0ROCM_TF32_SPLIT_ROWS": "1"},
                                 {"LC0ROCM_GEMV_ROWS": "0"}, {"LC0ROCM_GEMV_ROWS": "4", "LC0ROCM_PDL": "1"},
                                 {"LC0ROCM_SMOLGEN_BESIDE": "0"}, {"LC0ROCM_SIDE_STREAM": "0"},
                                 {"LC0ROCM_SMOLGEN_BESIDE": "64", "LC0ROCM_PDL": "1"},
                                 {"LC0ROCM_SMOLGEN_FIRST": "1"}, {"LC0ROCM_GEMM_SM90": "0"},
                                 {"LC0ROCM_GEMM_SM90_ROWS": "64"},
                                 {"LC0ROCM_GEMM_SM90_ROWS": "64", "LC0ROCM_GEMM_SM90_HALF_SUMS": "0"},
                                 {"LC0ROCM_QKV_COMPRESS": "0"}, {"LC0ROCM_QKV_COMPRESS": "17"}])
@pytest.mark.parametrize("net", ["tiny-attn", "tiny-bt"])
def test_gpu_attention_paths_match_cpu(net, env, precision, tol, make_test_net, monkeypatch):
    """Every implementation of the attention body's attention
    (native/src/attention.cpp): the fused kernel, tensor-core (mma.sync
    fragments or wmma) or scalar, or
    split heads + batched GEMMs + softmax + merge; dense layers all on BLAS
    (the default; half products on the algorithm that timed fastest per
    shape, or with LC0ROCM_GEMM_TUNE=0 on cublasGemmEx's own choice); float
    dense layers as split tf32 products from 128 rows (the default: batch 1
    plain, per-square layers split from batch 2, smolgen's per-position
    ones from 128), at every size, or never; half layers of one row (batch
    1) on gemv_rows, or of up to 4 rows, or none; in half precision Q|K|V on the side lane beside
    smolgen's chain up to batch 2 (the default, with dependent launches
    there), up to 64, or never (asked, or no side lane); in half
    precision smolgen's chain before Q|K|V from batch 256 (the default) or
    from batch 1 (where it does not run beside); in half precision on sm_90
    the FFN's first product on our own (wgmma, its activation in the
    epilogue, where the FFN's shape fits it: tiny-attn's does, tiny-bt's 96
    columns do not) from batch 128 (the default), from batch 1 with half
    sums (on the wide ping-pong schedule where its 256-wide tiles fit: not
    tiny-attn's 128 columns) or float sums, or never; in half precision smolgen's compress in
    the Q|K|V product (the fused attention reading wider rows; the tensor-core
    kernels, mma.sync or wmma, and the scalar one) wherever its chain runs a
    layer at a time and not beside (the default), from batch 17, or never;
    kernels launched plainly or (forced) as dependent launches."""
    name = gpu_backend_or_skip(precision)
    check_paths_match_cpu(load_weights(make_test_net(net)), name, env, 70, tol, monkeypatch,
                          expect_path=attention_path(env, precision, ffn_fits_sm90(ATTENTION_SHAPES[net]),
                                                     ATTENTION_SHAPES[net].dff % 256 == 0))


@pytest.mark.gpu
@pytest.mark.parametrize("filters,heads,smolgen", [(128, 4, False), (192, 6, True)],
                         ids=["two-pairs-no-smolgen", "three-pairs-smolgen"])
def test_gpu_qkv_attention_sm90_matches_cpu(filters, heads, smolgen, tmp_path, monkeypatch):
    """The Q|K|V product with its attention in one launch on sm_90
    (native/QKV_ATTENTION_SM90.md) from batch 1, on small nets of head depth
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

    check_paths_match_cpu(load_weights(path), name, {"LC0ROCM_QKV_ATTENTION": "1", "LC0ROCM_SMOLGEN_BESIDE": "0"},
                          70, 1e-2, monkeypatch, expect_path=expect)


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 1e-2)])
@pytest.mark.parametrize("gen", [1024, 2304])
@pytest.mark.parametrize("wide_rows", ["1", "0"])
def test_gpu_smolgen_wide_layer_norm(wide_rows, gen, precision, tol, tmp_path, monkeypatch):
    """Smolgen's second layer norm over 4 heads x `gen` values a row on
    blocks of 256 threads (LC0ROCM_WIDE_NORM_ROWS=1: at every batch; the
    default takes it from batch 256) and on the row-a-block kernel (0). Half
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
    check_paths_match_cpu(load_weights(path), name, {"LC0ROCM_WIDE_NORM_ROWS": wide_rows}, 70, tol, monkeypatch)


@pytest.mark.gpu
@pytest.mark.parametrize("net", ["tiny-attn", "tiny-bt", "tiny-resnet-attnpolicy"])
def test_gpu_tf32_split_keeps_float_precision(net, make_test_net, monkeypatch):
    """Float products as split tf32 (native/TF32_SPLIT.md) stay within a
    few float roundings of the cpu reference: 2e-5 relative, where plain
    tf32 products (10 mantissa bits) are off by ~3e-4 in every GEMM. On
    attention bodies and on the attention policy head of a convolution
    body. Skips where the GPU has no tf32 products."""
    name = gpu_backend_or_skip("fp32")
    monkeypatch.setenv("LC0ROCM_TF32_SPLIT_ROWS", "1")
    w = load_weights(make_test_net(net))
    masks, values = random_packed(w, 64)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    gpu = backends.create(name, w, max_batch=64)
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
def test_gpu_side_lane_matches_one_stream(net, maia_path, make_test_net, monkeypatch):
    """The side lane's branches (native/SIDE_LANE.md: a convolution body's
    value and moves-left heads, an attention body's Q|K|V beside smolgen
    when LC0ROCM_SMOLGEN_BESIDE asks for it) give the same bits as
    everything on one stream, on the plain first pass, the captured second
    and the replays after it; every pass gets new positions, so outputs
    copied before the side lane joined would show."""
    name = gpu_backend_or_skip("fp16")
    monkeypatch.setenv("LC0ROCM_SMOLGEN_BESIDE", "64")
    w = load_weights(maia_path if net == "maia" else make_test_net(net))
    masks, values = random_packed(w, 4 * 24)
    results = {}
    for side in ("1", "0"):
        monkeypatch.setenv("LC0ROCM_SIDE_STREAM", side)
        gpu = backends.create(name, w, max_batch=24)
        if net == "tiny-attn":
            assert ("beside Q|K|V" in gpu.describe(24)) == (side == "1"), gpu.describe(24)
        results[side] = [gpu.forward_packed(masks[i * 24:(i + 1) * 24], values[i * 24:(i + 1) * 24])
                         for i in range(4)]
        gpu.close()
    for with_side, alone in zip(results["1"], results["0"]):
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
    with pytest.raises(NativeError, match="unknown options"):
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
    out = ffi.new("lc0rocm_net**")
    status = lib.lc0rocm_create(cfg, ffi.NULL, 0, out)
    assert status == lib.LC0ROCM_INVALID_ARGUMENT
    assert "resnet.input" in ffi.string(lib.lc0rocm_last_error()).decode()



@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed: the host check of kernel code needs it")
def test_vector_kernels_equal_their_one_element_path_on_host(tmp_path):
    """The 16-byte paths (float x4, half x8) of bias_act, im2col3x3 and
    se_apply equal their one-element paths, run on the CPU through the
    kernels' __host__ __device__ functions."""
    exe = tmp_path / "kernels_host_check"
    source = ROOT / "tests" / "native" / "kernels_host_check.cu"
    subprocess.run(["nvcc", "-x", "cu", "-std=c++17", "-O1", "-DLC0ROCM_KERNELS_ONLY",
                    "-o", str(exe), str(source)], check=True, capture_output=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:]
    assert "0 failures" in run.stdout


def test_auto_picks_the_gpu_backend_when_a_gpu_is_present(bare_env, tmp_path, monkeypatch):
    cuda = tmp_path / "cuda"
    fake_tool(cuda / "bin", "nvcc", "exit 0\n")
    (cuda / "include").mkdir(parents=True)
    (cuda / "include" / "cublas_v2.h").write_text("")
    (cuda / "lib64").mkdir()
    (cuda / "lib64" / "libcublas.so").write_text("")
    (cuda / "lib64" / "libcublasLt.so").write_text("")
    monkeypatch.setattr(native, "_cuda_roots", lambda nvcc: [cuda])
    fake_tool(bare_env, "nvidia-smi", "echo 9.0\n")
    monkeypatch.setenv("PATH", f"{cuda / 'bin'}:{bare_env}")
    assert native.is_available("cuda-auto") == (True, "")
    assert not native.is_available("rocm-auto")[0]
    assert backends.resolve("auto") == "cuda-auto"


def test_conv_body_with_attention_policy_gets_head_tensors(make_test_net):
    t = native.named_tensors(load_weights(make_test_net("tiny-resnet-attnpolicy")))
    assert "resnet.input.w" in t and "resnet.value_ip2.w" in t
    assert not any(k.startswith("resnet.policy") for k in t)
    assert {"policy_head.ip_pol_w", "policy_head.ip2_pol_w", "policy_head.ip3_pol_w",
            "policy_head.ip4_pol_w", "map.attention_policy_gather", "meta.pol_headcount"} <= set(t)


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
    its rows' results, repeated calls (graph replays) included."""
    name = gpu_backend_or_skip(precision)
    w = load_weights(maia_path)
    masks, values = random_packed(w, 120, seed=5)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    gpu = backends.create(name, w, max_batch=120)
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
    src = native.source_dir()
    built = subprocess.run([tc.compiler, "-x", "cu", *native.nvidia_arch_flags(arch), native.CXX_STD, "-O3",
                            f"-I{src / 'src'}", *[f"-I{d}" for d in tc.include_dirs],
                            str(ROOT / "tests" / "native" / "mish_half2_check.cu"), "-o", str(exe)],
                           env=tc.run_env(), capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, env=tc.run_env())
    print(run.stdout)
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stdout[-2000:]
