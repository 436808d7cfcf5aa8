"""Native GPU backend: the Python side without a GPU (ABI header, toolchain
and architecture detection, cached builds, clear errors, `auto` falling back
to cpu, weights -> named tensors). On a GPU: test_native_gpu.py."""
from __future__ import annotations

import pathlib
import re
import shutil
import stat
import subprocess
import textwrap
import threading
import time

import numpy as np
import pytest

from lc0_rocm import backends
from lc0_rocm.backends import native, native_build, native_tensors
from lc0_rocm.backends.native import NativeError
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
    assert libc.LC0ROCM_ABI_VERSION == 9
    assert libc.LC0ROCM_OK == 0 and libc.LC0ROCM_INVALID_ARGUMENT != 0
    for fn in ("lc0rocm_abi_version", "lc0rocm_last_error", "lc0rocm_get_device_info",
               "lc0rocm_create", "lc0rocm_destroy", "lc0rocm_stream_create",
               "lc0rocm_stream_destroy", "lc0rocm_forward", "lc0rocm_forward_planes",
               "lc0rocm_stream_describe", "lc0rocm_host_alloc", "lc0rocm_host_free"):
        assert fn in native.cdef_text()
    assert ffi.sizeof("lc0rocm_tensor") >= 8 + 8 + 8 + 4 + 4 + 4
    assert libc.LC0ROCM_DTYPE_LINEAR16 == 2


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


def test_the_library_reads_no_environment():
    """Settings reach the library as backend options in lc0rocm_config
    (native.OPTIONS); no kernel or layer file reads the environment."""
    readers = [str(p.relative_to(ROOT)) for p in (ROOT / "native" / "src").rglob("*")
               if p.suffix in (".h", ".cpp", ".hip") and re.search(r"\bgetenv\b|secure_getenv|environ\b",
                                                                     p.read_text())]
    assert not readers, readers


def test_device_features_are_named_in_the_compat_header_only():
    """Kernels test gpu_compat.h's feature names (LC0ROCM_MMA_AVAILABLE, ...),
    never an architecture number or target name."""
    raw = re.compile(r"__CUDA_ARCH__|__CUDA_ARCH_FEAT|__gfx\d|__HIP_DEVICE_COMPILE__")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "native" / "src").rglob("*")
                 if p.suffix in (".h", ".cpp", ".hip") and p.name != "gpu_compat.h" and raw.search(p.read_text())]
    assert not offenders, offenders


def test_every_device_feature_rests_on_the_target():
    """Each feature name is defined under a test of the target being compiled
    (an architecture number or name), never of another feature name: a
    circular condition defines nothing and the kernels silently lose the
    feature (it happened: dependent launch and clusters vanished from
    sm_90a's code while every build still passed)."""
    text = (ROOT / "native" / "src" / "gpu_compat.h").read_text()
    lines = text.splitlines()
    features = [i for i, line in enumerate(lines) if re.match(r"#define LC0ROCM_\w+_AVAILABLE\b", line)]
    assert len(features) >= 8
    for i in features:
        condition = next(lines[j] for j in range(i - 1, -1, -1) if lines[j].startswith("#if"))
        assert re.search(r"__CUDA_ARCH|__gfx\d|__HIP_DEVICE_COMPILE__", condition), (lines[i], condition)
        assert "AVAILABLE" not in condition, (lines[i], condition)


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
        native_build.detect_toolchain()
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
    tc = native_build.detect_toolchain("amd")
    assert tc.vendor == "amd" and tc.compiler == str(hipcc)
    assert "-lhipblas" in tc.libraries
    assert tc.include_dirs == (str(fake_rocm / "include"),)


def test_hipcc_without_hipblas_is_a_clear_error(bare_env):
    fake_tool(bare_env, "hipcc", "exit 0\n")
    if pathlib.Path("/usr/include/hipblas/hipblas.h").is_file():
        pytest.skip("this machine has hipBLAS in /usr/include")
    with pytest.raises(NativeError, match="hipBLAS not found"):
        native_build.detect_toolchain("amd")


def test_toolchain_env_override_picks_vendor(bare_env, fake_rocm, monkeypatch):
    fake_tool(bare_env, "hipcc", "exit 0\n")
    monkeypatch.setenv("LC0ROCM_TOOLCHAIN", "cuda")
    with pytest.raises(NativeError, match="nvcc"):
        native_build.detect_toolchain()


