"""GPU backends `rocm`, `rocm-fp16`, `rocm-auto`, `cuda`, `cuda-fp16`, `cuda-auto`.

The only Python user of cffi. It has native_build.py build the library
(toolchain, architecture, the per-user cache), loads it with cffi, hands it
the net as named float32 tensors and runs forward passes.

The net goes to the library as named tensors (native_tensors.py) and its
settings as the backend options below (OPTIONS), in lc0rocm_config.
"""
from __future__ import annotations

import os
import pathlib
import re
import threading

import numpy as np

from lc0_rocm import host
from lc0_rocm._proto import net_pb2
from lc0_rocm.backends.base import (Backend, BackendAttributes, NativeSlot, checked_outputs,
                                    checked_packed, checked_planes, empty_outputs, slot_leaves)
from lc0_rocm.backends.native_build import (NativeError, build, cached_library, cdef_text,
                                            detect_target, split_name)
from lc0_rocm.backends.options import BackendOption, BackendOptionsError, read_options
from lc0_rocm.netspec import NetSpec
from lc0_rocm.sizes import NUM_PLANES
from lc0_rocm.weights.tree import Linear16Layer

NF = net_pb2.NetworkFormat
DEFAULT_MAX_BATCH = 1024


# ---------------------------------------------------------------- loading
_LOADED: dict[str, tuple] = {}
_LOAD_LOCK = threading.Lock()
_LIBC = None                # the C library's dlopen through cffi (see _link_without_gil)


def load_library(path: str | os.PathLike, src: pathlib.Path | None = None):
    """(ffi, lib) for a built library, checking its ABI version."""
    import cffi

    path = str(path)
    with _LOAD_LOCK:
        if path in _LOADED:
            return _LOADED[path]
        _link_without_gil(path)
        ffi = cffi.FFI()
        ffi.cdef(cdef_text(src))
        try:
            lib = ffi.dlopen(path)
        except OSError as e:
            raise NativeError(f"cannot load the native library {path}: {e}") from None
        want = int(lib.LC0ROCM_ABI_VERSION)
        have = lib.lc0rocm_abi_version()
        if have != want:
            raise NativeError(f"{path}: ABI version {have}, this package needs {want}; "
                              "rebuild with `lc0-rocm build-native --force`")
        _LOADED[path] = (ffi, lib)
        return ffi, lib


def _link_without_gil(path: str) -> None:
    """Have the dynamic linker load `path` (and the GPU runtime's libraries
    it needs, hundreds of MB) through a C call, which cffi makes with the
    GIL released; cffi's own dlopen holds the GIL throughout, stalling the
    threads that read the weights meanwhile (load_network prepares the
    backend beside them). The dlopen after this one finds the library
    loaded. Failing here is left to that dlopen to report."""
    import cffi
    global _LIBC
    if _LIBC is None:
        ffi = cffi.FFI()
        ffi.cdef("void *dlopen(const char *file, int mode);")
        _LIBC = ffi.dlopen(None)
    _LIBC.dlopen(os.fsencode(path), os.RTLD_NOW)


def check(ffi, lib, status: int, what: str) -> None:
    if status != 0:
        message = ffi.string(lib.lc0rocm_last_error()).decode(errors="replace")
        raise NativeError(f"{what}: {message or 'status ' + str(status)}")


def device_info(ffi, lib, device: int = 0) -> dict:
    info = ffi.new("lc0rocm_device_info*")
    check(ffi, lib, lib.lc0rocm_get_device_info(device, info), "device info")
    return {
        "name": ffi.string(info.name).decode(), "arch": ffi.string(info.arch).decode(),
        "vendor": {1: "amd", 2: "nvidia"}.get(info.vendor, "?"), "warp_size": info.warp_size,
        "multiprocessors": info.multiprocessors, "fast_fp16": bool(info.fast_fp16),
        "total_memory": int(info.total_memory),
    }


# ---------------------------------------------------------------- format
# ---------------------------------------------------------------- backend
def is_available(name: str) -> tuple[bool, str]:
    """Toolchain and GPU present? (Does not compile anything.)"""
    try:
        vendor, _ = split_name(name)
        detect_target(vendor)
    except NativeError as e:
        return False, f"{name}: {e}"
    return True, ""


