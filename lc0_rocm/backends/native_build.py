"""Building the native GPU library: the toolchain (hipcc -> AMD, nvcc ->
NVIDIA) and the GPU architecture found, native/ compiled into a per-user
cache (`~/.cache/lc0-rocm/native/<source hash>-<arch>/`), whole libraries
recorded and checked before use. `backends.native` loads what this builds.

Environment overrides: LC0ROCM_TOOLCHAIN (hip|cuda), LC0ROCM_GPU_ARCH
(gfx90a, sm_90, ...), LC0ROCM_BUILD_CACHE (the build folder; LC0ROCM_CACHE_DIR
is its former name), LC0ROCM_NATIVE_SRC.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import shutil
import subprocess
import sys
import threading
from typing import Callable

from lc0_rocm import buildcache
from lc0_rocm.buildcache import cache_root
from lc0_rocm.backends.base import BackendError
from lc0_rocm.progress import Progress

VENDOR_OF_PREFIX = {"rocm": "amd", "cuda": "nvidia"}
VENDOR_LABEL = {"amd": "AMD", "nvidia": "NVIDIA"}
CXX_STD = "-std=c++17"


class NativeError(BackendError):
    """The native GPU library cannot be built, loaded or run."""


class NoGpuError(NativeError):
    """No GPU here. `probes` maps each vendor looked for to what its probe
    answered ("nvidia-smi not found", "rocm_agent_enumerator lists none")."""

    def __init__(self, probes: dict[str, str]):
        if len(probes) == 1:
            [(vendor, probe)] = probes.items()
            message = f"no {VENDOR_LABEL[vendor]} GPU found ({probe})"
        else:
            message = "no GPU found (" + "; ".join(f"{VENDOR_LABEL[v]}: {probe}"
                                                   for v, probe in probes.items()) + ")"
        super().__init__(message)
        self.probes = probes


# ---------------------------------------------------------------- names
def split_name(name: str) -> tuple[str, str]:
    """'rocm-fp16' -> ('amd', 'fp16'); precision is 'fp32', 'fp16' or 'auto'."""
    prefix, _, precision = name.partition("-")
    if prefix not in VENDOR_OF_PREFIX or precision not in ("", "fp16", "auto"):
        raise NativeError(f"not a native backend name: {name!r}")
    return VENDOR_OF_PREFIX[prefix], precision or "fp32"


# ---------------------------------------------------------------- sources
def source_dir() -> pathlib.Path:
    """native/ next to the package (a checkout), or the packaged copy."""
    found, looked = buildcache.find_sources("LC0ROCM_NATIVE_SRC", (), "include/lc0rocm.h")
    if found is None:
        raise NativeError("native sources not found (looked in " + ", ".join(str(c) for c in looked) + ")")
    return found


def source_files(src: pathlib.Path) -> list[pathlib.Path]:
    """Every translation unit: src/**/*.cpp and src/**/*.hip."""
    files = sorted(p for p in (src / "src").rglob("*") if p.suffix in (".cpp", ".hip"))
    if not files:
        raise NativeError(f"no .cpp/.hip files under {src / 'src'}")
    return files


def source_hash(src: pathlib.Path, extra: str = "") -> str:
    """Hash of every source and header (path + content) and the build recipe;
    the chess core (native/core, a library of its own) and the benchmark
    programs (native/bench) are left out."""
    return buildcache.source_hash(src, extra, skip_dirs=("core", "bench"))


def cdef_text(src: pathlib.Path | None = None) -> str:
    """The C declarations between the CDEF markers of lc0rocm.h."""
    header = ((src or source_dir()) / "include" / "lc0rocm.h").read_text()
    block = buildcache.cdef_block(header, "LC0ROCM_CDEF")
    if block is None:
        raise NativeError("lc0rocm.h has no LC0ROCM_CDEF_BEGIN/END block")
    return block


# ---------------------------------------------------------------- toolchain
@dataclasses.dataclass(frozen=True)
class Toolchain:
    vendor: str          # "amd" | "nvidia"
    compiler: str        # path of hipcc / nvcc
    include_dirs: tuple[str, ...] = ()
    library_dirs: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()   # linker -l arguments
    env: tuple[tuple[str, str], ...] = ()   # set for every compiler run

    def run_env(self) -> dict[str, str]:
        return {**os.environ, **dict(self.env)}


def _which(name: str, extra_dirs=()) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in extra_dirs:
        p = pathlib.Path(d) / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def _cuda_roots(nvcc: str) -> list[pathlib.Path]:
    roots = [pathlib.Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    real = pathlib.Path(nvcc).resolve()
    roots += [real.parent.parent, pathlib.Path("/usr/local/cuda")]
    # pip's nvidia-* wheels (PyTorch's cuBLAS): site-packages/nvidia/cu13, nvidia/cublas, ...
    try:
        import nvidia  # type: ignore[import-not-found]
        for base in getattr(nvidia, "__path__", []):
            roots += sorted(pathlib.Path(base).glob("*"))
    except ImportError:
        pass
    return roots


def _link_argument(libdir: pathlib.Path, name: str) -> str | None:
    """-l argument for lib<name>.so in libdir (or its first versioned file)."""
    if (libdir / f"lib{name}.so").exists():
        return f"-l{name}"
    versioned = sorted(libdir.glob(f"lib{name}.so.*"))
    return f"-l:{versioned[0].name}" if versioned else None


def find_cublas(nvcc: str) -> tuple[str, str, tuple[str, str]]:
    """(include dir, library dir, -l arguments of cuBLAS and cuBLASLt), or
    NativeError."""
    for root in _cuda_roots(nvcc):
        inc = root / "include"
        if not (inc / "cublas_v2.h").is_file():
            inc = root / "targets" / "x86_64-linux" / "include"
            if not (inc / "cublas_v2.h").is_file():
                continue
        for libdir in (root / "lib64", root / "lib", root / "targets" / "x86_64-linux" / "lib"):
            blas, lt = _link_argument(libdir, "cublas"), _link_argument(libdir, "cublasLt")
            if blas and lt:
                return str(inc), str(libdir), (blas, lt)
    raise NativeError("cuBLAS not found (need cublas_v2.h, libcublas.so and libcublasLt.so under "
                      "CUDA_HOME, /usr/local/cuda or a pip nvidia-cublas package)")


def find_hipblas(hipcc: str, rocm: str) -> str:
    """Include folder holding hipblas/hipblas.h, or NativeError."""
    roots = [pathlib.Path(rocm), pathlib.Path(hipcc).resolve().parent.parent, pathlib.Path("/usr")]
    for root in roots:
        if (root / "include" / "hipblas" / "hipblas.h").is_file():
            return str(root / "include")
    raise NativeError("hipBLAS not found (need include/hipblas/hipblas.h under $ROCM_PATH, "
                      "/opt/rocm or /usr: install hipblas-dev / the ROCm hipBLAS package)")


VENDOR_NAMES = {"amd": "AMD (hipcc + hipBLAS)", "nvidia": "NVIDIA (nvcc + cuBLAS)"}
ARCH_HINT = "give --arch (e.g. gfx90a, sm_90) or set LC0ROCM_GPU_ARCH to build for a GPU that is not here"


def _toolchain_for(vendor: str) -> Toolchain:
    """The complete toolchain (compiler and BLAS) of one vendor, or NativeError."""
    if vendor == "amd":
        rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
        hipcc = _which("hipcc", [f"{rocm}/bin"])
        if not hipcc:
            raise NativeError("hipcc not found (PATH, $ROCM_PATH/bin)")
        include = find_hipblas(hipcc, rocm)
        # HIP_PLATFORM=amd: Debian's hipcc otherwise hands the build to nvcc
        # when one is installed ("nvcc fatal: Value 'hip' is not defined for option 'x'").
        return Toolchain("amd", hipcc, (include,), (f"{rocm}/lib",), ("-lhipblas",),
                         (("HIP_PLATFORM", "amd"),))
    nvcc = _which("nvcc", ["/usr/local/cuda/bin"])
    if not nvcc:
        raise NativeError("nvcc not found (PATH, /usr/local/cuda/bin)")
    inc, libdir, libs = find_cublas(nvcc)
    return Toolchain("nvidia", nvcc, (inc,), (libdir,), libs)


def _wanted_vendors(vendor: str | None, arch: str | None = None) -> tuple[str, ...]:
    """The vendor asked for (argument, LC0ROCM_TOOLCHAIN, or implied by an
    architecture name: gfx* is AMD, sm_* NVIDIA), else both."""
    want = vendor or os.environ.get("LC0ROCM_TOOLCHAIN", "").replace("hip", "amd").replace("cuda", "nvidia")
    if not want and arch:
        want = "amd" if arch.startswith("gfx") else "nvidia" if arch.startswith("sm_") else ""
    return (want,) if want else ("amd", "nvidia")


def detect_toolchain(vendor: str | None = None) -> Toolchain:
    """The toolchain for `vendor` ("amd"/"nvidia"), or the first complete one
    (compiler and BLAS) of all; NativeError with every toolchain's reason."""
    reasons = []
    for v in _wanted_vendors(vendor):
        try:
            return _toolchain_for(v)
        except NativeError as e:
            reasons.append(str(e))
    raise NativeError(f"no GPU toolchain: {'; '.join(reasons)}")


