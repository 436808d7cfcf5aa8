"""`lc0-rocm suite` (lc0_rocm/analysis/suite.py): the shipped tactics suite's
answers are proven by python-chess; the solved set equals searching each
position with Engine.search at the same nodes; bm, am and c0 scoring."""
from __future__ import annotations

import json
import pathlib
import sys

import chess
import pytest

from lc0_rocm.analysis import suite
from lc0_rocm.engine import Engine
from lc0_rocm.network import load_network

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import make_tactics_suite  # noqa: E402


def test_shipped_suite_answers_are_proven():
    lines = [line for line in suite.SHIPPED.read_text().splitlines() if line and not line.startswith("#")]
    assert len(lines) == sum(make_tactics_suite.PER_KIND.values())
    for line in lines:
        assert make_tactics_suite.check_line(line) == "", line


def engine_solved(network, problems, nodes) -> list[bool]:
    engine = Engine(network, SmartPruningFactor=0, Threads=1)
    solved = []
    for p in problems:
        engine.new_game()
        solved.append(suite.score(p, engine.search(p.board, nodes=nodes).best_move).solved)
    return solved


@pytest.mark.parametrize("net", ["random", "maia"])
def test_suite_solves_what_engine_search_solves(net, maia_path):
    problems, errors = suite.read_suite(str(suite.SHIPPED))
    assert not errors
    nodes = 60 if net == "random" else 12
    with load_network(None if net == "random" else str(maia_path),
                      backend="random" if net == "random" else "cpu") as network:
        outcomes = suite.run_suite(problems, network, nodes=nodes, searches=4)
        assert [o.solved for o in outcomes] == engine_solved(network, problems, nodes)
    if net == "maia":       # a real net finds nearly all mates in one and free queens
        assert sum(o.solved for o in outcomes if o.problem.id.startswith(("mate1", "capture"))) >= 14


def test_scoring_of_bm_am_and_c0(tmp_path):
    path = tmp_path / "s.epd"
    path.write_text("\n".join([
        'r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - bm Qxf7#; id "a";',
        'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - am g4 f3; id "b";',
        'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - c0 "e4=10, d4=9, Nf3=5"; id "c";',
        'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - id "nothing to score";',
        'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - bm Ke2; id "illegal bm";',
    ]) + "\n")
    problems, errors = suite.read_suite(str(path))
    assert [p.id for p in problems] == ["a", "b", "c"]
    assert ":4: no bm, am or c0" in errors[0] and ":5:" in errors[1]
    a, b, c = problems
    move = chess.Move.from_uci
    assert suite.score(a, move("f3f7")).solved and not suite.score(a, move("c4f7")).solved
    assert suite.score(b, move("e2e4")).solved and not suite.score(b, move("g2g4")).solved
    assert suite.score(c, move("e2e4")).solved and suite.score(c, move("d2d4")).points == 9
    assert not suite.score(c, move("d2d4")).solved and suite.score(c, move("a2a3")).points == 0


def test_command_prints_a_table_or_json(capsys, tmp_path):
    assert suite.main(["-b", "random", "--nodes", "30"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["#", "id", "best"]
    assert out.splitlines()[-1].startswith("solved ") and "points" in out.splitlines()[-1]
    assert suite.main(["-b", "random", "--nodes", "30", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["total"] == 28 and report["max_points"] == 80 and len(report["positions"]) == 28
    assert suite.main([str(tmp_path / "missing.epd"), "-b", "random"]) == 2
    empty = tmp_path / "empty.epd"
    empty.write_text("# nothing\n")
    assert suite.main([str(empty), "-b", "random"]) == 1
    assert "no position to score" in capsys.readouterr().err


def test_suite_reads_gzip_and_a_byte_order_mark_and_names_few_skips(tmp_path, capsys):
    """A suite saved by a Windows editor (a BOM) or gzipped reads as the
    plain file does; a file that is not EPD at all names its first skipped
    lines and counts the rest, not one line per chunk of bytes."""
    import gzip
    import random
    from lc0_rocm.analysis import suite
    line = '4k3/8/8/8/8/8/8/4K2R w K - bm Rh8+; id "mate";\n'
    (tmp_path / "bom.epd").write_bytes(b"\xef\xbb\xbf" + line.encode())
    with gzip.open(tmp_path / "s.epd.gz", "wt") as f:
        f.write(line)
    for name in ("bom.epd", "s.epd.gz"):
        problems, errors = suite.read_suite(str(tmp_path / name))
        assert [p.id for p in problems] == ["mate"] and errors == [], (name, errors)
    rng = random.Random(5)
    (tmp_path / "junk.epd").write_bytes(bytes(rng.randrange(256) for _ in range(20000)))
    assert suite.main([str(tmp_path / "junk.epd"), "-b", "random", "--nodes", "5"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) <= suite.MAX_SKIPS_SHOWN + 2 and "more lines" in err[-2], err
