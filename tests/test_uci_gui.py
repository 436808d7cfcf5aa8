"""What a GUI can count on (issue 12), probed through the real engine
process (`python -m lc0_rocm`, maia-1900, cpu backend) as a hostile GUI
would: every `go` gets exactly one `bestmove`, in order; every `isready` a
`readyok`; end of input ends the process; a rejected position is never
searched. One test per point of the issue; every read has a timeout."""
from __future__ import annotations

import os
import shutil
import time

import chess
import pytest

from tests.uci_process import UciProcess

pytestmark = pytest.mark.real_engine


@pytest.fixture
def engines(tmp_path):
    started = []

    def start(cwd=None, **kwargs):
        eng = UciProcess(cwd or tmp_path, **kwargs)
        started.append(eng)
        return eng

    yield start
    for eng in started:
        eng.close()


def gos_answered(eng, gos):
    """Every `go` so far got exactly one bestmove: none is missing now, and
    none more arrives before the next readyok."""
    lines = eng.sync()
    assert len(eng.bestmoves()) == gos, (eng.bestmoves(), eng.seen[-20:])
    assert not any(line.startswith("bestmove") for line in lines)


def move_of(line):
    return chess.Move.from_uci(line.split()[1])


# 1 ------------------------------------------------------------------------
def test_1_race_sequence_never_loses_a_bestmove(engines, maia_path):
    """`go depth 1`, `ucinewgame`, `stop`, `isready`, `position`, `go nodes 50`
    at several timings: both gos are answered, each for its own position."""
    eng = engines().start(maia_path)
    after_e4 = chess.Board()
    after_e4.push_uci("e2e4")
    for pause in (0.0, 0.05, 0.4):
        before = len(eng.bestmoves())
        eng.send("go depth 1")
        time.sleep(pause)
        for line in ("ucinewgame", "stop", "isready", "position startpos moves e2e4", "go nodes 50"):
            eng.send(line)
        eng.read_until("bestmove", count=2)
        first, second = eng.bestmoves()[before:]
        assert move_of(first) in chess.Board().legal_moves
        assert move_of(second) in after_e4.legal_moves
        eng.send("position startpos")
    gos_answered(eng, 6)