def detect_target(vendor: str | None = None, arch: str | None = None) -> tuple[Toolchain, str]:
    """(toolchain, GPU architecture) to build for: each vendor in turn (or
    the one asked for) until one has a GPU (or `arch` is given) and its
    toolchain (compiler and BLAS). NativeError otherwise: "no GPU found"
    with what each vendor's probe said, or the missing toolchain's reason."""
    no_gpu: dict[str, str] = {}
    no_toolchain: list[str] = []
    for v in _wanted_vendors(vendor, arch):
        try:
            target_arch = arch or detect_arch(v)
        except NoGpuError as e:   # no GPU: its toolchain does not matter
            no_gpu.update(e.probes)
            continue
        try:
            return _toolchain_for(v), target_arch
        except NativeError as e:
            no_toolchain.append(f"no GPU toolchain for {VENDOR_NAMES[v]}: {e}")
    if no_toolchain:
        raise NativeError("; ".join(no_toolchain))
    raise NoGpuError(no_gpu)


def _run(cmd: list[str], timeout: float = 20) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout if out.returncode == 0 else ""


# A GPU probe's answer by command and tool (its path and modification
# time): the GPUs do not change while a process runs, and nvidia-smi takes
# 0.03 s a run on an H100 host, paid again wherever `auto` is resolved. A
# probe that answered nothing is asked again next time.
_PROBED: dict[tuple, str] = {}