def test_nvcc_without_cublas_is_a_clear_error(bare_env, tmp_path, monkeypatch):
    cuda = tmp_path / "cuda"
    fake_tool(cuda / "bin", "nvcc", "exit 0\n")
    monkeypatch.setenv("PATH", f"{cuda / 'bin'}:{bare_env}")
    monkeypatch.setattr(native_build, "_cuda_roots", lambda nvcc: [cuda])
    with pytest.raises(NativeError, match="cuBLAS not found"):
        native_build.detect_toolchain("nvidia")
    (cuda / "include").mkdir()
    (cuda / "include" / "cublas_v2.h").write_text("")
    (cuda / "lib64").mkdir()
    (cuda / "lib64" / "libcublas.so.13").write_text("")
    (cuda / "lib64" / "libcublasLt.so.13").write_text("")
    tc = native_build.detect_toolchain("nvidia")
    assert tc.include_dirs == (str(cuda / "include"),)
    assert tc.libraries == ("-l:libcublas.so.13", "-l:libcublasLt.so.13")


def test_arch_from_rocm_agent_enumerator(bare_env):
    fake_tool(bare_env, "rocm_agent_enumerator", "echo gfx000; echo gfx90a; echo gfx90a\n")
    assert native_build.detect_arch("amd") == "gfx90a"


def test_arch_from_nvidia_smi(bare_env):
    fake_tool(bare_env, "nvidia-smi", "echo 9.0\n")
    assert native_build.detect_arch("nvidia") == "sm_90"


def test_arch_env_override(bare_env, monkeypatch):
    monkeypatch.setenv("LC0ROCM_GPU_ARCH", "gfx1030")
    assert native_build.detect_arch("amd") == "gfx1030"


@pytest.mark.parametrize("vendor,what", [("amd", "no AMD GPU"), ("nvidia", "no NVIDIA GPU")])
def test_no_gpu_is_a_clear_error(bare_env, vendor, what):
    fake_tool(bare_env, "nvidia-smi", "exit 9\n")  # present but lists nothing
    with pytest.raises(NativeError, match=what):
        native_build.detect_arch(vendor)


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
        case " $* " in *" -shared "*) [ -n "$FAKE_FAIL_LINK" ] && {{ echo "link boom" >&2; exit 1; }};; esac
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
    sources = native_build.source_files(native_build.source_dir())
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


def test_a_stopped_build_keeps_its_objects_and_the_next_compiles_only_the_rest(fake_hip, monkeypatch):
    """A build stopped before its end (killed by a GUI that gave up, or
    failing) keeps the objects it finished in its library's folder; the next
    compiles only those missing, says how many it kept, and the objects go
    once the library is installed."""
    monkeypatch.setenv("FAKE_FAIL_LINK", "1")
    with pytest.raises(NativeError, match="link boom"):
        native_build.build("amd")
    lib = native_build._target("amd", None)[3]
    objects = lib.parent / ".objects"
    sources = native_build.source_files(native_build.source_dir())
    kept = sorted(objects.glob("*.o"))
    assert len(kept) == len(sources) and not lib.exists()
    kept[0].unlink()                                    # as if killed before this one was done
    (objects / (kept[1].name + ".part")).write_text("half an object")   # and during this one
    monkeypatch.delenv("FAKE_FAIL_LINK")
    before = len(fake_hip.read_text().splitlines())
    heard = []
    assert native_build.build("amd", on_progress=heard.append) == lib and lib.is_file()
    compiled = [ln for ln in fake_hip.read_text().splitlines()[before:] if " -c " in ln]
    assert len(compiled) == 1 and compiled[0].split(" -o ")[1].startswith(str(kept[0]))
    assert (heard[0].done, heard[0].total) == (len(sources) - 1, len(sources))
    assert "interrupted" in heard[0].current and heard[-1].done == len(sources)
    assert not objects.exists()