# ---------------------------------------------------------------- options
def path_bits(src: pathlib.Path | None = None) -> dict[str, tuple[int, bool]]:
    """The kernel paths the library knows, from lc0rocm.h's LC0ROCM_PATH_*
    enumeration: name (lower case) -> (bit, whether force= takes it)."""
    text = cdef_text(src)
    bits = {m.group(1).lower(): 1 << int(m.group(2))
            for m in re.finditer(r"LC0ROCM_PATH_(\w+) = 1 << (\d+)", text)}
    forceable = re.search(r"LC0ROCM_FORCEABLE_PATHS = ([^}]*)}", text).group(1)
    forced = {m.lower() for m in re.findall(r"LC0ROCM_PATH_(\w+)", forceable)}
    return {name: (bit, name in forced) for name, bit in bits.items()}


def _path_names() -> tuple[str, ...]:
    return tuple(path_bits())


def _forceable_names() -> tuple[str, ...]:
    return tuple(name for name, (_, forceable) in path_bits().items() if forceable)


# Every key create() reads (lc0's backend-options syntax: backends/options.py);
# the settings are carried to the library in lc0rocm_config and read once
# when the network is created. Where a default was measured, it says where.
OPTIONS = {
    "gpu": BackendOption("device index (lc0's key)", None, "int", minimum=0),
    "device": BackendOption("the same as gpu", None, "int", minimum=0),
    "max_batch": BackendOption("positions per GPU pass; larger calls are split", DEFAULT_MAX_BATCH, "int", 1, 65536),
    "arch": BackendOption("GPU architecture to build for, e.g. gfx90a or sm_90 (default: the GPU's)"),
    "graphs": BackendOption("capture each batch size's pass into a graph on its second run and replay it", True,
                            "bool"),
    "gemm_tune": BackendOption("run large half products on the algorithm that timed fastest for their shape "
                               "class (NVIDIA; ~0.1 s the first pass of each power-of-two class of batch sizes, "
                               "once per network, paid by warm_up() before a search; native/docs/GEMM_TUNER.md)",
                               True, "bool"),
    "half_sums": BackendOption("let the sm_90 products of half nets sum in half, as lc0's cuda backend's "
                               "cublasHgemm (H200 +0.6..+1.4 % at b256-512, policy error 2.2-2.6x, within the "
                               "fp16 bound; native/docs/GEMM_SM90.md); false: in float", True, "bool"),
    "side_stream": BackendOption("run independent branches of a pass on a second stream (native/docs/"
                                 "SIDE_LANE.md)", True, "bool"),
    "dependent_launch": BackendOption("launch kernels as programmatic dependent launches (NVIDIA sm_90+): where "
                                      "the plan measured a gain (auto), always or never", "auto", "choice",
                                      choices=("auto", "on", "off")),
    # A copy on the stream is a step of its own, with a copy's latency before
    # and after a pass of ~75 us (maia-1900 on an H100: b1 +12 % mean, 10
    # rounds of 11 in turns faster; t82 even; b4-16 lost up to 12 %).
    "mapped_io": BackendOption("passes of up to this many positions read their input from and write their "
                               "outputs to pinned host memory in place, with no copies; 0: never", 1, "int",
                               0, 65536),
    "disable": BackendOption("kernel paths to keep off, to compare (native/README.md lists them)",
                             frozenset(), "names", choices=_path_names),
    "force": BackendOption("kernel paths to take at every batch size or width they fit, to compare",
                           frozenset(), "names", choices=_forceable_names),
}
DEPENDENT_LAUNCH = {"auto": -1, "on": 1, "off": 0}


def device_index(name: str, values: dict) -> int:
    """The device of `gpu=N` (lc0's key) or `device=N`, default 0."""
    given = {values[k] for k in ("gpu", "device") if values.get(k) is not None}
    if len(given) > 1:
        raise NativeError(f"{name}: gpu and device disagree ({values['gpu']} and {values['device']})")
    return given.pop() if given else 0


def read_settings(name: str, options: dict) -> dict:
    """OPTIONS' values from one level of an options tree (read_options),
    with a path both disabled and forced an error too."""
    values = read_options(name, OPTIONS, options)
    both = values["disable"] & values["force"]
    if both:
        raise BackendOptionsError(f"{name}: {', '.join(sorted(both))} both disabled and forced")
    return values


def fill_settings(cfg, values: dict) -> None:
    """lc0rocm_config's settings from read_settings' values."""
    bits = path_bits()
    cfg.graphs, cfg.gemm_tune = int(values["graphs"]), int(values["gemm_tune"])
    cfg.half_sums, cfg.side_stream = int(values["half_sums"]), int(values["side_stream"])
    cfg.dependent_launch = DEPENDENT_LAUNCH[values["dependent_launch"]]
    cfg.mapped_io = values["mapped_io"]
    cfg.disabled = sum(bits[n][0] for n in values["disable"])
    cfg.forced = sum(bits[n][0] for n in values["force"])


