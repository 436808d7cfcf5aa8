"""The batching multiplexer (native/core: batch_mux.cpp) driven directly:
concurrent clients' rows merged into calls and every row answered to its
own caller, early rounds, the call buffers and the logits written, bad
arguments refused."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from lc0_rocm import native_core

pytestmark = pytest.mark.skipif(not native_core.available()[0],
                                reason=f"native core unavailable: {native_core.available()[1]}")


class MuxClients:
    """Threads calling one mux's clients directly; the real forward (a
    Python callback) records each call and answers row i with the first
    mask of row i, so every caller can check it got its own rows back."""

    def __init__(self, max_batch: int, clients: int, seconds: float = 0.0, mode: int = 1):
        self.ffi, self.lib = native_core.load()
        self.calls: list[tuple[int, float, float]] = []     # (rows, start, end)
        self.returned: dict[str, float] = {}
        self.errors: list[str] = []
        ffi = self.ffi

        @ffi.callback("lc0core_forward_fn")
        def forward(_ctx, n, masks, _values, _policy, wdl, _moves_left):
            start = time.monotonic()
            time.sleep(seconds)
            for i in range(n):
                wdl[3 * i] = float(masks[112 * i])
            self.calls.append((n, start, time.monotonic()))
            return 0
        self.forward = forward
        out = ffi.new("lc0core_mux**")
        assert self.lib.lc0core_mux_create(forward, ffi.NULL, max_batch, mode, clients, out) == 0
        self.mux = ffi.gc(out[0], self.lib.lc0core_mux_destroy)

    def call(self, name: str, index: int, rows: int, first_id: int) -> None:
        ffi, lib = self.ffi, self.lib
        masks = ffi.new("uint64_t[]", 112 * rows)
        for i in range(rows):
            masks[112 * i] = first_id + i
        values = ffi.new("float[]", 112 * rows)
        policy, wdl, left = ffi.new("float[]", 1858 * rows), ffi.new("float[]", 3 * rows), ffi.new("float[]", rows)
        status = lib.lc0core_mux_forward(lib.lc0core_mux_client(self.mux, index), rows, masks, values, policy,
                                         wdl, left)
        self.returned[name] = time.monotonic()
        got = [wdl[3 * i] for i in range(rows)]
        if status != 0 or got != [float(first_id + i) for i in range(rows)]:
            self.errors.append(f"{name}: status {status}, rows {got}")

    def release(self, index: int) -> None:
        self.lib.lc0core_mux_release(self.lib.lc0core_mux_client(self.mux, index))

    def start(self, name: str, *args) -> threading.Thread:
        t = threading.Thread(target=self.call, args=(name, *args))
        t.start()
        return t

    def stats(self):
        s = self.ffi.new("lc0core_mux_stats*")
        assert self.lib.lc0core_mux_get_stats(self.mux, s) == 0
        return s


def test_a_client_returns_when_its_last_row_is_back():
    """A round of two calls (FIXED, 4 rows): A's 2 rows and B's first 2 in
    the first, B's other 4 in the second. A returns while the second call
    computes; each gets its own rows back, B's across the two calls. (A
    client is active from its first call: B's first call runs alone, then
    A's waits for B's next.)"""
    m = MuxClients(max_batch=4, clients=2, seconds=0.3)
    m.call("b0", 1, 1, 1)
    a = m.start("a", 0, 2, 100)
    time.sleep(0.2)                                   # A queues first
    b = m.start("b", 1, 6, 200)
    a.join(), b.join()
    assert not m.errors
    assert [n for n, _, _ in m.calls] == [4, 4, 4]
    second_start, second_end = m.calls[2][1], m.calls[2][2]
    assert m.returned["a"] < second_end and m.returned["b"] >= second_end
    assert m.returned["a"] < second_start + 0.2


def test_an_early_round_leaves_a_partial_call_for_the_next():
    """FIXED, 4 rows a call, three searches. C's first call runs alone; A
    and B queue 3 rows each while C works: 6 rows start a round, which
    takes the first alone (the second's 3 would spill into a second, padded
    call); the second goes with C's next row in one full call."""
    m = MuxClients(max_batch=4, clients=3)
    m.call("c1", 2, 1, 30)
    a = m.start("a", 0, 3, 40)
    time.sleep(0.1)
    b = m.start("b", 1, 3, 50)
    deadline = time.monotonic() + 10
    while not ({"a", "b"} & set(m.returned)) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert len({"a", "b"} & set(m.returned)) == 1     # the other waits for C's rows
    m.call("c2", 2, 1, 60)
    a.join(timeout=10), b.join(timeout=10)
    assert not a.is_alive() and not b.is_alive()
    assert not m.errors
    s = m.stats()
    assert [n for n, _, _ in m.calls] == [4, 4, 4]
    assert (s.rounds, s.calls, s.rows, s.padded_rows) == (3, 3, 8, 4)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_mux_under_load_answers_every_row_to_its_caller(mode):
    """Twelve searches' worth of threads, batches of 1-20 rows at random
    moments, calls of 8 rows (MERGE, FIXED, SEPARATE): every call gets its
    own rows back, and every thread ends after its release."""
    import random
    m = MuxClients(max_batch=8, clients=12, mode=mode)

    def search(index: int) -> None:
        rng = random.Random(index)
        for k in range(25):
            m.call(f"{index}-{k}", index, rng.randint(1, 20), 1000 * index + 40 * k)
            time.sleep(rng.random() * 0.002)
        m.release(index)
    threads = [threading.Thread(target=search, args=(i,), daemon=True) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a caller never got its answer"
    assert not m.errors and len(m.returned) == 12 * 25
    s = m.stats()
    assert s.rows == sum(n for n, _, _ in m.calls) - s.padded_rows
    if mode == 1:
        assert {n for n, _, _ in m.calls} == {8}


def test_mux_buffers_are_checked():
    ffi, lib = native_core.load()
    forward = ffi.addressof(lib, "lc0core_random_forward")
    buffers = [ffi.new("uint64_t[]", 112 * 4)] + [ffi.new("float[]", k) for k in (112 * 4, 1858 * 4, 12, 4)]
    for mode, max_batch, rows in ((0, 0, 4), (2, 4, 4), (1, 8, 4)):
        out = ffi.new("lc0core_mux**")
        assert lib.lc0core_mux_create(forward, ffi.NULL, max_batch, mode, 1, out) == 0
        assert lib.lc0core_mux_set_buffers(out[0], *buffers, rows) == lib.LC0CORE_INVALID_ARGUMENT
        assert "max_batch" in native_core.last_error()
        lib.lc0core_mux_destroy(out[0])
    out = ffi.new("lc0core_mux**")
    assert lib.lc0core_mux_create(forward, ffi.NULL, 4, 1, 1, out) == 0
    assert lib.lc0core_mux_set_buffers(out[0], ffi.NULL, *buffers[1:], 4) == lib.LC0CORE_INVALID_ARGUMENT
    assert lib.lc0core_mux_set_buffers(out[0], *buffers, 4) == 0
    lib.lc0core_mux_destroy(out[0])


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_mux_writes_only_the_wanted_logits(mode):
    """lc0core_mux_forward_wanted: in MERGE and FIXED mode each row's policy
    gets only its wanted logits, equal to the network's, and the rest keep
    what the caller had there; SEPARATE writes whole rows. WDL and moves
    left as the network's. The wanted indices without their offsets (or
    the reverse) are refused."""
    ffi, lib = native_core.load()
    net = ffi.new("lc0core_random_net*", {"seed": 3, "uniform": 0})
    forward = ffi.addressof(lib, "lc0core_random_forward")
    rows = 3
    masks, values = ffi.new("uint64_t[]", 112 * rows), ffi.new("float[]", 112 * rows)
    for i in range(rows):
        masks[112 * i] = 1000 + i
    def outputs(fill):
        return ffi.new("float[]", [fill] * (1858 * rows)), ffi.new("float[]", 3 * rows), ffi.new("float[]", rows)
    expected = outputs(0.0)
    assert forward(net, rows, masks, values, *expected) == 0
    wanted = ffi.new("int[]", [5, 77, 1857, 0, 900, 901, 12])
    offsets = ffi.new("int[]", [0, 3, 3, 7])          # row 1 wants none
    out = ffi.new("lc0core_mux**")
    assert lib.lc0core_mux_create(forward, net, 2, mode, 1, out) == 0
    client = lib.lc0core_mux_client(out[0], 0)
    got = outputs(-7.0)
    assert lib.lc0core_mux_forward_wanted(client, rows, masks, values, wanted, offsets, *got) == 0
    policy = np.frombuffer(ffi.buffer(got[0]), dtype=np.float32).reshape(rows, 1858)
    network = np.frombuffer(ffi.buffer(expected[0]), dtype=np.float32).reshape(rows, 1858)
    for r in range(rows):
        want = [wanted[k] for k in range(offsets[r], offsets[r + 1])]
        assert np.array_equal(policy[r, want], network[r, want])
        rest = np.ones(1858, dtype=bool)
        rest[want] = False
        if mode == 2:
            assert np.array_equal(policy[r], network[r])
        else:
            assert np.all(policy[r, rest] == -7.0)
    assert list(got[1]) == list(expected[1]) and list(got[2]) == list(expected[2])
    assert lib.lc0core_mux_forward_wanted(client, rows, masks, values, wanted, ffi.NULL, *got) == \
        lib.LC0CORE_INVALID_ARGUMENT
    assert lib.lc0core_mux_forward_wanted(client, rows, masks, values, ffi.NULL, offsets, *got) == \
        lib.LC0CORE_INVALID_ARGUMENT
    lib.lc0core_mux_release(client)
    lib.lc0core_mux_destroy(out[0])


def test_mux_rejects_bad_arguments():
    ffi, lib = native_core.load()
    out = ffi.new("lc0core_mux**")
    forward = ffi.addressof(lib, "lc0core_random_forward")
    assert lib.lc0core_mux_create(forward, ffi.NULL, 0, 1, 2, out) == lib.LC0CORE_INVALID_ARGUMENT
    assert "max_batch" in native_core.last_error()
    assert lib.lc0core_mux_create(forward, ffi.NULL, 0, 7, 2, out) == lib.LC0CORE_INVALID_ARGUMENT
    assert lib.lc0core_mux_create(ffi.NULL, ffi.NULL, 0, 0, 2, out) == lib.LC0CORE_INVALID_ARGUMENT
    assert lib.lc0core_mux_client(ffi.NULL, 0) == ffi.NULL
    many = ffi.new("lc0core_search_many**")
    assert lib.lc0core_search_many_create(0, many) == lib.LC0CORE_INVALID_ARGUMENT
