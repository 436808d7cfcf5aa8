"""Fuzz: 10,000+ random and garbled command lines through the UCI loop
(in-process, fake engine). No exception escapes, no internal error, no
hang, every output is one printable line, and the engine still plays after."""
from __future__ import annotations

import collections
import random
import threading
import time

import chess
import pytest

from lc0_rocm import uci
from tests.uci_fakes import Collector, FakeEngine, FakeLoader

N_LINES = 12000
TIME_LIMIT_S = 240

FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1",            # checkmated
    "7k/8/6QK/8/8/8/8/8 b - - 0 1",              # stalemate
    "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2",
]
OPTION_NAMES = ["Threads", "MinibatchSize", "NNCacheSize", "CPuct", "FpuValue", "MultiPV",
                "VerboseMoveStats", "ScoreType", "UCI_ShowWDL", "UCI_ShowMovesLeft", "Ponder",
                "MoveOverheadMs", "Slowmover", "Backend", "BackendOptions", "WeightsFile",
                "SyzygyPath", "UCI_Chess960", "LogFile", "NoSuchOption"]
VALUES = ["true", "false", "0", "1", "-1", "3", "1.5", "nan", "inf", "1e309", "cpu", "rocm",
          "auto", "WDL_mu", "x=1,y=2", "=", "", "99999999999999999999", "<autodiscover>", "0x10"]
GO_WORDS = ["wtime", "btime", "winc", "binc", "movestogo", "depth", "mate", "nodes", "movetime",
            "infinite", "ponder", "searchmoves"]
NUMBERS = ["0", "1", "2", "5", "10", "100", "-5", "1000", "30000", "abc", "", "1e3", "999999999999"]
COMMANDS = ["uci", "isready", "ucinewgame", "stop", "ponderhit", "quit", "debug", "wait",
            "xyzzy", "register", "position", "go", "setoption"]
# no '/' or '\\' in garbage, so a fuzzed LogFile value can never name a path outside the test folder
CHARS = "abcdefghijklmnopqrstuvwxyzKQRBNP0123456789 -_=.:;,!?\t\x00\x01\x7f\u00e9\u2654"


def random_move(rng, board):
    moves = list(board.legal_moves)
    if moves and rng.random() < 0.8:
        return rng.choice(moves).uci()
    return rng.choice(["e2e4", "a1a1", "e7e8q", "e7e8k", "zz", "0000", "e1g1", "h7h8n", "x"])


def random_position(rng):
    board = chess.Board(rng.choice(FENS)) if rng.random() < 0.5 else chess.Board()
    head = ["startpos"] if board.fen() == chess.STARTING_FEN and rng.random() < 0.5 else ["fen"] + board.fen().split()
    moves = []
    for _ in range(rng.randrange(0, 12)):
        text = random_move(rng, board)
        moves.append(text)
        try:
            board.push_uci(text)
        except ValueError:
            break
    tokens = ["position"] + head + (["moves"] + moves if moves or rng.random() < 0.1 else [])
    return tokens


def random_go(rng, max_words=5, number=None):
    """A random `go`; `number(word)` picks each limit's value (default: a
    mix of valid and garbled numbers)."""
    if number is None:
        def number(word):
            return rng.choice(["1", "2", "5", "0", "-3", "x"] if word in ("nodes", "depth") else NUMBERS)
    tokens = ["go"]
    for _ in range(rng.randrange(0, max_words)):
        word = rng.choice(GO_WORDS)
        tokens.append(word)
        if word in ("infinite", "ponder"):
            continue
        if word == "searchmoves":
            tokens += rng.sample(["e2e4", "d2d4", "g1f3", "a7a8", "zz"], rng.randrange(0, 4))
        else:
            tokens.append(number(word))
    return tokens


def random_setoption(rng):
    tokens = ["setoption"]
    if rng.random() < 0.9:
        tokens.append("name")
    tokens.append(rng.choice(OPTION_NAMES))
    if rng.random() < 0.9:
        tokens += ["value", rng.choice(VALUES)]
    return tokens


def garble(rng, tokens):
    """Drop, duplicate, swap or corrupt tokens."""
    tokens = list(tokens)
    for _ in range(rng.randrange(1, 3)):
        if not tokens:
            break
        i = rng.randrange(len(tokens))
        action = rng.random()
        if action < 0.25:
            del tokens[i]
        elif action < 0.5:
            tokens.insert(i, tokens[i])
        elif action < 0.75:
            j = rng.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        else:
            tokens[i] = "".join(rng.choice(CHARS) for _ in range(rng.randrange(0, 8)))
    return tokens