def test_prepare_leaves_a_first_build_to_create(fake_hip, monkeypatch):
    """prepare() (run on a thread beside reading the weights) never compiles:
    a missing library is create()'s to build, with its progress and Ctrl-C;
    a cached one it finds (cached_library) and goes on to load."""
    monkeypatch.setattr(native, "_READY", {})                 # whatever earlier tests prepared
    assert native_build.cached_library("amd") is None
    native.prepare("rocm")
    assert not fake_hip.exists() and not native._READY          # nothing compiled, nothing kept
    lib = native.build("amd")
    assert native_build.cached_library("amd") == lib
    loaded = []

    def load_library(path):
        loaded.append(path)
        raise native.NativeError("a fake library")           # the fake hipcc wrote no real one
    monkeypatch.setattr(native, "load_library", load_library)
    with pytest.raises(native.NativeError, match="a fake library"):
        native.prepare("rocm")
    assert loaded == [lib]


def test_a_gpu_probe_runs_once_a_process(bare_env, monkeypatch):
    """nvidia-smi is asked once a process for what it answered (every run
    costs time, and `auto` is resolved more than once); a probe that
    answered nothing is asked again."""
    log = bare_env / "smi.log"
    fake_tool(bare_env, "nvidia-smi", f"echo run >> {log}; echo 9.0\n")
    assert native_build.detect_arch("nvidia") == "sm_90"
    assert native_build.detect_arch("nvidia") == "sm_90"
    assert log.read_text().count("run") == 1
    fake_tool(bare_env / "later", "nvidia-smi", f"echo again >> {log}; exit 9\n")   # no answer: asked again
    monkeypatch.setattr(native_build, "_which", lambda name, extra=(): str(bare_env / "later" / name))
    for _ in range(2):
        with pytest.raises(NativeError, match="no NVIDIA GPU"):
            native_build.detect_arch("nvidia")
    assert log.read_text().count("again") == 2


def test_nvcc_builds_sm90_as_sm90a_for_wgmma(tmp_path):
    """sm_90 (H100, H200) compiles as sm_90a, whose warpgroup products the
    library's own GEMM needs (native/src/kernels/gemm_sm90.hip), and says so
    to the code (LC0ROCM_SM90A); other architectures keep their own name
    and never see the define."""
    tc = native_build.Toolchain("nvidia", "nvcc")
    src = tmp_path / "a.hip"

    def flags(arch):
        return native_build.compile_command(tc, arch, tmp_path, src, tmp_path / "a.o")

    sm90 = flags("sm_90")
    # sm_90a's machine code alone: -arch=sm_90a would compile each file twice (compute_90 PTX too)
    assert sm90[sm90.index("-gencode") + 1] == "arch=compute_90a,code=sm_90a" and "-DLC0ROCM_SM90A" in sm90
    assert not any(a.startswith("-arch") for a in sm90)
    for arch in ("sm_80", "sm_89", "sm_100"):
        cmd = flags(arch)
        assert f"-arch={arch}" in cmd and not any("SM90A" in a for a in cmd)


def test_build_failure_names_the_file_and_the_compiler_message(fake_hip, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "bad kernel")
    with pytest.raises(NativeError, match=r"compiling src/.* failed:\n.*boom: bad kernel"):
        native.build("amd")


def test_build_native_command_reports_errors(bare_env, capsys):
    assert native_build.build_main([]) == 1
    err = capsys.readouterr().err
    assert "no GPU found" in err and "--arch" in err


def test_a_library_is_looked_for_once_a_process(fake_hip, monkeypatch):
    """Counting GPUs, preparing and creating each look for the library: the
    sources are hashed and the library's record checked once a process (each
    cost 0.03-0.18 s on a GPU host beside a command's imports); another
    architecture or environment is looked for again."""
    from lc0_rocm import buildcache
    lib = native.build("amd")
    hashed, fingerprinted = [], []
    monkeypatch.setattr(native_build, "source_hash",
                        lambda src, extra, real=native_build.source_hash: hashed.append(extra) or real(src, extra))
    monkeypatch.setattr(buildcache, "_fingerprint",
                        lambda path, real=buildcache._fingerprint: fingerprinted.append(path) or real(path))
    monkeypatch.setattr(native_build, "_TARGETS", {})
    monkeypatch.setattr(buildcache, "_VERIFIED", set())
    assert native.build("amd") == lib and native_build.cached_library("amd") == lib
    assert native.build("amd") == lib and len(hashed) == 1 and len(fingerprinted) == 1
    assert native.build("amd", arch="gfx1030") != lib and len(hashed) == 2
    monkeypatch.setenv("LC0ROCM_GPU_ARCH", "gfx1100")
    assert native.build("amd").parent.name.endswith("-gfx1100") and len(hashed) == 3
    lib.write_bytes(b"damaged after it was checked")          # another size and time: checked again
    assert "does not match its record" in buildcache.verify(lib)


