"""Backend registry (lc0_rocm.backends) and the cpu backend's options."""
import chess
import numpy as np
import pytest

from lc0_rocm import backends
from lc0_rocm.backends.base import BackendError, unpack_planes
from lc0_rocm.netspec import NetSpec
from lc0_rocm.weights import load_weights


def test_unknown_backend_names_the_known_ones():
    with pytest.raises(BackendError, match="unknown backend 'nope'.*cpu"):
        backends.resolve("nope")
    ok, reason = backends.is_available("nope")
    assert not ok and "unknown backend" in reason


def test_every_registered_name_is_listed():
    assert set(backends.names()) == set(backends.REGISTRY) | {"auto"}
    assert {"cpu", "rocm", "rocm-fp16", "rocm-auto", "cuda", "cuda-fp16", "cuda-auto"} <= set(backends.names())


def test_auto_is_a_usable_backend():
    name = backends.resolve("auto")
    assert backends.is_available(name)[0], name


def test_cpu_options_reach_the_model(maia_path):
    w = load_weights(maia_path)
    backend = backends.create("cpu", w, algorithm="im2col", threads="1")
    assert backend.model.algorithm == "im2col"


def test_cpu_rejects_unknown_and_bad_options(maia_path):
    w = load_weights(maia_path)
    with pytest.raises(BackendError, match="unknown option.*colour.*known: threads, algorithm"):
        backends.create("cpu", w, colour="blue")
    with pytest.raises(BackendError, match="threads must be a positive integer"):
        backends.create("cpu", w, threads="many")


