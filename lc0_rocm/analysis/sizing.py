"""How the analysis's many searches are laid out on a network: how many at
once and in how many groups (a mux and a GPU stream each), the rows of
each network call, the minibatch fitted to a node count, the order the
rows are searched in and the room of the network answers they share
(the memo). Measured choices, each with its figures; many.py runs them.
"""
from __future__ import annotations

from lc0_rocm import host
from lc0_rocm.engine import default_minibatch

# Network answers the searches share (lc0core_eval_memo.h): the next
# position of a game meets much of the tree of the one before, searched
# ~2 x searches jobs later (spread_order). Room for what all the searches
# write meanwhile (memo_answers), ~350 bytes an answer (its ring and its
# slots), the ring's memory touched only as answers come.
MEMO_MIN_ANSWERS = 1 << 18
MEMO_MAX_ANSWERS = 1 << 20


# A residual tower this small (blocks x filters^2; maia's 6 x 64^2 is 24,576)
# computes a row in a few microseconds on a GPU, less than the host needs to
# walk a tree to it: its searches are bound by the host.
SMALL_TOWER = 6 * 128 * 128


def small_tower(network) -> bool:
    spec = getattr(network, "spec", None)
    return spec is not None and spec.body == "resnet" and spec.blocks * spec.filters ** 2 <= SMALL_TOWER


def default_groups(network, gpu: bool) -> int:
    """Groups (a mux and a GPU stream each) on a GPU: 4 for a small residual
    net, whose rounds are short, so more of them overlap (H200, 2,000
    real-game positions, maia-1900, 64 searches, 800 nodes: 939 positions/s
    searching with 2 groups, 1,312 with 4, 1,247 with 8); 2 otherwise (t82
    at 100 nodes: 272 positions/s with 2 or 4). 1 elsewhere."""
    if not gpu:
        return 1
    return 4 if small_tower(network) else 2


def default_searches(network, batched_gpu: bool, groups: int) -> int:
    """Searches at once: on a GPU with merged calls, 128 a group, enough
    rows a round to fill the calls of a net the GPU takes its time over;
    but 8 a core for a small residual net, whose searches are bound by the
    host (H200 host, 16 cores, 2,000 real-game positions, maia-1900, calls
    of SMALL_TOWER_CALL rows: 128 searches 4,388 positions/s searching at
    100 nodes and 1,762 at 800, against 4,103-4,153 and 1,555-1,660 with
    64 and 3,818 and 1,326 with 32; with calls of 264 rows, 64 searches
    837 at 800 nodes and 2,332 at 100 against 656 and 1,532 with 256).
    Elsewhere 4 a group."""
    if not batched_gpu:
        return 4 * groups
    if small_tower(network):
        return max(8 * groups, 8 * host.usable_cores())
    return 128 * groups


# Rows of every network call of a small residual net's analysis on a GPU
# (FIXED batching pads each call to one size). Its rounds carry ~100-230
# rows, which calls of the backend's 264 mostly padded: H200, maia-1900,
# 2,000 real-game positions, 64 searches, searching positions/s at 100 /
# 800 nodes, two runs each in turns: calls of 264 3,644-3,970 / 1,252-1,447,
# of 128 4,103-4,153 / 1,555-1,660, of 64 4,301-4,401 / 1,422-1,438.
SMALL_TOWER_CALL = 128


def call_rows(network, recommended: int) -> int:
    """Rows of each FIXED network call on a GPU: the backend's recommended
    batch, at most SMALL_TOWER_CALL for a small residual net, rounded up to
    the batch such a call runs at anyway (the GPU library pads a pass to
    its graph's size: a call of 264 rows, an H100's or H200's recommended
    batch, computes 288, so 24 more rows a call cost nothing)."""
    rows = min(recommended, SMALL_TOWER_CALL) if small_tower(network) else recommended
    padded = getattr(getattr(network, "backend", None), "padded_size", None)
    return padded(rows) if callable(padded) else rows


def fitted_minibatch(network, options: dict, nodes: int | None) -> dict:
    """`options` with MinibatchSize fitted to a fixed node count when the
    user left it automatic: nodes / 10, at least 32, at most the backend's
    recommended batch. Measured before StrictNodes, when a search stopped
    only between batches, so one batch of 264 leaves overshot a 100-node
    search by half (t82, H200, 2,000 London positions at 100 nodes: 161
    nodes a position with 264, 113 with 32, and the searching stage 295 ->
    412 positions/s; at 800 nodes 886 -> 827 nodes with 64, 58.7 -> 63.9
    positions/s). The mux still fills the GPU's
    calls from many searches. (Engine's own default on a GPU, twice the
    recommended batch, is for searches against the clock.)"""
    if nodes is None or any(k.lower() == "minibatchsize" and str(v).strip() not in ("0", "")
                            for k, v in options.items()):
        return options
    backend = getattr(network, "backend", None)
    if backend is None:
        return options
    attributes = backend.attributes()
    fitted = min(max(32, int(nodes) // 10), int(attributes.recommended_batch_size))
    if fitted == default_minibatch(attributes):   # a CPU's 7 stays as it is
        return options
    return {**{k: v for k, v in options.items() if k.lower() != "minibatchsize"}, "MinibatchSize": fitted}


def spread_order(n: int, searches: int) -> list[int]:
    """The order to search n rows in with `searches` at once: blocks of
    4 x searches rows, each its even rows then its odd ones, so that rows
    next to each other (a game's successive positions) are ~2 x searches
    jobs apart: one starts once the other has finished and finds its
    network answers in the memo (searched side by side, both would ask for
    them at once), and few other answers come between."""
    block = 4 * max(1, searches)
    order: list[int] = []
    for start in range(0, n, block):
        end = min(n, start + block)
        order += [*range(start, end, 2), *range(start + 1, end, 2)]
    return order


def memo_answers(searches: int, nodes: int | None, movetime: float | None = None) -> int:
    """The memo's room for `searches` at once of `nodes` each: a power of
    two from 3 x searches x nodes (a row's answers are asked for again up
    to ~3 x searches jobs after its first ones), within MEMO_MIN_ANSWERS
    and MEMO_MAX_ANSWERS (~365 MB: an H100 t82 run that filled it peaked
    0.45 GB above one with 2^18). At t82's 256 searches of 800 nodes 2^18
    answers dropped what the next position wanted: maia-1900 at those
    settings, 2,000 London positions, H100, 35.6 % of the requests
    answered by the memo against 41.1 % with 2^20, the network's rows a
    position 389 -> 356. Searches bound only by `movetime` get the most:
    their node count is unknown, and the ring's memory is touched only as
    answers come, so a short run pays for what it writes (maia-1900 at
    0.25 s a position, H100: 38 % of the requests answered against 18 %
    with 2^18, the rows a position -19 %, +0.2 GB peak); no limit at all,
    the least."""
    if not nodes or nodes < 1:
        return MEMO_MAX_ANSWERS if movetime else MEMO_MIN_ANSWERS
    wanted = 3 * max(1, searches) * int(nodes)
    answers = MEMO_MIN_ANSWERS
    while answers < wanted and answers < MEMO_MAX_ANSWERS:
        answers *= 2
    return answers
