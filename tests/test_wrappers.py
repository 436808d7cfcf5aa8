"""lc0's wrapper backends (roundrobin, multiplexing, demux) over `cpu`
children, and over two GPUs when present: parity with one backend, how
each spreads work, options and errors naming the child."""
import threading
import time

import numpy as np
import pytest

from lc0_rocm import backends
from lc0_rocm.backendbench import bench_positions, encode_pool
from lc0_rocm.backends import children as children_mod
from lc0_rocm.backends import native
from lc0_rocm.backends.base import Backend, BackendError
from lc0_rocm.backends.demux import split_sizes
from native_slot_fakes import CoreRandomSlots
from lc0_rocm.backends.multiplexing import MultiplexingBackend
from lc0_rocm.backends.options import parse
from lc0_rocm.weights import load_weights

WRAPPERS = ("roundrobin", "multiplexing", "demux")
TWO_CPUS = "backend=cpu,(threads=1),(threads=1)"


@pytest.fixture(scope="module")
def net(make_test_net):
    weights = load_weights(make_test_net("tiny-resnet"))
    masks, values = encode_pool(bench_positions(41, seed=7), weights.format.input, packed=True)
    return weights, masks, values


def wrapper(name, weights, text=TWO_CPUS):
    return backends.create(name, weights, **parse(text))


def assert_same(got, want):
    for g, w in zip(got, want):
        assert g.dtype == np.float32 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", WRAPPERS)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 41])
def test_each_position_gets_what_its_child_computes(net, name, n):
    """Bit for bit: roundrobin and multiplexing (one caller) run the whole
    batch on one child; demux runs lc0's parts, each on a cpu child."""
    weights, masks, values = net
    cpu = backends.create("cpu", weights)
    m, v = masks[:n], values[:n]
    if name == "demux":
        parts, start = [], 0
        for size in split_sizes(n, 2):
            parts.append(cpu.forward_packed(m[start:start + size], v[start:start + size]))
            start += size
        want = children_mod.concat_outputs(parts)
    else:
        want = cpu.forward_packed(m, v)
    w = wrapper(name, weights)
    try:
        assert_same(w.forward_packed(m, v), want)
        planes = backends.base.unpack_planes(m, v)
        assert_same(w.forward(planes), want)
        whole = cpu.forward_packed(m, v)     # and close to the unsplit batch
        for g, r in zip(w.forward_packed(m, v), whole):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    finally:
        w.close()


def test_demux_splits_like_lc0():
    assert split_sizes(7, 2) == [4, 3]
    assert split_sizes(1, 2) == [1]
    assert split_sizes(256, 2) == [128, 128]
    assert split_sizes(10, 4) == [3, 3, 3, 1]
    assert split_sizes(10, 4, minimum_split=8) == [8, 2]
    assert split_sizes(5, 4, minimum_split=8) == [5]


class Recorder(Backend):
    """A child that records the batch sizes and threads it sees."""

    def __init__(self, name="rec", gate=None):
        self.name, self.sizes, self.threads, self.gate = name, [], set(), gate
        self.closed = False
        self.entered = threading.Event()

    def forward(self, planes):
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(5)
        self.sizes.append(len(planes))
        self.threads.add(threading.get_ident())
        ids = planes[:, 0, 0, 0].astype(np.float32)
        return (np.repeat(ids[:, None], 1858, 1), np.repeat(ids[:, None], 3, 1), ids.copy())

    def close(self):
        self.closed = True


def marked_planes(start, n):
    planes = np.zeros((n, 112, 8, 8), np.float32)
    planes[:, 0, 0, 0] = np.arange(start, start + n)
    return planes


def test_roundrobin_alternates_children(net, monkeypatch):
    rr = wrapper("roundrobin", net[0])
    recs = [Recorder(), Recorder()]
    for child, rec in zip(rr.children, recs):
        child.backend = rec
    for n in (3, 4, 5, 6):
        out = rr.forward(marked_planes(10, n))
        np.testing.assert_array_equal(out[2], np.arange(10, 10 + n))
    assert recs[0].sizes == [3, 5] and recs[1].sizes == [4, 6]
    rr.close()
    assert recs[0].closed and recs[1].closed


