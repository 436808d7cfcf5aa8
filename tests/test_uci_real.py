"""The real UCI engine: `python -m lc0_rocm` (and the uci/lc0-rocm.sh
launcher) started as a process with maia-1900 on the cpu backend and
driven through python-chess as a GUI drives it; its info lines and moves
against lc0 v0.32.1's where the lc0 binary is on PATH. The protocol's
in-process tests: test_uci.py."""
from __future__ import annotations

import pathlib
import shutil
import sys
import time

import chess
import chess.engine
import pytest


real = pytest.mark.real_engine  # drives `python -m lc0_rocm` with maia on the cpu backend


@pytest.fixture
def popen(maia_path):
    engines = []

    def start(**options):
        eng = chess.engine.SimpleEngine.popen_uci([sys.executable, "-m", "lc0_rocm"], timeout=60)
        engines.append(eng)
        eng.configure({"WeightsFile": str(maia_path), "Backend": "cpu", **options})
        eng.ping()     # isready: the net loads now, as a GUI's first isready does
        return eng

    yield start
    for eng in engines:
        eng.quit()


@real
def test_real_analyse_multipv_wdl(popen):
    eng = popen(UCI_ShowWDL=True)
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    infos = eng.analyse(board, chess.engine.Limit(nodes=60), multipv=3)
    assert len(infos) == 3
    moves = [info["pv"][0] for info in infos]
    assert len(set(moves)) == 3 and all(m in board.legal_moves for m in moves)
    for info in infos:
        assert "score" in info and "wdl" in info and sum(info["wdl"].pov(chess.WHITE)) == 1000


@real
def test_real_selfplay_game_to_a_legal_end(popen):
    """No adjudication and no draw claims: the game runs until checkmate,
    stalemate, insufficient material, fivefold repetition or the 75-move rule."""
    eng = popen()
    board = chess.Board()
    while not board.is_game_over(claim_draw=False):
        result = eng.play(board, chess.engine.Limit(nodes=1))
        assert result.move in board.legal_moves
        board.push(result.move)
        assert board.ply() < 2000
    assert board.outcome(claim_draw=False) is not None


@real
def test_real_infinite_then_stop_is_prompt(popen):
    eng = popen()
    board = chess.Board()
    with eng.analysis(board) as analysis:       # go infinite
        time.sleep(1.0)
        t0 = time.monotonic()
        analysis.stop()
        best = analysis.wait().move
        # the search checks `stop` between minibatches; a maia minibatch on a
        # busy 2-core cpu takes up to ~0.7 s, so allow a few of them
        assert time.monotonic() - t0 < 5.0
    assert best in board.legal_moves


@real
def test_real_ponder_then_ponderhit(popen):
    eng = popen()                        # python-chess sets Ponder itself
    board = chess.Board()
    first = eng.play(board, chess.engine.Limit(white_clock=5, black_clock=5), ponder=True)
    assert first.move in board.legal_moves and first.ponder is not None
    board.push(first.move)
    board.push(first.ponder)                         # the expected reply: ponderhit
    second = eng.play(board, chess.engine.Limit(white_clock=5, black_clock=5), ponder=True)
    assert second.move in board.legal_moves


def _debug_on(eng):
    eng.protocol.loop.call_soon_threadsafe(eng.protocol.debug, True)
    eng.ping()


@real
def test_real_option_changes_take_effect(popen, make_test_net):
    board = chess.Board()
    eng = popen(Threads=2, MinibatchSize=5)
    _debug_on(eng)
    info = eng.analyse(board, chess.engine.Limit(nodes=10))
    assert "'Threads': 2" in info["string"] and "'MinibatchSize': 5" in info["string"]
    eng.configure({"Threads": 1, "CPuct": 2.5})
    info = eng.analyse(board, chess.engine.Limit(nodes=10))
    assert "'Threads': 1" in info["string"] and "'CPuct': 2.5" in info["string"]

    # another net: reloaded, and the search uses it
    other = make_test_net("tiny-resnet", seed=3)
    eng.configure({"WeightsFile": str(other)})
    seen = []
    with eng.analysis(board, chess.engine.Limit(nodes=10)) as analysis:
        for line in analysis:
            if "string" in line:
                seen.append(line["string"])
    assert any(f"weights {other} backend cpu engine network Network({other}, backend=cpu" in s
               for s in seen), seen

    # a backend this machine lacks: an error and no move; the engine lives on
    eng.configure({"Backend": "rocm-fp16"})
    result = eng.play(board, chess.engine.Limit(nodes=1), info=chess.engine.INFO_ALL)
    assert result.move is None
    eng.configure({"Backend": "cpu"})
    assert eng.play(board, chess.engine.Limit(nodes=1)).move in board.legal_moves