# 2 ------------------------------------------------------------------------
def test_2_weights_path_errors_still_answer_isready_and_go(engines, maia_path, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    junk = tmp_path / "junk.pb.gz"
    junk.write_bytes(b"\x1f\x8b" + os.urandom(300))
    bad_paths = [tmp_path / ("x" * 300) / "net.pb.gz",      # a component over 255 characters
                 "/" + "y" * 5000,                           # a path over PATH_MAX
                 tmp_path, "/dev/zero", fifo, loop / "net.pb.gz", junk]
    eng = engines().start(maia_path)
    gos = 0
    for path in bad_paths:
        eng.send(f"setoption name WeightsFile value {path}")
        lines = eng.sync()
        assert any(line.startswith("info string error") for line in lines), (path, lines)
        assert not any("internal error" in line for line in lines), lines
        eng.send("go nodes 5")
        gos += 1
        lines = eng.read_until("bestmove")
        assert lines[-1] == "bestmove (none)" and any("info string error" in l for l in lines), lines
    eng.send(f"setoption name WeightsFile value {maia_path}")
    eng.send("go nodes 5")
    gos += 1
    assert move_of(eng.read_until("bestmove")[-1]) in chess.Board().legal_moves
    gos_answered(eng, gos)


# 3 ------------------------------------------------------------------------
BAD_GO = ["go depth abc", "go nodes 1e3", "go nodes 0x10", "go nodes 1_000",
          "go nodes 99999999999999999999999", "go movetime", "go wtime 1000 btime",
          "go mate 0", "go mate -1", "go nodes \u0661\u0662"]


def test_3_unparseable_go_answers_an_error_and_bestmove_none(engines, maia_path):
    eng = engines().start(maia_path)
    for line in BAD_GO:
        eng.send(line)
        got = eng.read_until("bestmove")
        assert got[-1] == "bestmove (none)", (line, got)
        assert any(l.startswith("info string error go") for l in got), (line, got)
    eng.send("stop")
    gos_answered(eng, len(BAD_GO))


# 4 ------------------------------------------------------------------------
def test_4_quit_works_after_the_logfile_failed(engines, maia_path):
    eng = engines().start(maia_path)
    eng.send("setoption name LogFile value /dev/full")
    eng.sync()
    eng.send("go nodes 3")
    eng.read_until("bestmove")
    eng.send("quit")
    assert eng.wait_exit(30) == 0
    assert "Traceback" not in eng.stderr_text()
    assert not any("internal error" in line for line in eng.seen), eng.seen


# 5 ------------------------------------------------------------------------
def test_5_every_go_gets_one_bestmove_in_order(engines, maia_path):
    """lc0's rule: a `go`, `position` or `ucinewgame` during a search stops
    it first, and that search still answers its `go`."""
    eng = engines().start(maia_path)
    start = chess.Board()
    after_e4 = chess.Board()
    after_e4.push_uci("e2e4")
    script = [
        ("go infinite", start), ("go nodes 5", start),                       # go during go
        ("go movetime 600000", start), ("position startpos moves e2e4", None),
        ("go nodes 99999999", after_e4), ("ucinewgame", None),
        ("go ponder wtime 1000 btime 1000", start), ("go depth 1", start),
        ("go infinite", start), ("stop", None),
    ]
    expected = []
    for line, board in script:
        eng.send(line)
        if board is not None:
            expected.append(board)
            eng.read_until("info")     # that search is under way
    eng.read_until("bestmove", count=len(expected) - len(eng.bestmoves()))
    moves = eng.bestmoves()
    assert len(moves) == len(expected)
    for line, board in zip(moves, expected):
        assert move_of(line) in board.legal_moves, (moves, line)
    gos_answered(eng, len(expected))


# 6 ------------------------------------------------------------------------
@pytest.mark.parametrize("go", ["go movetime 3600000", "go nodes 99999999999999", "go infinite"])
@pytest.mark.parametrize("close_stdout", [False, True])
def test_6_end_of_input_ends_a_long_search(engines, maia_path, go, close_stdout):
    eng = engines().start(maia_path)
    eng.send(go)
    eng.read_until("info")
    if close_stdout:          # the GUI was killed: both pipes close
        eng.close_stdout()
        time.sleep(1.0)       # the search's next info line meets the closed pipe
    started = time.monotonic()
    eng.proc.stdin.close()
    assert eng.wait_exit(20) == 0
    assert time.monotonic() - started < 20
    assert "Traceback" not in eng.stderr_text() and "BrokenPipe" not in eng.stderr_text()


# 7 ------------------------------------------------------------------------
REJECTED_POSITIONS = [
    "fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",   # malformed
    "fen 8/8/8/8/8/8/8/8 w - - 0 1",                                  # no kings
    "fen k6R/8/8/8/8/8/8/K7 w - - 0 1",                               # side not to move in check
    "startpos moves e2e4 e7e5 e1e3",                                  # an illegal move
    "startpos moves e2e4 zz",                                         # not a move
    "startpos junk",
]


@pytest.mark.parametrize("position", REJECTED_POSITIONS)
def test_7_a_rejected_position_is_never_searched(engines, maia_path, position):
    eng = engines().start(maia_path)
    eng.send("position startpos moves e2e4 e7e5")     # a valid one first
    eng.send(f"position {position}")
    eng.send("go nodes 5")
    got = eng.read_until("bestmove")
    assert got[-1] == "bestmove (none)" and any("info string error" in l for l in got), got
    eng.send("ucinewgame")
    eng.send("go nodes 5")                            # still no valid position
    assert eng.read_until("bestmove")[-1] == "bestmove (none)"
    eng.send("position startpos moves d2d4")
    eng.send("go nodes 5")
    board = chess.Board()
    board.push_uci("d2d4")
    assert move_of(eng.read_until("bestmove")[-1]) in board.legal_moves
    gos_answered(eng, 3)


# 8 ------------------------------------------------------------------------
def test_8_autodiscovered_net_is_kept_for_the_session(engines, maia_path, tmp_path):
    """A net file appearing in the working folder mid-game (here a
    half-downloaded one, newer than the first) does not switch nets."""
    folder = tmp_path / "games"
    folder.mkdir()
    shutil.copy(maia_path, folder / "maia-1900.pb.gz")
    eng = engines(cwd=folder).start(None)
    eng.send("position startpos")
    eng.send("go nodes 5")
    eng.read_until("bestmove")
    partial = folder / "newer-net.pb.gz"
    partial.write_bytes((folder / "maia-1900.pb.gz").read_bytes()[:5000])
    future = time.time() + 60
    os.utime(partial, (future, future))
    for _ in range(2):
        eng.send("position startpos moves e2e4")
        eng.send("go nodes 5")
        assert eng.read_until("bestmove")[-1] != "bestmove (none)"
    assert not eng.errors(), eng.errors()
    assert "newer-net" not in eng.stderr_text()
    gos_answered(eng, 3)


# 9 ------------------------------------------------------------------------
@pytest.mark.parametrize("fen,info", [("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", "info depth 0 score mate 0"),
                                      ("7k/8/6QK/8/8/8/8/8 b - - 0 1", "info depth 0 score cp 0")])
def test_9_infinite_with_no_legal_move_waits_for_stop(engines, maia_path, fen, info):
    eng = engines().start(maia_path)
    eng.send(f"position fen {fen}")
    eng.send("go infinite")
    assert eng.read_until("info")[-1] == info
    assert not any(l.startswith("bestmove") for l in eng.quiet_for(0.5))
    eng.send("stop")
    assert eng.read_until("bestmove")[-1] == "bestmove (none)"
    eng.send("go nodes 5")                      # not infinite: answered at once
    assert eng.read_until("bestmove")[-1] == "bestmove (none)"
    gos_answered(eng, 2)


def test_9_byte_order_mark_before_uci(engines):
    eng = engines()
    eng.send(b"\xef\xbb\xbfuci")
    assert eng.read_until("uciok")[-1] == "uciok"
    assert not eng.errors()


def test_9_huge_rule50_and_long_games_stay_finite(engines, maia_path):
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"] * 1250              # a 5,000-ply game
    eng = engines().start(maia_path)
    eng.send("setoption name UCI_ShowWDL value true")
    cases = [("fen 4k3/8/8/8/8/8/8/4K2R w K - 999999999 600", chess.Board("4k3/8/8/8/8/8/8/4K2R w K - 0 1")),
             ("fen 8/8/8/4k3/8/8/8/4K2R w - - 0 2600", chess.Board("8/8/8/4k3/8/8/8/4K2R w - - 0 1")),
             ("startpos moves " + " ".join(shuffle), chess.Board())]
    for position, board in cases:
        eng.send(f"position {position}")
        eng.send("go nodes 20")
        got = eng.read_until("bestmove")
        assert move_of(got[-1]) in board.legal_moves, got
        info = [l for l in got if l.startswith("info depth")][-1]
        assert " wdl " in info and "nan" not in info, info
    gos_answered(eng, len(cases))
    assert "RuntimeWarning" not in eng.stderr_text(), eng.stderr_text()[-2000:]
    assert not eng.errors(), eng.errors()


def test_random_backend_plays_without_any_net(engines, tmp_path, monkeypatch):
    """lc0's `random` backend needs no weights file: an empty folder and an
    empty cache still give a search and a legal bestmove."""
    monkeypatch.setenv("LC0ROCM_CACHE", str(tmp_path / "empty-cache"))
    eng = engines()
    eng.send("uci")
    eng.read_until("uciok")
    eng.send("setoption name Backend value random")
    eng.send("position startpos moves e2e4")
    eng.send("go nodes 300")
    lines = eng.read_until("bestmove")
    move = lines[-1].split()[1]
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(move) in board.legal_moves
    assert any(" nodes " in line for line in lines if line.startswith("info"))


def test_random_backend_still_wants_the_weights_file_it_was_given(engines, tmp_path, monkeypatch):
    """No net is fine for `random` when none was named; a WeightsFile the
    user set that is not there is an error, as on every other backend, not
    a search on no net that says it loaded 'None'."""
    monkeypatch.setenv("LC0ROCM_CACHE", str(tmp_path / "empty-cache"))
    eng = engines()
    eng.send("uci")
    eng.read_until("uciok")
    eng.send("setoption name Backend value random")
    eng.send(f"setoption name WeightsFile value {tmp_path / 'nonexistent.pb.gz'}")
    eng.send("go nodes 20")
    lines = eng.read_until("bestmove")
    assert lines[-1] == "bestmove (none)" and any("nonexistent.pb.gz" in l for l in lines if "error" in l), lines
    eng.send("setoption name WeightsFile value <autodiscover>")
    eng.send("go nodes 20")
    assert eng.read_until("bestmove")[-1] != "bestmove (none)"
    assert "Loaded weights file from: <none>" in eng.stderr_text()