def test_demux_runs_parts_on_each_child_concurrently(net):
    dm = wrapper("demux", net[0], "backend=cpu,(threads=1),(threads=1)")
    recs = [Recorder(), Recorder()]
    for child, rec in zip(dm.children, recs):
        child.backend = rec
    out = dm.forward(marked_planes(0, 9))
    np.testing.assert_array_equal(out[2], np.arange(9))
    assert sorted(recs[0].sizes + recs[1].sizes) == [4, 5]
    out = dm.forward(marked_planes(100, 1))       # a single position: the next child in turn
    np.testing.assert_array_equal(out[2], [100])
    assert len(recs[0].sizes) + len(recs[1].sizes) == 3 and recs[0].sizes and recs[1].sizes
    assert not (recs[0].threads & recs[1].threads)   # each child has its own workers
    dm.close()


def test_multiplexing_merges_queued_batches_up_to_max_batch():
    gate = threading.Event()
    rec = Recorder(gate=gate)
    child = children_mod.Child("child 0 (rec)", "rec", {}, {}, rec)
    mux = MultiplexingBackend([child], threads=[1], max_batch=[10])
    results = {}

    def call(i, start, n):
        results[i] = mux.forward(marked_planes(start, n))

    callers = [threading.Thread(target=call, args=(0, 0, 2))]
    callers[0].start()
    assert rec.entered.wait(5)      # the worker holds the first batch at the gate
    for i, (start, n) in enumerate([(100, 3), (200, 4), (300, 5), (400, 20)], start=1):
        t = threading.Thread(target=call, args=(i, start, n))
        callers.append(t)
        t.start()
        # One caller at a time, so the queue holds the batches in this order.
        deadline = time.monotonic() + 5
        while len(mux._queue) < i and time.monotonic() < deadline:
            threading.Event().wait(0.005)
        assert len(mux._queue) == i
    gate.set()
    for t in callers:
        t.join(10)
    assert rec.sizes == [2, 7, 5, 20]   # 3+4 merged; 5 would pass 10; 20 alone though above 10
    for i, (start, n) in enumerate([(0, 2), (100, 3), (200, 4), (300, 5), (400, 20)]):
        np.testing.assert_array_equal(results[i][2], np.arange(start, start + n))
    mux.close()
    assert rec.closed
    with pytest.raises(BackendError, match="closed"):
        mux.forward(marked_planes(0, 1))