def test_a_fingerprint_is_the_size_and_sha256(tmp_path):
    import hashlib
    from lc0_rocm import buildcache
    for data in (b"", b"x" * 3_000_001):
        path = tmp_path / "f"
        path.write_bytes(data)
        assert buildcache._fingerprint(path) == f"{len(data)} {hashlib.sha256(data).hexdigest()}"


def test_source_hash_follows_the_sources(tmp_path):
    src = tmp_path / "native"
    shutil.copytree(native_build.source_dir(), src)
    h1 = native_build.source_hash(src, "recipe")
    assert native_build.source_hash(src, "recipe") == h1
    assert native_build.source_hash(src, "other recipe") != h1
    kernel = next((src / "src" / "kernels").glob("*.hip"))
    kernel.write_text(kernel.read_text() + "\n// changed\n")
    assert native_build.source_hash(src, "recipe") != h1


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


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build a stand-in library")
def test_loading_lets_other_threads_run(tmp_path):
    """The dynamic linker's work (for the GPU library: cuBLAS and the GPU
    runtime, hundreds of MB) runs with the GIL released, so the weights are
    read meanwhile: a stand-in whose loading takes 1 s must not stall a
    spinning thread for that long (cffi's own dlopen would)."""
    pytest.importorskip("cffi")
    c = tmp_path / "slow.c"
    c.write_text("#include <unistd.h>\n"
                 "__attribute__((constructor)) static void slow(void) { usleep(1000000); }\n"
                 "int lc0rocm_abi_version(void) { return 99; }\n")
    so = tmp_path / "libslow.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(c)], check=True)
    longest, stop = [0.0], threading.Event()

    def spin():
        last = time.perf_counter()
        while not stop.is_set():
            now = time.perf_counter()
            longest[0] = max(longest[0], now - last)
            last = now

    spinner = threading.Thread(target=spin)
    spinner.start()
    started = time.perf_counter()
    try:
        with pytest.raises(NativeError, match="ABI version 99"):
            native.load_library(so)
    finally:
        stop.set()
        spinner.join()
    assert time.perf_counter() - started >= 1.0           # the constructor ran
    assert longest[0] < 0.5, f"the loading held the GIL for {longest[0]:.2f} s"


# ---------------------------------------------------------------- tensors
def test_maia_tensors_names_and_shapes(maia_path):
    t = native_tensors.named_tensors(load_weights(maia_path))
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
    t = native_tensors.named_tensors(w)
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
    policy, wdl = emulate_resnet(native_tensors.named_tensors(w), masks, values)
    ref_policy, ref_wdl, _ = backends.create("cpu", w).forward_packed(masks, values)
    np.testing.assert_allclose(policy, ref_policy, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wdl, ref_wdl, rtol=1e-4, atol=1e-5)


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
    monkeypatch.setattr(native_build, "_cuda_roots", lambda nvcc: [cuda])
    fake_tool(bare_env, "nvidia-smi", "echo 9.0\n")
    monkeypatch.setenv("PATH", f"{cuda / 'bin'}:{bare_env}")
    assert native.is_available("cuda-auto") == (True, "")
    assert not native.is_available("rocm-auto")[0]
    assert backends.resolve("auto") == "cuda-auto"


def test_conv_body_with_attention_policy_gets_head_tensors(make_test_net):
    t = native_tensors.named_tensors(load_weights(make_test_net("tiny-resnet-attnpolicy")))
    assert "resnet.input.w" in t and "resnet.value_ip2.w" in t
    assert not any(k.startswith("resnet.policy") for k in t)
    assert {"policy_head.ip_pol_w", "policy_head.ip2_pol_w", "policy_head.ip3_pol_w",
            "policy_head.ip4_pol_w", "map.attention_policy_gather", "meta.pol_headcount"} <= set(t)
