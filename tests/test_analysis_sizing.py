"""How analysis lays its searches out on a network (lc0_rocm/analysis/sizing.py):
searches and groups, rows a call, the fitted minibatch, the rows' order and
the shared answers' room. Pure functions: no native core needed."""
from __future__ import annotations

import pytest

from lc0_rocm import host
from lc0_rocm.backends.base import BackendAttributes


def test_the_memo_has_room_for_what_the_searches_write_before_a_successor_asks():
    from lc0_rocm.analysis.sizing import MEMO_MAX_ANSWERS, MEMO_MIN_ANSWERS, memo_answers
    assert memo_answers(256, 800) == 1 << 20        # t82's searches: 614,400 wanted
    assert memo_answers(128, 800) == 1 << 19        # 307,200
    assert memo_answers(256, 100) == MEMO_MIN_ANSWERS
    assert memo_answers(256, None) == MEMO_MIN_ANSWERS    # no limit known
    assert memo_answers(256, None, 0.5) == MEMO_MAX_ANSWERS   # a movetime alone: node count unknown
    assert memo_answers(256, 100, 0.5) == MEMO_MIN_ANSWERS    # the nodes bound it first
    assert memo_answers(4096, 100_000) == MEMO_MAX_ANSWERS
    for searches, nodes in ((1, 1), (64, 2000), (300, 700)):
        room = memo_answers(searches, nodes)
        assert room & (room - 1) == 0 and MEMO_MIN_ANSWERS <= room <= MEMO_MAX_ANSWERS
        assert room >= min(3 * searches * nodes, MEMO_MAX_ANSWERS)


@pytest.mark.parametrize("n,searches", [(0, 4), (7, 4), (33, 8), (2048, 256), (2048, 64), (1717, 512)])
def test_spread_order_keeps_neighbours_apart(n, searches):
    from lc0_rocm.analysis.sizing import spread_order
    order = spread_order(n, searches)
    assert sorted(order) == list(range(n))
    where = {row: job for job, row in enumerate(order)}
    block = 4 * searches
    for i in range(n - 1):
        if i // block != (i + 1) // block:
            continue                                  # a block's last row and the next block's first
        size = min(block, n - i // block * block)     # the last block may be short
        assert size // 2 - 1 <= abs(where[i + 1] - where[i]) <= (size + 1) // 2


class _Attributes:
    def __init__(self, recommended, runs_on_cpu=False):
        self.backend = self
        self.recommended = recommended
        self.runs_on_cpu = runs_on_cpu

    def attributes(self):
        return BackendAttributes(runs_on_cpu=self.runs_on_cpu, suggested_num_search_threads=2,
                                 recommended_batch_size=self.recommended, maximum_batch_size=1024)


def test_minibatch_fitted_to_the_nodes():
    from lc0_rocm.analysis.sizing import fitted_minibatch
    gpu = _Attributes(264)
    assert fitted_minibatch(gpu, {}, 100) == {"MinibatchSize": 32}
    assert fitted_minibatch(gpu, {}, 800) == {"MinibatchSize": 80}
    # The backend's recommended batch at most (not Engine's twice it, for the clock).
    assert fitted_minibatch(gpu, {}, 10000) == {"MinibatchSize": 264}
    assert fitted_minibatch(gpu, {}, None) == {}                         # movetime: no fit
    assert fitted_minibatch(gpu, {"minibatchsize": 16}, 100) == {"minibatchsize": 16}   # the user's wins
    assert fitted_minibatch(gpu, {"MinibatchSize": "0", "X": 1}, 800) == {"X": 1, "MinibatchSize": 80}
    assert fitted_minibatch(_Attributes(7, runs_on_cpu=True), {}, 100) == {}   # a CPU's 7 stays


def test_default_searches_follow_the_net(monkeypatch):
    """128 a group on a GPU; 8 a core for a small residual net there (its
    searches are bound by the host); 4 a group without merged GPU calls."""
    import types
    from lc0_rocm.analysis import sizing
    monkeypatch.setattr(host, "usable_cores", lambda: 16)
    small = types.SimpleNamespace(spec=types.SimpleNamespace(body="resnet", blocks=6, filters=64))
    tower = types.SimpleNamespace(spec=types.SimpleNamespace(body="resnet", blocks=20, filters=256))
    attention = types.SimpleNamespace(spec=types.SimpleNamespace(body="attention", blocks=0, filters=0))
    assert sizing.default_searches(small, True, 2) == 128
    assert sizing.default_searches(tower, True, 2) == sizing.default_searches(attention, True, 2) == 256
    assert sizing.default_searches(types.SimpleNamespace(spec=None), True, 2) == 256
    assert sizing.default_searches(small, False, 1) == 4


def test_small_residual_nets_call_the_gpu_with_fewer_rows():
    import types
    from lc0_rocm.analysis import sizing
    small = types.SimpleNamespace(spec=types.SimpleNamespace(body="resnet", blocks=6, filters=64))
    tower = types.SimpleNamespace(spec=types.SimpleNamespace(body="resnet", blocks=20, filters=256))
    assert sizing.call_rows(small, 264) == sizing.SMALL_TOWER_CALL == 128
    assert sizing.call_rows(small, 64) == 64                  # never above the backend's batch
    assert sizing.call_rows(tower, 264) == sizing.call_rows(types.SimpleNamespace(spec=None), 264) == 264


def test_fixed_calls_fill_the_batch_a_gpu_pass_runs_at():
    """A GPU backend pads a pass to its graph's size (graph_sizes): FIXED
    calls take that many rows, so none of a pass is padding the GPU pays
    for without being asked (264 runs as 288)."""
    import types
    from lc0_rocm.analysis import sizing
    from lc0_rocm.backends import native
    tower = types.SimpleNamespace(spec=types.SimpleNamespace(body="resnet", blocks=20, filters=256))
    small = types.SimpleNamespace(spec=types.SimpleNamespace(body="resnet", blocks=6, filters=64))
    for graphs, want in ((True, 288), (False, 264)):
        gpu = types.SimpleNamespace(max_batch=1024, _graphs=graphs)
        gpu.padded_size = types.MethodType(native.NativeBackend.padded_size, gpu)
        assert sizing.call_rows(types.SimpleNamespace(spec=tower.spec, backend=gpu), 264) == want
        assert sizing.call_rows(types.SimpleNamespace(spec=small.spec, backend=gpu), 264) == 128   # a bucket
    assert native.graph_sizes(264, 1024)[-1] == 288


def test_default_groups_follow_the_net():
    """4 streams for a small residual net on a GPU, 2 for others, 1 without a GPU."""
    import types
    from lc0_rocm.analysis import sizing
    small = types.SimpleNamespace(spec=types.SimpleNamespace(body="resnet", blocks=6, filters=64))
    tower = types.SimpleNamespace(spec=types.SimpleNamespace(body="resnet", blocks=20, filters=256))
    assert sizing.default_groups(small, True) == 4
    assert sizing.default_groups(tower, True) == sizing.default_groups(types.SimpleNamespace(spec=None), True) == 2
    assert sizing.default_groups(small, False) == 1
