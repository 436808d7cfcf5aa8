"""Analysis on a GPU backend (skipped without one): the eval stage on
page-locked buffers with the forward pass overlapping the encoding; many
searches on two streams, the same results whatever the number of searches
at once (merged rounds, and rounds padded to one batch size) and with
answers shared between them or not; the command
end to end with one worker per GPU."""
from __future__ import annotations

import json

import numpy as np
import pytest

from analysis_data import random_games, write_pgn
from lc0_rocm.analysis import cli
from lc0_rocm.analysis.evaluate import RowEvaluator
from lc0_rocm.analysis.inputs import board_of_row, board_position
from lc0_rocm.analysis.many import ManySearch
from lc0_rocm.analysis.sizing import SMALL_TOWER_CALL, call_rows
from lc0_rocm.backends import native
from lc0_rocm.bench import POSITIONS
from lc0_rocm.network import load_network

pytestmark = pytest.mark.gpu


def gpu_backend_or_skip() -> str:
    for name in ("rocm-auto", "cuda-auto"):
        if native.is_available(name)[0]:
            return name
    pytest.skip(f"no GPU backend usable here ({native.is_available('rocm')[1]}; "
                f"{native.is_available('cuda')[1]})")


@pytest.fixture(scope="module")
def gpu_net(maia_path):
    with load_network(str(maia_path), backend=gpu_backend_or_skip()) as net:
        yield net


def test_eval_stage_equals_evaluate_batch(gpu_net, tmp_path):
    boards = []
    for game in random_games(20, seed=31, max_plies=60):
        board = game.board()
        for move in game.mainline_moves():
            board.push(move)
            boards.append(board.copy())
    rows = [board_position("t", 1, b).row for b in boards]
    cols = RowEvaluator(gpu_net, top_k=1, chunk=100).run(rows)       # several chunks, overlapped
    evaluations = gpu_net.evaluate_batch([board_of_row(r) for r in rows])
    assert np.allclose(cols["wdl"], [e.wdl for e in evaluations], atol=2e-3)
    best = [max(e.policy, key=e.policy.get).uci() for e in evaluations]
    assert np.mean(np.array(best) == cols["best"]) > 0.97              # ties may round apart in fp16


@pytest.mark.parametrize("batching", ["auto", "fixed"])
def test_searches_do_not_depend_on_how_many_run_at_once(gpu_net, batching):
    """Calls of one size on a GPU ("auto" picks them there; merged rounds of
    varying size differed in q's 6th digit between 4 and 16 searches)."""
    rows = POSITIONS[:16]
    results = []
    for searches in (4, 16):
        many = ManySearch(gpu_net, {"SmartPruningFactor": 0}, searches=searches, batching=batching)
        try:
            assert many.groups == min(searches, 4)          # maia-1900: a small tower, 4 groups
            cols = many.run(rows, nodes=200)
            # Every call of one size: maia-1900's SMALL_TOWER_CALL rows.
            size = call_rows(gpu_net, gpu_net.backend.attributes().recommended_batch_size)
            assert size == SMALL_TOWER_CALL
            assert all(m["rows"] + m["padded_rows"] == m["calls"] * size for m in many.stats())
        finally:
            many.close()
        results.append([(str(b), str(p), float(q)) for b, p, q in zip(cols["best"], cols["pv"], cols["q"])])
    assert results[0] == results[1]


def test_shared_answers_change_no_search_on_the_gpu(gpu_net):
    """The memo hands a search what the GPU returned for the same planes in
    another call (of the same size): the trees are those without it."""
    import io
    import chess.pgn
    from analysis_data import OPERA
    game = chess.pgn.read_game(io.StringIO(OPERA))
    board, rows = game.board(), []
    for move in game.mainline_moves():
        rows.append(board_position("t", 1, board).row)
        board.push(move)
    results, hits = [], None
    for memo in (False, True):
        many = ManySearch(gpu_net, {"SmartPruningFactor": 0}, searches=16, memo=memo)
        try:
            cols = many.run(rows, nodes=300)
            if memo:
                hits = many.stats()[0]["memo_hits"]
        finally:
            many.close()
        results.append([(str(b), str(p), float(q)) for b, p, q in zip(cols["best"], cols["pv"], cols["q"])])
    assert results[0] == results[1]
    assert hits > 0


def test_command_on_the_gpu(maia_path, tmp_path, capsys):
    pgn = write_pgn(tmp_path / "g.pgn", random_games(2, seed=32, max_plies=30))
    for mode in (["--eval"], ["--nodes", "50"]):
        out = tmp_path / f"{mode[0][2:]}.jsonl"
        assert cli.main([str(pgn), "-o", str(out), "-w", str(maia_path), "-b", gpu_backend_or_skip(), *mode]) == 0
        records = [json.loads(line) for line in open(out)]
        assert records and all(r["best"] or r["outcome"] for r in records)
    capsys.readouterr()