def _probe(cmd: list[str]) -> str:
    try:
        stamp = os.stat(cmd[0]).st_mtime_ns
    except OSError:
        stamp = None
    key = (tuple(cmd), stamp)
    if key not in _PROBED:
        answer = _run(cmd)
        if not answer:
            return answer
        _PROBED[key] = answer
    return _PROBED[key]


def detect_arch(vendor: str) -> str:
    """GPU architecture ("gfx90a", "sm_90") of device 0, or NativeError."""
    env = os.environ.get("LC0ROCM_GPU_ARCH")
    if env:
        return env
    if vendor == "amd":
        rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
        tool = _which("rocm_agent_enumerator", [f"{rocm}/bin"])
        if tool:
            archs = [a for a in _probe([tool]).split() if a.startswith("gfx") and a != "gfx000"]
            if archs:
                return archs[0]
        looked = ["rocm_agent_enumerator lists none" if tool else
                  "rocm_agent_enumerator not found"]
        try:  # hip-python, when installed
            from hip import hip  # type: ignore[import-not-found]
            props = hip.hipDeviceProp_t()
            if hip.hipGetDeviceProperties(props, 0)[0] == hip.hipError_t.hipSuccess:
                return props.gcnArchName.decode().split(":")[0]
            looked.append("hip-python lists none")
        except Exception:  # noqa: BLE001 - any failure means "not found this way"
            pass
        raise NoGpuError({"amd": ", ".join(looked)})
    smi = _which("nvidia-smi")
    if smi:
        caps = _probe([smi, "--query-gpu=compute_cap", "--format=csv,noheader"]).split()
        if caps:
            major, _, minor = caps[0].partition(".")
            return f"sm_{major}{minor or '0'}"
    raise NoGpuError({"nvidia": "nvidia-smi lists none" if smi else "nvidia-smi not found"})