def random_line(rng):
    kind = rng.random()
    if kind < 0.1:
        return "".join(rng.choice(CHARS) for _ in range(rng.randrange(0, 60)))
    if kind < 0.35:
        tokens = random_position(rng)
    elif kind < 0.6:
        tokens = random_go(rng)
    elif kind < 0.75:
        tokens = random_setoption(rng)
    else:
        tokens = [rng.choice(COMMANDS)]
        if rng.random() < 0.2:
            tokens.append(rng.choice(["on", "off", "x", "name", "startpos"]))
    if tokens[0] == "quit" and rng.random() < 0.9:
        tokens[0] = "isready"   # keep most sessions going; quit is tested below
    if rng.random() < 0.3:
        tokens = garble(rng, tokens)
    sep = rng.choice([" ", " ", "  ", "\t"])
    return sep.join(tokens) + rng.choice(["", "", "\r", " "])


class FuzzEngine(FakeEngine):
    """The fake engine with a cap on work, so that a huge `go nodes` or
    `go movetime` in the fuzz stream cannot stall the run."""

    def search(self, board, *, nodes=None, movetime=None, infinite=False, **kwargs):
        if not infinite:
            nodes = min(nodes or 50, 50)
            movetime = None if movetime is None else min(movetime, 0.01)
        return super().search(board, nodes=nodes, movetime=movetime, infinite=infinite, **kwargs)


def test_fuzz_protocol_loop(tmp_path, monkeypatch, maia_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LC0_ROCM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    rng = random.Random(20261121)
    out = Collector()
    engine = uci.UciEngine(out, engine_class=FuzzEngine, network_loader=FakeLoader(), cwd=tmp_path)
    engine.handle(f"setoption name WeightsFile value {maia_path}")
    start = time.monotonic()
    quits = 0
    expected, answered = collections.Counter(), collections.Counter()
    for i in range(N_LINES):
        line = random_line(rng)
        if rng.random() < 0.2:    # often point the net at the real file again
            engine.handle(f"setoption name WeightsFile value {maia_path}")
        expected[ANSWERS.get(command_of(line))] += 1
        alive = engine.handle(line)
        if not alive:
            quits += 1
            engine = uci.UciEngine(out, engine_class=FuzzEngine, network_loader=FakeLoader(), cwd=tmp_path)
            engine.handle(f"setoption name WeightsFile value {maia_path}")
        assert time.monotonic() - start < TIME_LIMIT_S, f"too slow at line {i}"
        if len(out.lines) > 5000:
            answered.update(check_output(out.take()))
    engine.handle("stop")
    engine.handle("ucinewgame")                # waits for the last bestmove
    answered.update(check_output(out.take()))
    for answer in ANSWERS.values():            # every go one bestmove, every isready one readyok
        assert answered[answer] == expected[answer], (answer, answered[answer], expected[answer])

    # still serving after all that
    for command in ("ucinewgame", "setoption name UCI_Chess960 value false", "setoption name Ponder value false",
                    "setoption name Backend value cpu", "setoption name BackendOptions value ",
                    f"setoption name WeightsFile value {maia_path}", "position startpos moves e2e4", "isready"):
        engine.handle(command)
    out.wait_for("readyok")
    engine.handle("go nodes 3")
    best = out.wait_for("bestmove").split()[1]
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(best) in board.legal_moves
    assert engine.handle("quit") is False
    assert threading.active_count() < 10      # no search threads left behind


ANSWERS = {"go": "bestmove", "isready": "readyok", "uci": "uciok"}


def check_output(lines):
    """Checks each line; counts the answers among them."""
    counts = collections.Counter()
    for line in lines:
        assert "\n" not in line and "\r" not in line
        assert "internal error" not in line and "search failed" not in line, line
        counts[line.split(" ")[0]] += 1
    return counts


def test_random_bytes_through_the_real_process(tmp_path):
    """Raw bytes (invalid UTF-8, NULs, control characters, long lines) on
    stdin of `python -m lc0_rocm`: it keeps answering and exits cleanly."""
    import os
    import subprocess
    import sys
    rng = random.Random(7)
    chunks = []
    for _ in range(2000):
        n = rng.choice([0, 1, 5, 20, 80, 300, 5000])
        chunks.append(bytes(rng.randrange(256) for _ in range(n)).replace(b"/", b"_").replace(b"\\", b"_"))
    payload = b"\n".join(chunks) + b"\nisready\nxyzzy\n"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, LC0_ROCM_CACHE=str(tmp_path / "cache"), XDG_DATA_HOME=str(tmp_path),
               PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "lc0_rocm"], input=payload, capture_output=True,
                          timeout=120, cwd=tmp_path, env=env)
    out = proc.stdout.decode("utf-8", errors="replace").splitlines()
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert "readyok" in out and out[-1] == "Nothing happens."
    assert "Traceback" not in proc.stderr.decode(errors="replace")