@pytest.mark.parametrize("name", WRAPPERS)
def test_concurrent_callers_get_their_own_rows(net, name):
    weights, masks, values = net
    cpu = backends.create("cpu", weights)
    w = wrapper(name, weights)
    chunks = [(masks[i:i + 5], values[i:i + 5]) for i in range(0, 40, 5)]
    want = [cpu.forward_packed(m, v) for m, v in chunks]
    got = [None] * len(chunks)

    def run(i):
        got[i] = w.forward_packed(*chunks[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(chunks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    w.close()
    for g, r in zip(got, want):
        for a, b in zip(g, r):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_empty_batch_and_bad_shapes(net):
    weights = net[0]
    for name in WRAPPERS:
        w = wrapper(name, weights)
        policy, wdl, ml = w.forward_packed(np.zeros((0, 112), np.uint64), np.zeros((0, 112), np.float32))
        assert policy.shape == (0, 1858) and wdl.shape == (0, 3) and ml.shape == (0,)
        with pytest.raises(ValueError, match="planes must have shape"):
            w.forward(np.zeros((2, 3), np.float32))
        w.close()


def test_one_child_from_the_wrappers_own_options(net):
    w = wrapper("demux", net[0], "backend=cpu,threads=1")
    assert [c.backend_name for c in w.children] == ["cpu"] and w.name == "demux(cpu)"
    w.close()
    w = wrapper("roundrobin", net[0], "cpu(threads=1),cpu2(backend=cpu)")
    assert [c.label for c in w.children] == ["child 0 cpu (threads=1)", "child 1 cpu2 (backend=cpu)"]
    w.close()


def test_nested_wrappers(net):
    weights, masks, values = net
    w = wrapper("roundrobin", weights, "(backend=demux,(backend=cpu),(backend=cpu)),(backend=cpu)")
    assert w.name == "roundrobin(demux(cpu,cpu),cpu)"
    want = backends.create("cpu", weights).forward_packed(masks[:9], values[:9])
    for _ in range(2):
        for g, r in zip(w.forward_packed(masks[:9], values[:9]), want):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    w.close()


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("name,text,message", [
    ("demux", "backend=nope,(threads=1)", "child 0 \\(threads=1\\): unknown backend 'nope'"),
    ("roundrobin", "(backend=cpu),(backend=gpu9000)", "child 1 \\(backend=gpu9000\\): unknown backend"),
    ("demux", "backend=cpu,(threads=1),(threads=1,colour=blue)",
     "^child 1 \\(threads=1,colour=blue\\): unknown option\\(s\\) colour for backend cpu$"),
    ("multiplexing", "backend=cpu,colour=blue,(threads=1)", "^multiplexing: unknown option\\(s\\) colour"),
    ("demux", "backend=cpu,(gpu=1)", "child 0 \\(gpu=1\\): unknown option\\(s\\) gpu for backend cpu"),
    ("demux", "backend=cpu,(threads=x)", "child 0 \\(threads=x\\): threads must be an integer >= 0"),
    ("multiplexing", "backend=cpu,(max_batch=0)", "child 0 \\(max_batch=0\\): max_batch must be an integer >= 1"),
    ("demux", "backend=cpu,minimum-split-size=-2,(threads=1)", "minimum-split-size must be an integer >= 0"),
    ("demux", "backend=demux", "backend=demux needs its own child options"),
    ("roundrobin", "(backend=cpu,(threads=1))", "child 0 \\(backend=cpu,\\(threads=1\\)\\): backend cpu takes no child"),
])
def test_bad_options_name_the_child(net, name, text, message):
    with pytest.raises(BackendError, match=message) as info:
        wrapper(name, net[0], text)
    assert "\n" not in str(info.value)


def test_a_child_that_fails_to_load_is_named_and_the_others_are_closed(net, monkeypatch):
    from lc0_rocm.backends import cpu
    closed = []
    monkeypatch.setattr(cpu.CpuBackend, "close", lambda self: closed.append(self), raising=False)
    with pytest.raises(BackendError, match="^child 1 \\(threads=many\\): cpu backend: threads must be"):
        wrapper("roundrobin", net[0], "backend=cpu,(threads=1),(threads=many)")
    assert len(closed) == 1


def test_an_absent_gpu_is_named(net, monkeypatch):
    """gpu=N beyond the device count, with a stand-in native library that
    reports two devices (no GPU needed)."""
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(native.cdef_text())

    class TwoDevices:
        def lc0rocm_get_device_count(self, count):
            count[0] = 2
            return 0

    monkeypatch.setattr(native, "build", lambda vendor, arch=None: "stand-in.so")
    monkeypatch.setattr(native, "load_library", lambda path: (ffi, TwoDevices()))
    with pytest.raises(BackendError, match="^child 1 \\(gpu=3\\): cuda-fp16: gpu=3 does not exist "
                                           "\\(2 GPU\\(s\\) present: devices 0..1\\)$"):
        wrapper("demux", net[0], "backend=cuda-fp16,(backend=cpu),(gpu=3)")


def test_native_device_index_takes_lc0s_gpu_key():
    def index(**options):
        return native.device_index("cuda", native.read_settings("cuda", options))
    assert index(gpu="1") == 1
    assert index(device=2) == 2
    assert index() == 0
    with pytest.raises(native.NativeError, match="gpu and device disagree"):
        index(gpu="1", device="0")
    with pytest.raises(ValueError, match="cuda: gpu='one' is not an integer >= 0"):
        index(gpu="one")
    with pytest.raises(native.NativeError, match="cuda: gpu=2 does not exist \\(1 GPU\\(s\\) present: devices 0..0\\)"):
        native.check_device("cuda", 2, 1)


def test_load_network_and_uci_take_backend_opts(net, make_test_net):
    from lc0_rocm.network import load_network
    path = make_test_net("tiny-resnet")
    with load_network(path, backend="demux", backend_opts=TWO_CPUS) as network:
        assert network.backend.name == "demux(cpu,cpu)"
        evals = network.evaluate_batch(bench_positions(3, seed=1))
        assert len(evals) == 3
    with load_network(path, backend="roundrobin", backend_opts={"backend": "cpu"}, algorithm="im2col") as network:
        assert network.backend.children[0].backend.model.algorithm == "im2col"
    with pytest.raises(ValueError, match="unbalanced"):
        load_network(path, backend="demux", backend_opts="(threads=1")


# ---------------------------------------------------------------- two GPUs
def two_gpus_or_skip() -> str:
    for name in ("rocm-fp16", "cuda-fp16"):
        ok, reason = native.is_available(name)
        if ok:
            vendor, _ = native.split_name(name)
            ffi, lib = native.load_library(native.build(vendor))
            count = ffi.new("int*")
            native.check(ffi, lib, lib.lc0rocm_get_device_count(count), "device count")
            if count[0] >= 2:
                return name
            pytest.skip(f"{name}: {count[0]} GPU present; these tests need 2")
    pytest.skip(f"no GPU backend usable here ({native.is_available('rocm')[1]}; "
                f"{native.is_available('cuda')[1]})")


@pytest.mark.gpu
@pytest.mark.parametrize("name", WRAPPERS)
def test_two_gpus_match_one(name, maia_path):
    gpu = two_gpus_or_skip()
    weights = load_weights(maia_path)
    masks, values = encode_pool(bench_positions(96, seed=3), weights.format.input, packed=True)
    one = backends.create(gpu, weights, gpu="0")
    both = wrapper(name, weights, f"backend={gpu},(gpu=0),(gpu=1)")

    def settled(backend, m, v, calls=3):   # plain pass, graph capture, replay: compare replays
        for _ in range(calls):
            out = backend.forward_packed(m, v)
        return out

    try:
        for n in (1, 7, 96):
            if name == "demux":   # each part exactly as one GPU computes it
                parts, start = [], 0
                for size in split_sizes(n, 2):
                    parts.append(settled(one, masks[start:start + size], values[start:start + size]))
                    start += size
                want = children_mod.concat_outputs(parts)
            else:
                want = settled(one, masks[:n], values[:n])
            settled(both, masks[:n], values[:n], 6)
            for _ in range(2):    # roundrobin: once on each GPU
                for g, w in zip(both.forward_packed(masks[:n], values[:n]), want):
                    np.testing.assert_array_equal(g, w)
    finally:
        one.close()
        both.close()


@pytest.mark.gpu
def test_two_gpus_absent_gpu_is_named(maia_path):
    gpu = two_gpus_or_skip()
    with pytest.raises(BackendError, match=f"child 1 \\(gpu=99\\): {gpu}: gpu=99 does not exist"):
        wrapper("demux", load_weights(maia_path), f"backend={gpu},(gpu=0),(gpu=99)")


def test_commands_take_backend_opts(make_test_net, capsys):
    from lc0_rocm import backendbench, uci
    path = str(make_test_net("tiny-resnet"))
    assert backendbench.main(["-w", path, "-b", "demux", "-o", TWO_CPUS, "--batches", "3",
                              "--seconds", "0.01"]) == 0
    assert "backend demux(cpu,cpu)" in capsys.readouterr().out
    assert backendbench.main(["-w", path, "-b", "demux", "-o", "backend=cpu,(gpu=1)"]) == 2
    assert capsys.readouterr().err.strip() == ("lc0-rocm backendbench: child 0 (gpu=1): "
                                               "unknown option(s) gpu for backend cpu")
    network = uci._default_network_loader(path, backend="multiplexing",
                                          backend_opts=backends.parse_options(TWO_CPUS))
    assert network.backend.name == "multiplexing(cpu,cpu)"
    network.close()


class SlotChild(Recorder):
    """A child with native slots (as a GPU backend has): slot ctx = (child, k)."""

    def __init__(self, index):
        super().__init__(f"slots{index}")
        self.index, self.given = index, 0

    def native_slots(self, count):
        from lc0_rocm.backends.base import NativeSlot
        slots = [NativeSlot(1000 + self.index, self.index * 100 + self.given + k, 64) for k in range(count)]
        self.given += count
        return slots


@pytest.mark.parametrize("name", ["roundrobin", "multiplexing"])
def test_whole_batch_wrappers_give_the_search_a_slot_per_child_in_turn(net, name):
    w = wrapper(name, net[0])
    for i, child in enumerate(w.children):
        child.backend = SlotChild(i)
    assert w.attributes().suggested_num_search_threads == 4   # two per child
    slots = w.native_slots(4)
    assert [(s.address, s.ctx) for s in slots] == [(1000, 0), (1001, 100), (1000, 1), (1001, 101)]
    assert len(w.native_slots(1)) == 2        # every child gets a slot
    w.children[1].backend = Recorder()        # a child with no native entry: the callback path
    assert w.native_slots(2) is None


def test_demux_gives_the_search_slots_spanning_every_child(net):
    dm = wrapper("demux", net[0], "backend=cpu,minimum-split-size=8,(threads=2),(threads=1)")
    for i, child in enumerate(dm.children):
        child.backend = SlotChild(i)
    assert dm.attributes().suggested_num_search_threads == 2   # each batch spans both children
    slots = dm.native_slots(2)
    assert len(slots) == 2
    for k, slot in enumerate(slots):
        assert slot.minimum_split == 8
        # Interleaved as _dispatch assigns parts: child 0, child 1, child 0.
        assert [(p.address, p.ctx) for p in slot.parts] == [(1000, 2 * k), (1001, 100 + k), (1000, 2 * k + 1)]
    dm.children[0].backend = Recorder()
    assert dm.native_slots(1) is None


class CoreRandomChild(CoreRandomSlots):
    """A child whose native slots run the native core's random net (a GPU
    backend's slots run its GPU forward): records the calls that reach it
    natively and through Python."""

    def __init__(self, index, failing=False):
        super().__init__(seed=11)
        self.name, self.index, self.failing = f"core{index}", index, failing
        self.native_rows, self.python_calls = [], 0

    def _forward(self, ctx, n, masks, values, policy, wdl, moves_left):
        self.native_rows.append(n)
        if self.failing:
            return 3
        return self.run_random(n, masks, values, policy, wdl, moves_left)

    def forward_packed(self, masks, values):
        self.python_calls += 1
        if self.failing:
            raise BackendError("the device fell over")
        return backends.create("random", None, seed=11).forward_packed(masks, values)

    def close(self):
        pass


def test_demux_runs_packed_batches_through_the_native_core(net):
    """With native slots in every child, a packed batch is cut in the core
    (lc0's split) and each part written in place: no Python per part. A
    failing part falls back to the Python path, whose error names the child."""
    from lc0_rocm import native_core
    if not native_core.available()[0]:
        pytest.skip(f"native core unavailable: {native_core.available()[1]}")
    weights, masks, values = net
    dm = wrapper("demux", weights, "backend=cpu,(threads=1),(threads=2)")
    try:
        for i, child in enumerate(dm.children):
            child.backend = CoreRandomChild(i)
        want = backends.create("random", None, seed=11).forward_packed(masks, values)
        assert_same(dm.forward_packed(masks, values), want)
        first, second = (c.backend for c in dm.children)
        # 41 rows over 3 workers: parts of 14, 14, 13; child 0 gets one, child 1 two.
        assert sorted(first.native_rows + second.native_rows) == [13, 14, 14]
        assert len(first.native_rows) == 1 and len(second.native_rows) == 2
        assert first.python_calls == second.python_calls == 0
        second.failing = True
        with pytest.raises(BackendError, match=r"child 1 \(threads=2\): the device fell over"):
            dm.forward_packed(masks, values)
    finally:
        dm.close()
    calls = len(first.native_rows)
    with pytest.raises(BackendError, match="the backend is closed"):
        dm.forward_packed(masks, values)      # never through the closed children's slots
    assert len(first.native_rows) == calls


def test_wrappers_state_attributes_from_their_children(net):
    """roundrobin and multiplexing: two search threads per child, batches
    sized for the first GPU child; demux: two threads, batches that fill
    every GPU child. CPU-only wrappers keep lc0's generic 256."""
    from lc0_rocm.backends.base import BackendAttributes

    class Gpu(Recorder):
        def __init__(self, name, multiprocessors):
            super().__init__(name)
            self.sms = multiprocessors

        def attributes(self):
            return native.gpu_attributes({"multiprocessors": self.sms}, 512)

    for name in ("roundrobin", "multiplexing"):
        w = wrapper(name, net[0])
        assert w.attributes() == BackendAttributes(True, 4, 256, 1024)
        w.children[0].backend, w.children[1].backend = Gpu("a", 132), Gpu("b", 66)
        assert w.attributes() == BackendAttributes(False, 4, 264, 512)
        w.close()
    dm = wrapper("demux", net[0])
    assert dm.attributes() == BackendAttributes(True, 2, 256, 2048)
    dm.children[0].backend, dm.children[1].backend = Gpu("a", 132), Gpu("b", 66)
    assert dm.attributes() == BackendAttributes(False, 2, 264 + 132, 1024)
    dm.close()
