"""The UCI engine.

In-process tests drive UciEngine with a fake engine and network
(tests/uci_fakes.py) to pin the protocol down; test_uci_real.py runs the
real `python -m lc0_rocm` with maia-1900 on the cpu backend through
python-chess."""
from __future__ import annotations

import sys
import time

import chess
import chess.engine
import pytest

import lc0_rocm
from lc0_rocm import uci, uci_main, uci_output, uci_parse
from tests.uci_fakes import Collector, FakeEngine, FakeLoader, SearchInfo


@pytest.fixture
def net_file(tmp_path, maia_path):
    return maia_path


@pytest.fixture
def session(net_file, tmp_path):
    """(UciEngine with fakes and WeightsFile set, output collector, loader)."""
    out = Collector()
    loader = FakeLoader()
    FakeEngine.instances.clear()
    engine = uci.UciEngine(out, engine_class=FakeEngine, network_loader=loader, cwd=tmp_path)
    engine.handle(f"setoption name WeightsFile value {net_file}")
    yield engine, out, loader
    engine.shutdown()


def bestmove(out, start=0, timeout=10.0):
    line = out.wait_for("bestmove", timeout=timeout, start=start)
    return line.split()[1]


def errors(out):
    return [line for line in out.lines if line.startswith("info string error")]


# ---------------------------------------------------------------- parsing / formatting

def test_parse_go_all_keywords():
    go = uci.parse_go("wtime 1000 btime 2000 winc 10 binc 20 movestogo 5 depth 3 nodes 7 "
                      "movetime 50 mate 2 infinite ponder searchmoves e2e4 d2d4 nodes 9".split())
    assert (go.wtime, go.btime, go.winc, go.binc, go.movestogo) == (1000, 2000, 10, 20, 5)
    assert (go.depth, go.movetime, go.mate, go.nodes) == (3, 50, 2, 9)
    assert go.infinite and go.ponder and go.searchmoves == ["e2e4", "d2d4"]
    assert uci.parse_go(["foo", "nodes", "5"]).ignored == ["foo"]
    for bad in (["nodes"], ["nodes", "x"], ["wtime", "infinite"], ["nodes", "9" * 30], ["nodes", "1e3"],
                ["nodes", "0x10"], ["nodes", "1_000"], ["nodes", "\u0661"], ["nodes", str(2**63)],
                ["mate", "0"], ["mate", "-1"]):
        with pytest.raises(uci.UciError):
            uci.parse_go(bad)