@real
def test_real_clock_game_never_flags(popen):
    """A whole game at 2 s + 30 ms per side, timed as a GUI times it (go to
    bestmove, through python-chess): no flag. (Sudden death without an
    increment cannot be survived forever: every move costs ~10-30 ms of
    process and protocol latency, for lc0 too.)"""
    eng = popen()
    board = chess.Board()
    clock = {chess.WHITE: 2.0, chess.BLACK: 2.0}
    inc = 0.03
    while not board.is_game_over() and board.ply() < 200:
        t0 = time.monotonic()
        result = eng.play(board, chess.engine.Limit(white_clock=clock[chess.WHITE], black_clock=clock[chess.BLACK],
                                                    white_inc=inc, black_inc=inc))
        clock[board.turn] -= time.monotonic() - t0
        assert clock[board.turn] > 0, f"flagged at ply {board.ply()}"
        clock[board.turn] += inc
        board.push(result.move)


def test_launcher_script_speaks_uci(tmp_path):
    import os
    import pathlib
    import subprocess
    script = pathlib.Path(__file__).resolve().parent.parent / "uci" / "lc0-rocm.sh"
    env = dict(os.environ, LC0_ROCM_PYTHON=sys.executable, LC0_ROCM_ARGS="--backend=cpu")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(script), "--threads=1"], input="uci\nsetoption name Bogus value 1\nquit\n",
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[0].startswith("id name lc0-rocm v") and "uciok" in lines
    assert "info string error Unknown option: Bogus" in lines


INFO_KEYWORDS = {"depth", "seldepth", "time", "nodes", "score", "cp", "mate", "wdl", "movesleft",
                 "hashfull", "nps", "tbhits", "multipv", "pv", "string"}


PARITY_POSITIONS = [
    "startpos",
    "fen r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",
    "fen 8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "startpos moves e2e4 c7c5 g1f3",
    "fen 4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
]


def _uci_session(cmd, maia_path, backend, cwd=None):
    """(final info line, bestmove line) per PARITY_POSITIONS at `go nodes 60`."""
    import subprocess
    script = [f"setoption name WeightsFile value {maia_path}", f"setoption name Backend value {backend}",
              "setoption name UCI_ShowWDL value true", "setoption name MultiPV value 2",
              "setoption name Threads value 1"]
    for position in PARITY_POSITIONS:
        script += [f"position {position}", "go nodes 60", "wait"]
    proc = subprocess.run(cmd, input="\n".join(script + ["quit"]) + "\n", capture_output=True,
                          text=True, timeout=300, cwd=cwd)
    results, last = [], None
    for line in proc.stdout.splitlines():
        if line.startswith("info depth"):
            last = line
        elif line.startswith("bestmove"):
            results.append((last, line))
    return results


@real
@pytest.mark.skipif(shutil.which("lc0") is None, reason="needs the lc0 binary on PATH")
def test_real_output_matches_lc0(maia_path):
    """The same commands to lc0 v0.32.1 (eigen) and to us (cpu): info lines
    carry the same fields in the same order, and the moves agree."""
    root = pathlib.Path(__file__).resolve().parent.parent
    ours = _uci_session([sys.executable, "-m", "lc0_rocm"], maia_path, "cpu", cwd=root)
    theirs = _uci_session(["lc0"], maia_path, "eigen")
    assert len(ours) == len(theirs) == len(PARITY_POSITIONS)
    agree = 0
    for (our_info, our_best), (their_info, their_best) in zip(ours, theirs):
        keys = lambda line: [t for t in line.split() if t in INFO_KEYWORDS and t != "pv"]
        assert keys(our_info) == keys(their_info), (our_info, their_info)
        agree += our_best.split()[1] == their_best.split()[1]
    assert agree >= len(PARITY_POSITIONS) - 1, (ours, theirs)