def check_device(name: str, device: int, count: int) -> None:
    if not 0 <= device < count:
        present = f"devices 0..{count - 1}" if count else "no device"
        raise NativeError(f"{name}: gpu={device} does not exist ({count} GPU(s) present: {present})")


# Big layers may come in the file's LINEAR16 encoding: the library decodes
# them as it uploads them (native/src/tensor/linear16.h).
TAKES_LINEAR16 = True

# Runtimes that prepare() set up, each taken by the next create() of its key.
_READY: dict[tuple, tuple] = {}
_READY_LOCK = threading.Lock()


def _runtime(name: str, vendor: str, values: dict, device: int, library=None) -> tuple:
    """(ffi, lib, device info): the library (`library`, else found in the
    cache or built) loaded, the GPU runtime started, the device checked."""
    ffi, lib = load_library(library or build(vendor, values["arch"]))
    count = ffi.new("int*")
    check(ffi, lib, lib.lc0rocm_get_device_count(count), f"{name}: device count")
    check_device(name, device, count[0])
    return ffi, lib, device_info(ffi, lib, device)


def prepare(name: str, **options) -> None:
    """What create() does before it needs the weights (probing the GPU,
    checking the cached library, starting the GPU runtime: about a second),
    done now, so that load_network can do it while it reads the weights;
    the next create() with the same name and options takes the result. A
    failure here is left for create() to raise. A library not yet built is
    left to create() too: a first build takes minutes, shows its progress
    and stops on Ctrl-C, which a background thread would not."""
    vendor, _ = split_name(name)
    values = read_settings(name, options)
    device = device_index(name, values)
    library = cached_library(vendor, values["arch"])
    if library is None:
        return
    runtime = _runtime(name, vendor, values, device, library)
    with _READY_LOCK:
        _READY[(vendor, values["arch"], device)] = runtime


def create(name: str, weights, **options) -> Backend:
    vendor, precision = split_name(name)
    values = read_settings(name, options)
    device = device_index(name, values)
    with _READY_LOCK:
        runtime = _READY.pop((vendor, values["arch"], device), None)
    ffi, lib, info = runtime or _runtime(name, vendor, values, device)
    fp16 = precision == "fp16" or (precision == "auto" and info["fast_fp16"])
    return NativeBackend(name, ffi, lib, weights, device=device, fp16=fp16, info=info, settings=values)


# Threads 0 on one GPU, a stream each (docs/history/benchmarks-2026-12.md, H200 2026-12-03,
# positions 1-2 x 2 s): two where the passes keep the GPU busy (t82 39,381 /
# 39,394 nps with 2 against 32,220-37,422 with 3; bt4 21,391 / 23,807
# against 14,279-21,954), three for small convolution nets whose search is
# bound by the host's cores (maia-1900 426,919 / 222,226 with 2 against
# 447,390-465,791 / 257,611-268,355 with 3), and five of them where the
# host has 15 cores or more (H100, 16 cores, 2026-12-06: +5..+21 % over 3 in
# four rounds, with ThreadIdlingThreshold's automatic -1; a third of the
# cores otherwise, never under 3: each search thread brings task workers
# too). MinibatchSize 0: lc0's cuda
# backend suggests 2 x the multiprocessors, its generic 256 where that is
# unknown.
# No half product of a pass under this many positions is timed (kTuneMinMacs
# in native/src/tensor/gemm_tuner.cpp: t82's first timed product is from
# batch 32).
TUNED_FROM = 32
SEARCH_THREADS = 2
SEARCH_THREADS_SMALL_NET = 5
SEARCH_THREADS_SMALL_NET_MIN = 3
SMALL_NET_FILTERS = 128     # residual bodies up to this width count as small
BATCH_PER_MULTIPROCESSOR = 2
FALLBACK_BATCH = 256


def warm_up_sizes(largest: int, max_batch: int) -> list[int]:
    """The passes NativeBackend.warm_up runs: each power of two from
    TUNED_FROM whose class (the sizes above the power below it) holds a
    batch of up to `largest` positions, the last capped at max_batch."""
    limit = min(max(1, int(largest)), max_batch)
    sizes, size = [], TUNED_FROM
    while size // 2 < limit:
        sizes.append(min(size, max_batch))
        size *= 2
    return sizes