def test_parse_position():
    board, err = uci_parse.parse_position("startpos moves e2e4 e7e5 g1f3".split())
    assert err is None and board.fen() == chess.Board(
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2").fen()
    board, err = uci_parse.parse_position("fen k7/8/8/8/8/8/8/4K2R w K - 0 1 moves e1g1".split())
    assert err is None and board.piece_at(chess.F1) == chess.Piece.from_symbol("R")
    board, err = uci_parse.parse_position("startpos moves e2e4 e2e4 d2d4".split())
    assert "illegal move e2e4 at ply 2" in err and len(board.move_stack) == 1
    for bad in ([], ["fen"], ["fen", "xyz"], ["startpos", "junk"], ["junk"],
                "fen 8/8/8/8/8/8/8/8 w - - 0 1".split(),               # no kings
                "fen k7/8/8/8/8/8/8/K6P w - - 0 1".split(),             # pawn on back rank
                "fen k6R/8/8/8/8/8/8/K7 w - - 0 1".split()):            # side not to move in check
        with pytest.raises(uci.UciError):
            uci_parse.parse_position(bad)


def test_wdl_permille_like_lc0():
    assert uci_output.wdl_permille((0.5, 0.3, 0.2)) == (500, 300, 200)
    assert sum(uci_output.wdl_permille((0.3333, 0.3333, 0.3334))) == 1000
    assert uci_output.wdl_permille((600, 300, 100)) == (600, 300, 100)
    assert uci_output.wdl_permille(None) is None


def test_format_info_order_and_switches():
    info = SearchInfo(depth=0, seldepth=4, time_ms=12, nodes=30, nps=2500, multipv=2,
                      pv=[chess.Move.from_uci("e2e4"), chess.Move.from_uci("e7e5")],
                      wdl=(0.5, 0.3, 0.2), moves_left=33.6, tbhits=1, score_cp=21)
    line = uci.format_info(info, show_wdl=True, show_moves_left=True, multipv=True, extra_tbhits=2)
    assert line == ("info depth 1 seldepth 4 time 12 nodes 30 score cp 21 wdl 500 300 200 "
                    "movesleft 33 nps 2500 tbhits 3 multipv 2 pv e2e4 e7e5")
    line = uci.format_info(info, show_wdl=False, show_moves_left=False, multipv=False)
    assert "wdl" not in line and "movesleft" not in line and "multipv" not in line
    info.mate, info.score_cp = -3, None
    assert "score mate -3" in uci.format_info(info, show_wdl=False, show_moves_left=False, multipv=False)


# ---------------------------------------------------------------- protocol

def test_uci_lists_lc0_style_options(session):
    engine, out, _ = session
    engine.handle("uci")
    lines = out.take()
    assert lines[0] == f"id name lc0-rocm v{lc0_rocm.__version__}" and lines[1].startswith("id author")
    assert lines[-1] == "uciok"
    assert "option name WeightsFile type string default <autodiscover>" in lines
    assert "option name MoveOverheadMs type spin default 200 min 0 max 100000000" in lines
    assert "option name CPuct type string default 1.745000" in lines      # lc0 prints floats so
    assert "option name Threads type spin default 0 min 0 max 128" in lines
    assert any(l.startswith("option name Backend type combo default auto var auto var cpu") for l in lines)
    for name in ("Ponder", "SyzygyPath", "UCI_ShowWDL", "UCI_ShowMovesLeft", "LogFile", "MultiPV"):
        assert any(l.startswith(f"option name {name} ") for l in lines), name


def test_isready_loads_the_net_once(session, net_file):
    engine, out, loader = session
    engine.handle("isready")
    assert out.wait_for("readyok")
    assert len(loader.calls) == 1 and loader.calls[0][0] == str(net_file)
    assert not errors(out)
    engine.handle("isready")
    assert len(loader.calls) == 1


def test_go_before_position_searches_startpos(session):
    engine, out, _ = session
    engine.handle("go nodes 5")
    move = bestmove(out)
    assert chess.Move.from_uci(move) in chess.Board().legal_moves
    search = FakeEngine.instances[-1].searches.get(timeout=1)
    assert search["fen"] == chess.STARTING_FEN and search["nodes"] == 5
    assert search["thread"] == "lc0-rocm-search"


def test_position_and_bestmove_with_ponder(session):
    engine, out, _ = session
    engine.handle("position startpos moves e2e4 e7e5")
    engine.handle("go nodes 3")
    line = out.wait_for("bestmove")
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    _, best, _, ponder = line.split()
    assert chess.Move.from_uci(best) in board.legal_moves
    board.push_uci(best)
    assert chess.Move.from_uci(ponder) in board.legal_moves


@pytest.mark.parametrize("line", [
    "fooo", "position fen not/a/fen w - - 0 1", "position startpos moves e2e5",
    "setoption name NoSuchOption value 3", "setoption name Threads value many",
    "setoption name Threads value 100000", "setoption name Backend value gpu9000",
    "setoption value 3", "go nodes x", "ponderhit", "position", "go searchmoves a1a8",
    "setoption name SyzygyPath value /no/such/folder", "setoption name BackendOptions value x",
    "setoption name LogFile value /no/such/dir/log.txt",
])
def test_bad_input_gets_an_error_and_the_engine_keeps_serving(session, line):
    engine, out, _ = session
    assert engine.handle(line) is True
    assert errors(out), f"no error for {line!r}: {out.lines}"
    out.take()
    engine.handle("isready")
    out.wait_for("readyok")
    engine.handle("position startpos")
    engine.handle("go nodes 2")
    bestmove(out)


def test_unknown_tokens_before_a_command_are_skipped(session):
    engine, out, _ = session
    engine.handle("joho isready")
    assert out.wait_for("readyok")
    assert engine.handle("  ") and engine.handle("")


def test_missing_weights_file_is_reported_and_go_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("LC0_ROCM_CACHE", str(tmp_path / "emptycache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    out = Collector()
    engine = uci.UciEngine(out, engine_class=FakeEngine, network_loader=FakeLoader(), cwd=tmp_path)
    engine.handle("isready")
    assert out.wait_for("readyok")
    assert "no network file found" in errors(out)[0] and "fetch-net" in errors(out)[0]
    engine.handle(f"setoption name WeightsFile value {tmp_path / 'missing.pb.gz'}")
    engine.handle("go nodes 1")
    assert out.wait_for("bestmove") == "bestmove (none)"
    assert "weights file not found" in errors(out)[-1]


def test_infinite_waits_for_stop_and_isready_answers_meanwhile(session):
    engine, out, _ = session
    engine.handle("go infinite")
    time.sleep(0.2)
    engine.handle("isready")
    assert out.wait_for("readyok", timeout=1)
    assert not any(l.startswith("bestmove") for l in out.lines)
    t0 = time.monotonic()
    engine.handle("stop")
    move = bestmove(out, timeout=2)
    assert time.monotonic() - t0 < 1.0
    assert chess.Move.from_uci(move) in chess.Board().legal_moves
    assert FakeEngine.instances[-1].searches.get(timeout=1)["infinite"]


def test_infinite_holds_bestmove_even_when_search_ends_early(session):
    engine, out, _ = session
    engine.handle("position fen 7k/8/8/8/8/8/8/K7 w - - 0 1")   # the fake ends at once on nodes
    engine.handle("go infinite nodes 1")
    time.sleep(0.3)
    assert not any(l.startswith("bestmove") for l in out.lines)
    engine.handle("stop")
    bestmove(out)


def test_ponder_then_ponderhit_searches_with_the_clock(session):
    engine, out, _ = session
    engine.handle("setoption name Ponder value true")
    engine.handle("position startpos moves e2e4 e7e5")
    engine.handle("go ponder wtime 6000 btime 6000")
    fake = FakeEngine.instances[-1]
    first = fake.searches.get(timeout=2)
    assert first["infinite"] and first["movetime"] is None
    time.sleep(0.1)
    assert not any(l.startswith("bestmove") for l in out.lines)
    hit = time.monotonic()
    engine.handle("ponderhit")     # the ponder search goes on, until the move's budget is spent
    bestmove(out)
    assert 0.05 < time.monotonic() - hit < 6.0 - 0.2
    assert fake.searches.empty()
    time.sleep(0.1)
    assert len([l for l in out.lines if l.startswith("bestmove")]) == 1


def test_ponder_then_stop_sends_bestmove(session):
    engine, out, _ = session
    engine.handle("position startpos moves d2d4")
    engine.handle("go ponder btime 1000 wtime 1000")
    time.sleep(0.1)
    engine.handle("stop")
    bestmove(out)


def test_position_during_search_stops_it_with_its_bestmove(session):
    """lc0's rule: `position` during a search stops it, and that search
    still answers its `go`, before the new position takes effect."""
    engine, out, _ = session
    engine.handle("go infinite")
    time.sleep(0.05)
    engine.handle("position startpos moves e2e4")
    engine.handle("go nodes 2")
    out.wait_for("bestmove", start=out.lines.index(out.wait_for("bestmove")) + 1)
    time.sleep(0.1)
    first, second = [l.split()[1] for l in out.lines if l.startswith("bestmove")]
    board = chess.Board()
    assert chess.Move.from_uci(first) in board.legal_moves
    board.push_uci("e2e4")
    assert chess.Move.from_uci(second) in board.legal_moves


def test_stop_then_position_still_delivers_the_bestmove(session):
    engine, out, _ = session
    engine.handle("go infinite")
    time.sleep(0.05)
    engine.handle("stop")
    engine.handle("position startpos moves e2e4")
    bestmove(out)


def test_engine_options_are_forwarded(session):
    engine, out, _ = session
    engine.handle("setoption name Threads value 3")      # before the engine exists
    engine.handle("isready")
    out.wait_for("readyok")
    fake = FakeEngine.instances[-1]
    assert fake.options["Threads"] == 3
    engine.handle("setoption name cpuct value 2.5")       # names are case-insensitive
    engine.handle("setoption name MinibatchSize value 16")
    assert fake.options["CPuct"] == 2.5 and fake.options["MinibatchSize"] == 16
    assert not errors(out)


def test_weights_and_backend_changes_reload(session, tmp_path, net_file):
    engine, out, loader = session
    engine.handle("isready")
    out.wait_for("readyok")
    other = tmp_path / "other.pb.gz"
    other.write_bytes(net_file.read_bytes())
    engine.handle(f"setoption name WeightsFile value {other}")
    engine.handle("setoption name Backend value cpu")
    n = len(out.lines)
    engine.handle("isready")
    out.wait_for("readyok", start=n)
    assert loader.calls[-1][:2] == (str(other), "cpu")
    assert FakeEngine.instances[-1].network.path == str(other)
    assert len(FakeEngine.instances) == 1            # one engine, new network
    engine.handle("setoption name Backend value rocm")
    engine.handle("go nodes 1")
    assert out.wait_for("bestmove", start=0) and "backend rocm" in errors(out)[-1]
    engine.handle("setoption name BackendOptions value gpu=1,x=2")
    engine.handle("setoption name Backend value cpu")
    engine.handle("isready")
    assert loader.calls[-1][2] == {"backend_opts": {"gpu": "1", "x": "2"}}


def test_multipv_wdl_movesleft_lines(session):
    engine, out, _ = session
    for line in ("setoption name MultiPV value 3", "setoption name UCI_ShowWDL value true",
                 "setoption name UCI_ShowMovesLeft value true"):
        engine.handle(line)
    engine.handle("go nodes 4")
    bestmove(out)
    infos = [l for l in out.lines if l.startswith("info depth")]
    assert [l.split("multipv ")[1].split()[0] for l in infos] == ["1", "2", "3"]
    assert all(" wdl 400 300 300 " in l and " movesleft 40 " in l for l in infos)


def test_searchmoves_are_passed_and_illegal_ones_skipped(session):
    engine, out, _ = session
    engine.handle("go nodes 2 searchmoves e2e4 e2e5 g1f3")
    assert bestmove(out) in ("e2e4", "g1f3")
    search = FakeEngine.instances[-1].searches.get(timeout=1)
    assert [m.uci() for m in search["searchmoves"]] == ["e2e4", "g1f3"]


def test_no_legal_moves(session):
    engine, out, _ = session
    engine.handle("position fen 7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")
    engine.handle("go nodes 10")
    assert out.wait_for("bestmove") == "bestmove (none)"
    assert "info depth 0 score mate 0" in out.lines


def test_verbose_move_stats(session):
    engine, out, _ = session
    engine.handle("setoption name VerboseMoveStats value true")
    engine.handle("go nodes 3")
    bestmove(out)
    strings = [l for l in out.lines if l.startswith("info string ") and "N:" in l]
    assert len(strings) == 21 and strings[-1].startswith("info string node")
    assert out.lines.index(strings[-1]) < len(out.lines) - 1


def test_clock_gives_a_hard_deadline(session):
    engine, out, _ = session
    engine.handle("position startpos")
    engine.handle("go wtime 10000 btime 10000 winc 100 binc 100")
    bestmove(out)
    search = FakeEngine.instances[-1].searches.get(timeout=1)
    assert 0 < search["movetime"] <= (10000 - 200) / 1000 and search["time_budget"] == search["movetime"]
    assert search["nodes"] is None and not search["infinite"]
    engine.handle("go movetime 500")
    bestmove(out, start=len(out.lines))
    search = FakeEngine.instances[-1].searches.get(timeout=1)
    assert 0.2 < search["movetime"] <= 0.3    # 500 - MoveOverheadMs 200


def test_tiny_clock_searches_one_node(session):
    engine, out, _ = session
    engine.handle("go wtime 150 btime 150")
    bestmove(out)
    assert FakeEngine.instances[-1].searches.get(timeout=1)["nodes"] == 1


def test_logfile_records_both_directions(session, tmp_path):
    engine, out, _ = session
    log = tmp_path / "io.log"
    engine.handle(f"setoption name LogFile value {log}")
    engine.handle("isready")
    out.wait_for("readyok")
    engine.handle("setoption name LogFile value ")
    text = log.read_text()
    assert ">> isready" in text and "<< readyok" in text


class FakeTablebase:
    """probe_wdl from the side to move, by FEN board part."""

    def __init__(self, table):
        self.table = table
        self.wdl = {"KQvK": None, "KRvK": None}

    def probe_wdl(self, board):
        return self.table[board.board_fen()]

    def close(self):
        self.closed = True


def test_syzygy_root_filter(session):
    engine, out, _ = session
    board = chess.Board("8/8/8/4k3/8/8/8/K1Q5 w - - 0 1")
    table = {}
    for move in board.legal_moves:
        board.push(move)
        # from the opponent's side: say Qc5+ and Qe3+ only draw
        table[board.board_fen()] = 0 if move.uci() in ("c1c5", "c1e3") else -2
        board.pop()
    engine.tablebases.tables = FakeTablebase(table)
    engine.handle("position fen 8/8/8/4k3/8/8/8/K1Q5 w - - 0 1")
    engine.handle("go nodes 5")
    line = out.wait_for("info depth")
    search = FakeEngine.instances[-1].searches.get(timeout=1)
    kept = {m.uci() for m in search["searchmoves"]}
    assert kept == {m.uci() for m in board.legal_moves} - {"c1c5", "c1e3"}
    assert " tbhits " in line and int(line.split(" tbhits ")[1].split()[0]) == len(table)
    bestmove(out)


def test_quit_returns_false(session):
    engine, out, _ = session
    engine.handle("go infinite")
    assert engine.handle("quit") is False


def test_main_eof_stops_the_search_with_its_bestmove(monkeypatch, capsys, maia_path):
    import io
    monkeypatch.setattr(uci, "_default_engine_class", lambda: FakeEngine)
    monkeypatch.setattr(uci, "_default_network_loader", FakeLoader())
    monkeypatch.setattr(sys, "stdin", io.StringIO("uci\nisready\nposition startpos\ngo infinite\n"))
    assert uci_main.main([f"--weights={maia_path}", "--threads", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "uciok" in lines and "readyok" in lines and lines[-1].startswith("bestmove ")
    assert FakeEngine.instances[-1].options["Threads"] == 2


def test_main_rejects_bad_flags(capsys):
    assert uci_main.main(["--threads=lots"]) == 2
    assert "Threads" in capsys.readouterr().err
    for flags in (["-b"], ["--weights"], ["--threads", "--backend=random"]):
        assert uci_main.main(flags) == 2
        err = capsys.readouterr().err
        assert "needs a value" in err and "'true'" not in err, err


def test_main_takes_a_bare_check_flag_as_true(monkeypatch, capsys):
    import io
    monkeypatch.setattr(uci, "_default_engine_class", lambda: FakeEngine)
    monkeypatch.setattr(sys, "stdin", io.StringIO("uci\n"))
    seen = []
    original = uci.UciEngine.set_option

    def recording(self, name, text):
        seen.append((name, text))
        original(self, name, text)
    monkeypatch.setattr(uci.UciEngine, "set_option", recording)
    assert uci_main.main(["--show-wdl", "--verbose-move-stats"]) == 0
    assert seen == [("UCI_ShowWDL", "true"), ("VerboseMoveStats", "true")]
    assert "uciok" in capsys.readouterr().out


class StreamingEngine(FakeEngine):
    """Reports an info line every 5 ms with growing depth, and a mate score
    from depth 4 on, until stopped: for `go depth` and `go mate`."""

    def search(self, board, *, stop=None, on_info=None, **kwargs):
        self.searches.put(dict(kwargs, fen=board.fen()))
        move = next(iter(board.legal_moves))
        depth = 0
        while not stop.wait(0.005):
            depth += 1
            if on_info:
                on_info(SearchInfo(depth=depth, seldepth=depth, nodes=depth, move=move, pv=[move],
                                   mate=3 if depth >= 4 else None, score_cp=None if depth >= 4 else 5))
            if depth > 400:
                break
        return super().search(board, nodes=1, on_info=None)


@pytest.mark.parametrize("go,last_depth", [("go depth 3", 3), ("go mate 3", 4), ("go mate 2", None)])
def test_go_depth_and_mate_stop_the_search(maia_path, go, last_depth):
    out = Collector()
    engine = uci.UciEngine(out, engine_class=StreamingEngine, network_loader=FakeLoader())
    engine.handle(f"setoption name WeightsFile value {maia_path}")
    engine.handle(go)
    if last_depth is None:           # no mate in 2 is ever found: runs until stop
        time.sleep(0.2)
        assert not any(l.startswith("bestmove") for l in out.lines)
        engine.handle("stop")
    bestmove(out)
    depths = [int(l.split()[2]) for l in out.lines if l.startswith("info depth")]
    if last_depth is not None:
        assert max(depths) <= last_depth + 1       # at most one line in flight
    engine.shutdown()


def test_chess960_castling_king_takes_rook(session):
    engine, out, _ = session
    engine.handle("setoption name UCI_Chess960 value true")
    fen = "1k6/8/8/8/8/8/8/RK4R1 w GA - 0 1"
    engine.handle(f"position fen {fen} moves b1g1")          # O-O as king takes rook
    assert not errors(out), out.lines
    assert engine.board.king(chess.WHITE) == chess.G1 and engine.board.piece_at(chess.F1).symbol() == "R"
    engine.handle("go nodes 1")
    best = chess.Move.from_uci(bestmove(out))
    assert best in engine.board.legal_moves


def test_nn_index_matches_lc0_verbose_stats():
    # indices lc0 v0.32.1 prints in VerboseMoveStats (startpos: e2e4 322, b1a3 34)
    board = chess.Board()
    assert uci_output.nn_index(board, chess.Move.from_uci("e2e4")) == 322
    assert uci_output.nn_index(board, chess.Move.from_uci("b1a3")) == 34
    board = chess.Board("7k/5Q2/6K1/8/8/8/8/8 w - - 0 1")
    assert uci_output.nn_index(board, chess.Move.from_uci("f7f8")) == 1544
    black = chess.Board()
    black.push_uci("e2e4")                      # black's e7e5 is e2e4 in its own frame
    assert uci_output.nn_index(black, chess.Move.from_uci("e7e5")) == 322
    castle = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    from lc0_rocm import tables
    assert uci_output.nn_index(castle, chess.Move.from_uci("e1g1")) == tables.move_index("e1h1")


def test_autodiscover_uses_a_net_in_the_working_directory(tmp_path, maia_path, monkeypatch):
    monkeypatch.setenv("LC0_ROCM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    (tmp_path / "networks").mkdir()
    net = tmp_path / "networks" / "found.pb.gz"
    net.write_bytes(maia_path.read_bytes())
    out, loader = Collector(), FakeLoader()
    engine = uci.UciEngine(out, engine_class=FakeEngine, network_loader=loader, cwd=tmp_path)
    engine.handle("isready")             # WeightsFile is <autodiscover>
    out.wait_for("readyok")
    assert loader.calls[0][0] == str(net) and not errors(out)


class TablebaseEngine(FakeEngine):
    def set_tablebase(self, tablebase):
        self.tablebase_calls = getattr(self, "tablebase_calls", []) + [tablebase]


def test_tablebase_is_handed_to_the_search_once(maia_path):
    out = Collector()
    engine = uci.UciEngine(out, engine_class=TablebaseEngine, network_loader=FakeLoader())
    engine.handle(f"setoption name WeightsFile value {maia_path}")
    engine.handle("isready")
    out.wait_for("readyok")
    fake = TablebaseEngine.instances[-1]
    assert not hasattr(fake, "tablebase_calls")          # none set: nothing to hand over
    tb = FakeTablebase({})
    engine.tablebases.tables = tb                              # as SyzygyPath would set it
    engine.handle("go nodes 1")
    bestmove(out)
    engine.handle("isready")
    assert fake.tablebase_calls == [tb]
    engine.shutdown()


def test_replaced_tablebase_is_closed_after_the_search_lets_go(maia_path, tmp_path):
    out = Collector()
    engine = uci.UciEngine(out, engine_class=TablebaseEngine, network_loader=FakeLoader())
    engine.handle(f"setoption name WeightsFile value {maia_path}")
    old = engine.tablebases.tables = FakeTablebase({})
    engine.handle("go infinite")
    time.sleep(0.05)
    engine.handle("setoption name SyzygyPath value ")      # while the search holds `old`
    assert not hasattr(old, "closed")
    engine.handle("stop")
    bestmove(out)
    engine.handle("isready")                               # the engine gets None, then `old` closes
    out.wait_for("readyok")
    assert TablebaseEngine.instances[-1].tablebase_calls[-1] is None and old.closed
    engine.shutdown()


def test_quit_during_search_stops_it_and_answers(session):
    engine, out, _ = session
    engine.handle("go infinite")
    time.sleep(0.05)
    assert engine.handle("quit") is False
    assert not engine._searching()
    assert [l for l in out.lines if l.startswith("bestmove")] == [out.lines[-1]]


def test_eof_while_pondering_still_answers(session):
    engine, out, _ = session
    engine.handle("position startpos moves e2e4")
    engine.handle("go ponder wtime 1000 btime 1000")
    time.sleep(0.05)
    engine.shutdown()          # what main() does at end of input
    assert out.lines[-1].startswith("bestmove ")


def test_debug_reports_the_search_call(session):
    engine, out, _ = session
    engine.handle("debug on")
    engine.handle("setoption name Threads value 4")
    engine.handle("go nodes 2 searchmoves e2e4")
    bestmove(out)
    line = next(l for l in out.lines if l.startswith("info string debug"))
    assert "'nodes': 2" in line and "'searchmoves': ['e2e4']" in line and "'Threads': 4" in line
    engine.handle("debug off")
    n = len(out.lines)
    engine.handle("go nodes 2")
    bestmove(out, start=n)
    assert not any(l.startswith("info string debug") for l in out.lines[n:])


# ---------------------------------------------------------------- GUI guarantees, in-process
# (tests/test_uci_gui.py probes the same through the real engine process)

def test_autodiscovery_runs_once_not_per_go(tmp_path, maia_path, monkeypatch):
    from lc0_rocm import netfiles
    found = tmp_path / "net.pb.gz"
    found.write_bytes(maia_path.read_bytes())
    calls = []
    monkeypatch.setattr(netfiles, "find_default_net", lambda cwd=None: calls.append(cwd) or found)
    out = Collector()
    engine = uci.UciEngine(out, engine_class=FakeEngine, network_loader=FakeLoader(), cwd=tmp_path)
    for _ in range(3):
        engine.handle("isready")
        engine.handle("go nodes 1")
        engine.handle("wait")
    assert len(calls) == 1 and not errors(out)
    assert sum(line.startswith("bestmove") for line in out.lines) == 3
    engine.handle("setoption name WeightsFile value <autodiscover>")   # setting it looks again
    assert len(calls) == 2
    engine.shutdown()


@pytest.mark.parametrize("exc", [PermissionError(13, "Permission denied"),
                                 OSError(36, "File name too long"), RuntimeError("boom")])
def test_any_weights_failure_still_answers_isready_and_go(tmp_path, monkeypatch, exc):
    from lc0_rocm import netfiles

    def fail(*args, **kwargs):
        raise exc
    monkeypatch.setattr(netfiles, "resolve_weights", fail)
    out = Collector()
    engine = uci.UciEngine(out, engine_class=FakeEngine, network_loader=FakeLoader(), cwd=tmp_path)
    engine.handle("isready")
    assert out.lines[-1] == "readyok" and errors(out)
    engine.handle("go nodes 1")
    assert out.lines[-1] == "bestmove (none)"
    engine.shutdown()


def test_lost_output_stops_the_search_and_ends_the_loop(session):
    engine, out, _ = session
    engine.handle("go infinite")
    time.sleep(0.05)
    engine.output_lost()
    FakeEngine.instances[-1].searches.get(timeout=1)
    for _ in range(100):
        if not engine._searching():
            break
        time.sleep(0.01)
    assert not engine._searching()
    assert engine.handle("isready") is False


def test_a_failing_bestmove_path_still_answers(session, monkeypatch):
    """A bug between the search and the bestmove line still answers the go."""
    engine, out, _ = session
    monkeypatch.setattr(uci, "bestmove_line", lambda board, result: 1 / 0)
    engine.handle("go nodes 2")
    assert bestmove(out) == "(none)"
    assert any("internal error in go" in line for line in errors(out))


def test_time_manager_lives_through_a_game_and_resets_on_a_new_one(session):
    engine, out, _ = session
    engine.handle("position startpos moves e2e4")
    tm = engine.tm
    engine.handle("position startpos moves e2e4 e7e5 g1f3")
    assert engine.tm is tm
    engine.handle("position startpos moves e2e4 e7e5 e1e3")      # rejected: then a new game starts
    engine.handle("position startpos moves e2e4 e7e5 g1f3 b8c6")
    assert engine.tm is not tm
    tm = engine.tm
    engine.handle("position startpos moves d2d4")
    assert engine.tm is not tm


@pytest.mark.parametrize("option", ["LogFile", "SyzygyPath", "WeightsFile"])
@pytest.mark.parametrize("value", ["a\x00b", "/dev/full", "/" + "x" * 300 + "/y", "/proc/self/mem", "/tmp"])
def test_hostile_paths_in_options_get_plain_errors(session, option, value):
    engine, out, _ = session
    engine.handle(f"setoption name {option} value {value}")
    engine.handle("isready")
    engine.handle("go nodes 1")
    bestmove(out)
    assert out.lines.count("readyok") == 1
    assert not any("internal error" in line for line in out.lines), out.lines
    assert engine.handle("quit") is False