def test_unpack_planes_puts_bit_i_on_square_i():
    rng = np.random.default_rng(1)
    masks = rng.integers(0, 2**63, size=(3, 112), dtype=np.uint64)
    values = rng.random((3, 112), dtype=np.float32)
    planes = unpack_planes(masks, values)
    n, p, sq = 2, 57, 45
    bit = (int(masks[n, p]) >> sq) & 1
    assert planes[n, p, sq // 8, sq % 8] == np.float32(bit * values[n, p])
    assert planes.shape == (3, 112, 8, 8) and planes.dtype == np.float32


def test_forward_into_writes_the_callers_arrays(maia_path):
    """The base path (compute, then copy) of forward_into and
    forward_packed_into: the same numbers as forward, in the given arrays."""
    from lc0_rocm.backendbench import bench_positions, encode_pool
    w = load_weights(maia_path)
    backend = backends.create("cpu", w)
    masks, values = encode_pool(bench_positions(5, seed=3), w.format.input, packed=True)
    want = backend.forward_packed(masks, values)
    out = (backend.host_empty((5, 1858)), backend.host_empty((5, 3)), backend.host_empty(5))
    got = backend.forward_packed_into(masks, values, out)
    assert all(g is o for g, o in zip(got, out))
    for g, r in zip(got, want):
        np.testing.assert_array_equal(g, r)
    for a in out:
        a[:] = np.nan
    backend.forward_into(unpack_planes(masks, values), out)
    for g, r in zip(out, want):
        np.testing.assert_array_equal(g, r)


@pytest.mark.parametrize("bad,match", [
    ((np.zeros((2, 1858), np.float32), np.zeros((2, 3), np.float32)), "tuple"),
    ((np.zeros((2, 1858), np.float64), np.zeros((2, 3), np.float32), np.zeros(2, np.float32)),
     "policy must be a float32 array of shape"),
    ((np.zeros((2, 1858), np.float32), np.zeros((3, 3), np.float32), np.zeros(2, np.float32)),
     r"wdl must be a float32 array of shape \(2, 3\)"),
    ((np.zeros((2, 1858), np.float32), np.zeros((2, 3), np.float32), np.zeros(4, np.float32)[::2]),
     "moves_left must be C-contiguous"),
])
def test_forward_into_rejects_outputs_it_cannot_write_in_place(bad, match):
    backend = backends.create("random", None)
    masks, values = np.zeros((2, 112), np.uint64), np.zeros((2, 112), np.float32)
    with pytest.raises(ValueError, match=match):
        backend.forward_packed_into(masks, values, bad)


def test_gpu_warm_up_covers_every_timed_class():
    """warm_up's passes: one per power-of-two class of batch sizes that a
    batch of up to `largest` positions falls in, from 32 (no smaller pass
    has a timed product), the last capped at max_batch."""
    from lc0_rocm.backends.native import warm_up_sizes
    assert warm_up_sizes(264 + 32, 1024) == [32, 64, 128, 256, 512]
    assert warm_up_sizes(300, 256) == [32, 64, 128, 256]
    assert warm_up_sizes(300, 300) == [32, 64, 128, 256, 300]
    assert warm_up_sizes(33, 1024) == [32, 64]
    assert warm_up_sizes(16, 1024) == []


def test_gpu_warm_up_runs_each_pass_once():
    """NativeBackend.warm_up's calls, with the GPU library faked: the
    timing passes on the pool's stream once per backend, two passes a graph
    size on each search stream once, nothing at all when warm (it runs at
    every search), more only for larger batches or a new stream."""
    import cffi

    from lc0_rocm.backends.base import NativeSlot
    from lc0_rocm.backends.native import NativeBackend, graph_sizes

    calls = []

    class Lib:
        @staticmethod
        def lc0rocm_forward(stream, n, *pointers):
            calls.append((int(ffi.cast("uintptr_t", stream)), n))
            return 0

    ffi = cffi.FFI()
    ffi.cdef("typedef struct lc0rocm_stream lc0rocm_stream;")
    backend = object.__new__(NativeBackend)
    backend.name, backend.ffi, backend.lib, backend.max_batch = "fake", ffi, Lib(), 1024
    backend._gemm_tune, backend._graphs, backend._warmed, backend._warmed_streams = True, True, set(), {}
    backend.forward_packed = lambda masks, values: calls.append(("pool", len(masks)))
    slots = [NativeSlot(address=1, ctx=0x1000), NativeSlot(address=1, ctx=0x2000)]
    backend.warm_up(296, slots)
    sizes = graph_sizes(296, 1024)
    assert [c for c in calls if c[0] == "pool"] == [("pool", n) for n in (32, 64, 128, 256, 512)]
    for ctx in (0x1000, 0x2000):
        assert [n for s, n in calls if s == ctx] == [n for n in sizes for _ in range(2)]
    calls.clear()
    backend.warm_up(296, slots)
    backend.warm_up(100, slots[:1])
    assert calls == []
    backend.warm_up(400, slots + [NativeSlot(address=1, ctx=0x3000)])
    assert ("pool", 512) not in calls and [n for s, n in calls if s == 0x1000] == [352, 352, 384, 384, 416, 416]
    assert [n for s, n in calls if s == 0x3000] == [n for n in graph_sizes(400, 1024) for _ in range(2)]


def test_padded_size_follows_the_library():
    """padded_size is Stream::padded_size's rule: up to 8 as is, then
    multiples of 8 / 16 / 32 (to 64 / 256 / beyond), at most max_batch; a
    call beyond max_batch runs as passes of max_batch; graph_sizes are the
    sizes the passes of up to n positions run at."""
    from lc0_rocm.backends.native import graph_sizes, padded_size

    assert [padded_size(n, 1024) for n in (1, 8, 9, 64, 65, 250, 257, 1000, 1020)] == \
        [1, 8, 16, 64, 80, 256, 288, 1024, 1024]
    assert padded_size(300, 296) == 296 and padded_size(2000, 1024) == 1024
    assert graph_sizes(300, 1024) == [*range(1, 9), *range(16, 65, 8), *range(80, 257, 16), 288, 320]
    assert graph_sizes(300, 296)[-2:] == [288, 296] and graph_sizes(0, 1024) == []


def test_backends_state_their_attributes(make_test_net):
    """lc0's BackendAttributes: cpu suggests one search thread and eigen's
    minibatch of 7; random two threads and lc0's generic 256; a GPU two (three for a small residual net)
    threads and 2 x its multiprocessors (256 where the count is unknown)."""
    from lc0_rocm.backends import native
    from lc0_rocm.backends.base import DEFAULT_ATTRIBUTES, Backend, BackendAttributes
    cpu = backends.create("cpu", load_weights(make_test_net("tiny-resnet")))
    assert cpu.attributes() == BackendAttributes(True, 1, 7, 1024)
    rnd = backends.create("random", None)
    assert rnd.attributes() == BackendAttributes(True, 2, 256, 1024)
    assert native.gpu_attributes({"multiprocessors": 132}, 512) == BackendAttributes(False, 2, 264, 512)
    small = NetSpec.from_weights(load_weights(make_test_net("tiny-resnet")))     # a maia-sized body
    assert (native.gpu_attributes({"multiprocessors": 132}, 512, small).suggested_num_search_threads
            == native.search_threads_for(small) >= 3)
    assert native.gpu_attributes({}, 1024).recommended_batch_size == 256

    class Plain(Backend):
        def forward(self, planes):
            raise NotImplementedError
    assert Plain().attributes() == DEFAULT_ATTRIBUTES


def test_a_small_nets_search_threads_follow_the_hosts_cores(make_test_net):
    """Two search threads for a big net whatever the host; for a small
    residual net (host-bound) a third of the cores, from 3 up to 5."""
    from lc0_rocm.backends import native
    small = NetSpec.from_weights(load_weights(make_test_net("tiny-resnet")))
    big = NetSpec.from_weights(load_weights(make_test_net("tiny-attn")))
    assert [native.search_threads_for(small, cores) for cores in (1, 2, 8, 12, 14, 15, 16, 64)] == \
        [3, 3, 3, 4, 4, 5, 5, 5]
    assert {native.search_threads_for(big, cores) for cores in (2, 16, 64)} == {2}
    assert native.search_threads_for(None, 64) == 2


def test_usable_cores_are_the_processs_affinity(monkeypatch):
    """The cores a process may run on: its affinity where the system has
    one (a container's or taskset's share), else the host's count."""
    from lc0_rocm import host
    monkeypatch.setattr(host.os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    monkeypatch.setattr(host.os, "cpu_count", lambda: 64)
    assert host.usable_cores() == 3
    monkeypatch.delattr(host.os, "sched_getaffinity")
    assert host.usable_cores() == 64
    monkeypatch.setattr(host.os, "cpu_count", lambda: None)
    assert host.usable_cores() == 1


@pytest.mark.gpu
def test_gpu_backend_states_its_attributes(make_test_net):
    """On a GPU: not on the CPU, three to five search threads for a small residual net (by
    the host's cores), 2 x its multiprocessors as the batch, max_batch as the largest."""
    from lc0_rocm.backends import native
    name = next((n for n in ("cuda-fp16", "rocm-fp16") if native.is_available(n)[0]), None)
    if name is None:
        pytest.skip(f"no GPU backend usable here ({native.is_available('cuda')[1]})")
    gpu = backends.create(name, load_weights(make_test_net("tiny-resnet")), max_batch=64)
    try:
        attributes = gpu.attributes()
        spec = NetSpec.from_weights(load_weights(make_test_net("tiny-resnet")))
        assert not attributes.runs_on_cpu
        assert attributes.suggested_num_search_threads == native.search_threads_for(spec)
        assert attributes.maximum_batch_size == 64
        assert attributes.recommended_batch_size == 2 * gpu.device_info["multiprocessors"] > 0
    finally:
        gpu.close()


def _fake_backend(monkeypatch, prepare_error=None):
    """A registered backend `fake` whose prepare() and create() record
    their threads and order."""
    import sys
    import threading
    import time
    import types

    from lc0_rocm import backends
    from lc0_rocm.backends.cpu import create as cpu_create
    calls = []
    module = types.ModuleType("fake_backend_for_tests")

    def prepare(name, **options):
        time.sleep(0.2)                       # slower than reading maia: create must wait
        calls.append(("prepare", threading.current_thread().name, options))
        if prepare_error:
            raise prepare_error

    def create(name, weights, **options):
        calls.append(("create", threading.current_thread().name, options))
        return cpu_create("cpu", weights)
    module.prepare, module.create = prepare, create
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(backends.REGISTRY, "fake", backends.BackendEntry("fake", module.__name__, 0, "test"))
    return calls


def test_load_network_prepares_the_backend_while_reading_the_weights(monkeypatch, maia_path):
    import threading

    from lc0_rocm.network import load_network
    calls = _fake_backend(monkeypatch)
    with load_network(str(maia_path), backend="fake", backend_opts="threads=1") as net:
        assert net.evaluate_batch([chess.Board()])[0].policy
    assert [c[0] for c in calls] == ["prepare", "create"]            # create waited for it
    assert calls[0][1] == "lc0-rocm-backend-prepare" and calls[1][1] == threading.current_thread().name
    assert calls[0][2] == calls[1][2] == {"threads": "1"}


def test_a_failed_preparation_is_left_to_create(monkeypatch, maia_path):
    from lc0_rocm.network import load_network
    calls = _fake_backend(monkeypatch, prepare_error=RuntimeError("no GPU here"))
    with load_network(str(maia_path), backend="fake") as net:   # create() decides, and here succeeds
        assert net.evaluate_batch([chess.Board()])[0].policy
    assert [c[0] for c in calls] == ["prepare", "create"]


def test_nothing_to_prepare_for_cpu_backends_or_wrappers():
    from lc0_rocm import backends
    assert backends.prepare_in_background("cpu", {}) is None
    assert backends.prepare_in_background("random", {}) is None
    assert backends.prepare_in_background("demux", {"a": {"backend": "cuda"}}) is None
    assert backends.prepare_in_background("no-such-backend", {}) is None


def test_auto_is_resolved_on_the_preparing_thread(monkeypatch):
    """`auto` probes the GPUs: on the thread, not before reading the weights."""
    import threading
    from lc0_rocm import backends
    seen = []
    real = backends.resolve
    monkeypatch.setattr(backends, "resolve", lambda name: seen.append(threading.current_thread().name) or real(name))
    thread = backends.prepare_in_background("auto", {})
    thread.join(5)
    assert not thread.is_alive() and seen == ["lc0-rocm-backend-prepare"]