# ---------------------------------------------------------------- build
def nvidia_arch_flags(arch: str) -> list[str]:
    """nvcc's target flags. sm_90 (H100, H200) builds as sm_90a, whose
    warpgroup products (wgmma) the library's own GEMM uses
    (native/src/kernels/gemm_sm90.hip); LC0ROCM_SM90A tells the code so.
    Its machine code only: nvcc 13's -arch=sm_90a also compiles every file
    a second time to embed compute_90 PTX, a quarter of the build's time for
    code a library built for this GPU never runs."""
    if arch == "sm_90":
        return ["-gencode", "arch=compute_90a,code=sm_90a", "-DLC0ROCM_SM90A"]
    return [f"-arch={arch}"]


def compile_command(tc: Toolchain, arch: str, src: pathlib.Path, source: pathlib.Path,
                    obj: pathlib.Path) -> list[str]:
    incs = [f"-I{d}" for d in tc.include_dirs]
    if tc.vendor == "nvidia":
        return [tc.compiler, "-x", "cu", *nvidia_arch_flags(arch), CXX_STD, "-O3", "-Xcompiler", "-fPIC",
                *incs, "-c", str(source), "-o", str(obj)]
    return [tc.compiler, "-x", "hip", f"--offload-arch={arch}", CXX_STD, "-O3", "-fPIC",
            *incs, "-c", str(source), "-o", str(obj)]


def link_command(tc: Toolchain, objs: list[pathlib.Path], out: pathlib.Path) -> list[str]:
    libdirs = [f"-L{d}" for d in tc.library_dirs]
    rpaths = [f"-Wl,-rpath,{d}" for d in tc.library_dirs]
    if tc.vendor == "nvidia":
        rpaths = [f"-Xlinker=-rpath,{d}" for d in tc.library_dirs]
    return [tc.compiler, "-shared", "-o", str(out), *map(str, objs), *libdirs, *rpaths,
            *tc.libraries]


# _target's answers in this process, by vendor, architecture and the
# environment that finds the tools, sources and cache: a command looks for
# its library several times (counting GPUs, preparing, creating), and each
# look hashed the sources again (0.12-0.18 s on an H100 host beside the
# command's imports). The lock makes a second look wait for the first.
_TARGETS: dict[tuple, tuple] = {}
_TARGETS_LOCK = threading.Lock()
_TARGET_ENV = ("PATH", "ROCM_PATH", "CUDA_HOME", "CUDA_PATH", "HIP_PLATFORM")