# ---------------------------------------------------------------- the real engine

REAL_LINES = 800
REAL_GO_NUMBERS = {"nodes": ["1", "2", "5", "0", "-3", "x", "1e3"], "depth": ["1", "0", "x"],
                   "mate": ["1", "0", "-1", "x"]}
REAL_TIMES = ["0", "10", "50", "-5", "abc", "", "0x10"]


def real_paths(tmp_path, maia_path):
    """Paths a hostile GUI may name: too long, unreadable, devices, loops."""
    unreadable = tmp_path / "unreadable"
    unreadable.mkdir()
    (unreadable / "net.pb.gz").write_bytes(b"")
    unreadable.chmod(0)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    return [str(maia_path), str(tmp_path / ("n" * 300) / "x.pb.gz"), "/" + "p" * 5000, str(tmp_path),
            str(unreadable), str(unreadable / "net.pb.gz"), "/dev/null", "/dev/zero", "/dev/full",
            str(loop), str(tmp_path / "missing" / "x"), "<autodiscover>"]


def real_go(rng):
    """A random `go` whose search always ends: small limits, or none (it
    then ends at the next go/position/ucinewgame/stop)."""
    return random_go(rng, 4, lambda word: rng.choice(REAL_GO_NUMBERS.get(word, REAL_TIMES)))


def real_line(rng, paths):
    kind = rng.random()
    if kind < 0.2:
        name = rng.choice(["WeightsFile", "WeightsFile", "LogFile", "SyzygyPath"])
        choices = [p for p in paths if not (name == "LogFile" and p == paths[0])]
        tokens = ["setoption", "name", name, "value", rng.choice(choices)]
    elif kind < 0.45:
        tokens = real_go(rng)
    elif kind < 0.55:
        tokens = ["isready"]
    else:
        tokens = random_line(rng).split(" ")
        if tokens and tokens[0] == "go":
            tokens = real_go(rng)
        if any(t.strip() == "wait" for t in tokens) or "Backend" in tokens:
            tokens = ["isready"]        # wait may outlast a bounded test; other backends need a GPU
        if tokens and "LogFile" in tokens:
            tokens = ["setoption", "name", "LogFile", "value", rng.choice(paths[1:])]
    if rng.random() < 0.1:
        tokens = garble(rng, tokens)
    return " ".join(tokens).replace("\r", "")   # one line each, so the answers can be counted


def command_of(line):
    """The command the engine sees in `line` (its rule: the first known word)."""
    return next((t for t in line.lstrip("\ufeff").split() if t in uci.UciEngine.COMMANDS), None)


@pytest.mark.real_engine
def test_fuzz_real_engine_with_real_paths(tmp_path, maia_path):
    """Random and garbled lines, real file paths among the option values,
    into `python -m lc0_rocm` with maia: every `go` gets exactly one
    `bestmove`, every `isready` a `readyok`, every `uci` an `uciok`, no
    internal error, no traceback, and it exits on quit. The answers are
    awaited with nothing more sent after the last line (a GUI waiting for
    its move)."""
    from tests.uci_process import UciProcess
    rng = random.Random(20261122)
    paths = real_paths(tmp_path, maia_path)
    lines = [f"setoption name WeightsFile value {maia_path}", "setoption name Backend value cpu"]
    lines += [real_line(rng, paths) for _ in range(REAL_LINES)]
    lines = [line for line in lines if command_of(line) != "quit"]
    lines += ["stop"]      # ends a search still running; then nothing more is sent
    eng = UciProcess(tmp_path)
    try:
        for line in lines:
            eng.send(line)
        expected = {answer: 0 for answer in ANSWERS.values()}
        for line in lines:
            answer = ANSWERS.get(command_of(line))
            if answer:
                expected[answer] += 1
        # stdin stays open and silent: every answer must come without a later line
        for answer in ("bestmove", "readyok"):
            have = sum(line.split(" ")[0] == answer for line in eng.seen)
            if have < expected[answer]:
                eng.read_until(answer, count=expected[answer] - have, timeout=TIME_LIMIT_S)
        eng.send("quit")
        assert eng.wait_exit(60) == 0
        eng.quiet_for(1.0)
        for answer, count in expected.items():
            got = sum(line.split(" ")[0] == answer for line in eng.seen)
            assert got == count, (answer, got, count)
        check_output(eng.seen)
        assert "Traceback" not in eng.stderr_text(), eng.stderr_text()[-3000:]
        assert expected["bestmove"] > 50
    finally:
        (tmp_path / "unreadable").chmod(0o755)
        eng.close()