def padded_size(n: int, max_batch: int) -> int:
    """The size a pass of n positions runs at with graphs on: the GPU
    library's Stream::padded_size (native/src/network.cpp) rounds n over 8
    up to a multiple of 8 up to 64, of 16 up to 256, of 32 beyond, at most
    max_batch, and runs it through a graph of that size. A call of more
    than max_batch positions runs as passes of max_batch."""
    n = min(n, max_batch)
    if n <= 8:
        return n
    step = 8 if n <= 64 else 16 if n <= 256 else 32
    return min((n + step - 1) // step * step, max_batch)


def graph_sizes(largest: int, max_batch: int) -> list[int]:
    """The sizes passes of 1..largest positions run at through graphs (one
    graph each per stream)."""
    limit = min(max(0, int(largest)), max_batch)
    return sorted({padded_size(n, max_batch) for n in range(1, limit + 1)})


def search_threads_for(spec: NetSpec | None, cores: int | None = None) -> int:
    """Threads 0's search threads on one GPU for a net (see SEARCH_THREADS);
    a small net's count follows the host's `cores` (default: this one's)."""
    small = spec is not None and spec.body == "resnet" and 0 < spec.filters <= SMALL_NET_FILTERS
    if not small:
        return SEARCH_THREADS
    cores = cores if cores is not None else host.usable_cores()
    return min(SEARCH_THREADS_SMALL_NET, max(SEARCH_THREADS_SMALL_NET_MIN, cores // 3))


def gpu_attributes(info: dict, max_batch: int, spec: NetSpec | None = None) -> BackendAttributes:
    """A GPU backend's attributes from its device_info, max_batch and net."""
    multiprocessors = int(info.get("multiprocessors") or 0)
    return BackendAttributes(
        runs_on_cpu=False, suggested_num_search_threads=search_threads_for(spec),
        recommended_batch_size=BATCH_PER_MULTIPROCESSOR * multiprocessors or FALLBACK_BATCH,
        maximum_batch_size=max_batch)


class NativeBackend(Backend):
    """One net on one GPU. Thread-safe: each calling thread borrows its own
    native stream from a pool, so forward passes from several threads run
    concurrently on the GPU (no lock around the forward pass)."""

    def __init__(self, name, ffi, lib, weights, *, device, fp16, info, settings):
        self.name = name
        self.ffi, self.lib = ffi, lib
        # close() also runs from __del__, possibly inside a cffi call that
        # holds the ffi's lock: resolve what it calls now, not then.
        self._destroy_stream, self._destroy_net = lib.lc0rocm_stream_destroy, lib.lc0rocm_destroy
        self.device_info = info
        self.fp16 = fp16
        self.max_batch = max_batch = settings["max_batch"]
        self._gemm_tune, self._graphs = bool(settings["gemm_tune"]), bool(settings["graphs"])
        self._warmed: set[int] = set()                 # warm_up's tuning passes run
        self._warmed_streams: dict[int, int] = {}      # stream -> the largest graph size warmed on it
        self.has_moves_left = weights.format.moves_left == NF.MOVES_LEFT_V1
        fmt = weights.format
        self.spec = spec = NetSpec.from_weights(weights)   # the activations DEFAULT leaves implicit
        cfg = ffi.new("lc0rocm_config*")
        cfg.device, cfg.precision, cfg.max_batch = device, 1 if fp16 else 0, max_batch
        cfg.network, cfg.policy = fmt.network, fmt.policy or NF.POLICY_CLASSICAL
        cfg.value = fmt.value or NF.VALUE_CLASSICAL
        cfg.moves_left, cfg.input_embedding = fmt.moves_left, fmt.input_embedding
        cfg.default_activation, cfg.ffn_activation = spec.default_activation, spec.ffn_activation
        cfg.smolgen_activation = spec.smolgen_activation
        fill_settings(cfg, settings)

        from lc0_rocm.backends.native_tensors import named_tensors   # imports this module
        tensors = named_tensors(weights)
        keep = []  # the arrays and names must outlive the create call
        arr = ffi.new("lc0rocm_tensor[]", len(tensors))
        for i, (key, value) in enumerate(tensors.items()):
            cname = ffi.new("char[]", key.encode())
            if isinstance(value, Linear16Layer):
                data, arr[i].dtype = np.ascontiguousarray(value.steps, "<u2"), lib.LC0ROCM_DTYPE_LINEAR16
                arr[i].lo, arr[i].hi = value.lo, value.hi
            else:
                data = np.ascontiguousarray(value)
                if data.dtype not in (np.float32, np.int32):
                    raise NativeError(f"tensor {key}: dtype {data.dtype} is neither float32 nor int32")
                arr[i].dtype = lib.LC0ROCM_DTYPE_I32 if data.dtype == np.int32 else lib.LC0ROCM_DTYPE_F32
            keep += [data, cname]
            arr[i].name, arr[i].data, arr[i].count = cname, ffi.from_buffer(data), data.size
        handle = ffi.new("lc0rocm_net**")
        check(ffi, lib, lib.lc0rocm_create(cfg, arr, len(tensors), handle), f"{name}: create")
        self._net = handle[0]
        self._free: list = []
        self._all: list = []
        # Reentrant: release_slots runs from a search's __del__, which the
        # garbage collector may call inside a pool operation of this thread.
        self._pool_lock = threading.RLock()

    # -- stream pool
    def _take_stream(self):
        with self._pool_lock:
            if self._free:
                return self._free.pop()
        out = self.ffi.new("lc0rocm_stream**")
        check(self.ffi, self.lib, self.lib.lc0rocm_stream_create(self._net, out), f"{self.name}: stream")
        with self._pool_lock:
            self._all.append(out[0])
        return out[0]

    def _give_stream(self, stream):
        with self._pool_lock:
            self._free.append(stream)

    def padded_size(self, n: int) -> int:
        """The batch a pass of n positions runs at: with graphs on, the
        GPU library pads it (padded_size); a caller that picks its calls'
        size fills the rows it pays for by asking."""
        return padded_size(n, self.max_batch) if self._graphs and n > 0 else n

    def release_slots(self, slots) -> None:
        with self._pool_lock:
            streams = {int(self.ffi.cast("uintptr_t", s)): s for s in self._all}
            free = {int(self.ffi.cast("uintptr_t", s)) for s in self._free}
            for slot in slot_leaves(slots):
                if slot.ctx in streams and slot.ctx not in free:
                    self._free.append(streams[slot.ctx])
                    free.add(slot.ctx)

    def attributes(self) -> BackendAttributes:
        return gpu_attributes(self.device_info, self.max_batch, self.spec)

    def native_slots(self, count):
        """`count` slots on streams of their own (lc0rocm_forward with the
        stream as ctx), so native callers run forward passes with no Python
        in between and several at once. The streams stay this backend's:
        close() destroys them."""
        address = int(self.ffi.cast("uintptr_t", self.ffi.addressof(self.lib, "lc0rocm_forward")))
        streams = [self._take_stream() for _ in range(count)]   # never given back: the caller keeps them
        return [NativeSlot(address, int(self.ffi.cast("uintptr_t", s)), self.max_batch) for s in streams]

    def host_empty(self, shape, dtype=np.float32):
        """An uninitialised array in page-locked host memory (from
        lc0rocm_host_alloc): as a forward input or output, it and any slice
        of it move by one DMA with no staging copy. Freed when the array
        (and every view of it) is gone; usable by any backend of this
        library, on any GPU."""
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        block = self.ffi.new("void**")
        check(self.ffi, self.lib, self.lib.lc0rocm_host_alloc(max(1, nbytes), block),
              f"{self.name}: pinned host allocation of {nbytes} bytes")
        owned = self.ffi.gc(block[0], self.lib.lc0rocm_host_free, size=max(1, nbytes))
        return np.frombuffer(self.ffi.buffer(owned, nbytes), dtype).reshape(shape)

    def describe(self, n: int = 1) -> str:
        """How a forward of n positions runs: the paths the network's
        kernels take at the batch size the pass runs at (n padded for
        graphs, at most max_batch), in words. For tests and diagnostics."""
        text = self.ffi.new("char[]", 1024)
        stream = self._take_stream()
        try:
            check(self.ffi, self.lib, self.lib.lc0rocm_stream_describe(stream, int(n), text, 1024),
                  f"{self.name}: describe")
        finally:
            self._give_stream(stream)
        return self.ffi.string(text).decode()

    def pass_log_start(self) -> None:
        """Start timing every forward pass of this net's streams (device
        events around each pass, one timeline), dropping earlier ones."""
        check(self.ffi, self.lib, self.lib.lc0rocm_pass_log_start(self._net), f"{self.name}: pass log")

    def pass_log(self):
        """The passes timed since pass_log_start() (backends.passes.PassLog)."""
        from lc0_rocm.backends.passes import PassLog
        count = self.ffi.new("int*")
        check(self.ffi, self.lib, self.lib.lc0rocm_pass_log_read(self._net, self.ffi.NULL, 0, count),
              f"{self.name}: pass log")
        records = self.ffi.new("lc0rocm_pass[]", max(1, count[0]))
        check(self.ffi, self.lib, self.lib.lc0rocm_pass_log_read(self._net, records, count[0], count),
              f"{self.name}: pass log")
        return PassLog.from_records(records, min(count[0], len(records)))

    def _outputs(self, n):
        # a method, so that the parity checks can hand in NaN-poisoned buffers
        return empty_outputs(n)

    def forward(self, planes):
        planes = checked_planes(planes)
        return self._run(self.lib.lc0rocm_forward_planes, self._outputs(len(planes)), ("float*", planes))

    def forward_packed(self, masks, values):
        masks, values = checked_packed(masks, values)
        return self._run(self.lib.lc0rocm_forward, self._outputs(len(masks)),
                         ("uint64_t*", masks), ("float*", values))

    def forward_into(self, planes, out):
        planes = checked_planes(planes)
        return self._run(self.lib.lc0rocm_forward_planes, checked_outputs(out, len(planes)), ("float*", planes))

    def forward_packed_into(self, masks, values, out):
        masks, values = checked_packed(masks, values)
        return self._run(self.lib.lc0rocm_forward, checked_outputs(out, len(masks)),
                         ("uint64_t*", masks), ("float*", values))

    def _run(self, entry, outputs, *inputs):
        """One native forward call on a pooled stream: inputs are (C type,
        array) pairs; `outputs` (policy, wdl, moves_left) are written in
        place and returned."""
        n = len(outputs[1])
        if n == 0:
            return outputs
        ffi = self.ffi
        pointers = [ffi.cast(ctype, ffi.from_buffer(a)) for ctype, a in inputs]
        pointers += [ffi.cast("float*", ffi.from_buffer(a)) for a in outputs]
        stream = self._take_stream()
        try:
            check(ffi, self.lib, entry(stream, n, *pointers), f"{self.name}: forward")
        finally:
            self._give_stream(stream)
        return outputs

    def warm_up(self, largest: int, slots=()) -> None:
        """Pay the first-use costs of batches of up to `largest` positions
        before a search rather than in its first moves: a pass at each
        power of two from TUNED_FROM that covers them, once per backend
        (the half products' algorithms are timed once per power-of-two
        class and network, ~0.1 s a class on t82: native/docs/GEMM_TUNER.md),
        and on each of `slots` (from native_slots) two passes at each size
        a pass runs at (graph_sizes), which capture that stream's graphs.
        Each is done once; nothing is left to do for smaller batches."""
        timing = [n for n in warm_up_sizes(largest, self.max_batch) if n not in self._warmed] \
            if self._gemm_tune else []
        sizes = graph_sizes(largest, self.max_batch) if self._graphs else []
        cold = [s for s in slots if sizes and self._warmed_streams.get(s.ctx, 0) < sizes[-1]]
        if not timing and not cold:
            return                      # the usual case, at every search: nothing allocated
        n_max = max(timing + sizes)
        zeros = np.zeros((n_max, NUM_PLANES), np.uint64), np.zeros((n_max, NUM_PLANES), np.float32)
        for n in timing:
            self.forward_packed(zeros[0][:n], zeros[1][:n])
            self._warmed.add(n)
        if not cold:
            return
        ffi, lib = self.ffi, self.lib
        arrays = zeros + empty_outputs(n_max)
        buffers = [ffi.from_buffer(a) for a in arrays]     # kept alive (with the arrays) through the calls
        pointers = [ffi.cast(ctype, b) for ctype, b in zip(("uint64_t*", "float*", "float*", "float*", "float*"),
                                                           buffers)]
        for slot in cold:
            done = self._warmed_streams.get(slot.ctx, 0)
            stream = ffi.cast("lc0rocm_stream*", slot.ctx)
            for n in sizes:
                if n <= done:
                    continue
                for _ in range(2):      # a plain pass, then the one that captures the graph
                    check(ffi, lib, lib.lc0rocm_forward(stream, n, *pointers), f"{self.name}: warm-up")
            self._warmed_streams[slot.ctx] = sizes[-1]

    def close(self):
        with self._pool_lock:
            streams, self._all, self._free = self._all, [], []
            net, self._net = getattr(self, "_net", None), None
        for s in streams:
            self._destroy_stream(s)
        if net is not None:
            self._destroy_net(net)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