def _target(vendor: str | None, arch: str | None) -> tuple[Toolchain, str, pathlib.Path, pathlib.Path]:
    """(toolchain, architecture, sources, the library's path in the cache)."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k in _TARGET_ENV or k.startswith("LC0ROCM_")))
    key = (vendor, arch, env)
    with _TARGETS_LOCK:
        if key not in _TARGETS:
            tc, found_arch = detect_target(vendor, arch)
            src = source_dir()
            recipe = f"{tc.vendor}|{tc.compiler}|{found_arch}|{CXX_STD}|{tc.include_dirs}|{tc.libraries}"
            _TARGETS[key] = (tc, found_arch, src,
                             cache_root() / f"{source_hash(src, recipe)}-{found_arch}" / "liblc0rocm.so")
        return _TARGETS[key]


def cached_library(vendor: str | None = None, arch: str | None = None) -> pathlib.Path | None:
    """The library build() would return when it is whole in the cache; None
    when build() would have to compile it (or repair it)."""
    lib = _target(vendor, arch)[3]
    return lib if lib.is_file() and buildcache.verify(lib) is None else None


def build(vendor: str | None = None, arch: str | None = None, force: bool = False,
          verbose: bool = False,
          on_progress: Callable[[buildcache.BuildProgress], None] | None = None) -> pathlib.Path:
    """Compile the library (or find it, whole, in the cache) and return its
    path. Progress goes to `on_progress` (file n of N, at least every 5 s),
    else to stderr."""
    tc, arch, src, lib = _target(vendor, arch)
    target_dir = lib.parent
    if not force and _usable(lib):
        return lib
    with buildcache.build_lock(target_dir.with_name(target_dir.name + ".lock")):
        if not force and _usable(lib, quiet=True):   # another process built it meanwhile
            return lib
        if force:
            buildcache.discard_objects(lib)
        with buildcache.build_folder(target_dir.parent, ".build-") as tmp:
            files = source_files(src)
            out = tmp / "liblc0rocm.so"
            what = f"building the native library for {arch} (once)"
            with Progress(what, len(files) + 1, unit="file") as progress:
                shown = [0]   # files the bar has counted

                def report(p: buildcache.BuildProgress) -> None:
                    if on_progress is not None:
                        on_progress(p)
                        return
                    progress.advance(p.done - shown[0])
                    shown[0] = p.done
                    progress.phase(f"{p.current} ({p.done}/{p.total}, {p.elapsed_s:.0f} s)")
                if on_progress is None:
                    progress.phase(f"compiling {len(files)} files with {tc.compiler}")
                try:
                    objs = buildcache.compile_kept(files, src, lambda f, o: compile_command(tc, arch, src, f, o),
                                                   lib, what, env=tc.run_env(), verbose=verbose, on_progress=report)
                    if on_progress is None:
                        progress.phase("linking")
                    if verbose:
                        print(" ".join(link_command(tc, objs, out)), file=sys.stderr)
                    buildcache.run_commands([(link_command(tc, objs, out), "linking the native library")], what,
                                            env=tc.run_env())
                except buildcache.BuildError as e:
                    raise NativeError(str(e)) from None
                progress.advance()
            buildcache.install(out, lib)
            buildcache.discard_objects(lib)
    return lib


def _usable(lib: pathlib.Path, quiet: bool = False) -> bool:
    return buildcache.usable(lib, "GPU library", "lc0rocm_abi_version", quiet)


# ---------------------------------------------------------------- command
def build_main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="lc0-rocm build-native",
                                     description="compile the native GPU library into the user cache")
    parser.add_argument("--vendor", choices=["amd", "nvidia"], help="toolchain (default: detect)")
    parser.add_argument("--arch", help="GPU architecture, e.g. gfx90a or sm_90 (default: detect)")
    parser.add_argument("--force", action="store_true", help="rebuild even when cached")
    parser.add_argument("--verbose", action="store_true", help="print compiler commands")
    args = parser.parse_args(argv)
    try:
        path = build(args.vendor, args.arch, force=args.force, verbose=args.verbose)
    except NativeError as e:
        hint = f"; {ARCH_HINT}" if isinstance(e, NoGpuError) else ""
        print(f"lc0-rocm build-native: {e}{hint}", file=sys.stderr)
        return 1
    print(path)
    return 0
