"""A GUI's usual races through the real engine process, with stdin left open
afterwards as a GUI leaves it while it waits for the move (issue 69).

Each race sends a few lines (one by one, or all in one write) and then sends
NOTHING more: every `go` must still get its bestmove. A bestmove that comes
only once the GUI writes again would hang an analysis GUI and lose a game on
time. Used by tests/test_uci_stdin_open.py (a few tries) and
scripts/uci_races.py (20 tries each, for a loaded machine)."""
from __future__ import annotations

import dataclasses
import os

import chess

from tests.uci_process import UciProcess

FEN = "4k3/8/8/8/8/8/8/4K2R w K - 0 1"
NEW_POSITION = f"position fen {FEN}"
ANSWER_TIMEOUT_S = 30.0   # the cpu backend on two shared cores: 40 nodes take well under 1 s


@dataclasses.dataclass(frozen=True)
class Race:
    """`lines` sent after `position startpos moves e2e4`; each `go` in them
    must get a bestmove legal in the position it was sent for."""
    name: str
    lines: tuple[str, ...]


RACES = [
    Race("go+stop", ("go wtime 60000 btime 60000", "stop", NEW_POSITION, "go nodes 40")),
    Race("infinite+stop", ("go infinite", "stop", NEW_POSITION, "go nodes 40")),
    Race("go+ucinewgame", ("go infinite", "ucinewgame", NEW_POSITION, "go nodes 40")),
    Race("position-during-search", ("go infinite", NEW_POSITION, "go nodes 40")),
    Race("go-during-search", ("go infinite", "go nodes 40")),
    Race("ponder+ponderhit", ("go ponder nodes 40", "ponderhit", NEW_POSITION, "go nodes 40")),
    Race("ponder+stop", ("go ponder wtime 60000 btime 60000", "stop", NEW_POSITION, "go nodes 40")),
    Race("stop-storm", ("go infinite", *(["stop"] * 12), NEW_POSITION, "go nodes 40")),
    Race("position+go", (NEW_POSITION, "go nodes 40")),
]
START = "position startpos moves e2e4"


def expected_positions(race: Race) -> list[chess.Board]:
    """The position each `go` of the race searches, in order."""
    board = chess.Board()
    board.push_uci("e2e4")
    boards = []
    for line in race.lines:
        if line.startswith("position fen"):
            board = chess.Board(line.split(" ", 2)[2])
        elif line == "ucinewgame":
            board = chess.Board()
        elif line.startswith("go"):
            boards.append(board.copy())
    return boards


def write(eng: UciProcess, lines, joined: bool) -> None:
    """The lines as a GUI writes them: one write each, or all in one."""
    if joined:
        eng.proc.stdin.write("".join(line + "\n" for line in lines).encode())
        eng.proc.stdin.flush()
    else:
        for line in lines:
            eng.send(line)


def await_bestmoves(eng: UciProcess, count: int, what: str) -> list[str]:
    """The next `count` bestmoves, read while sending nothing."""
    before = len(eng.bestmoves())
    try:
        eng.read_until("bestmove", count=count, timeout=ANSWER_TIMEOUT_S)
    except AssertionError as e:
        raise AssertionError(f"{what}: {len(eng.bestmoves()) - before} of {count} bestmoves "
                             f"with stdin open and nothing more sent: {e}") from None
    return eng.bestmoves()[before:]


def run_race(eng: UciProcess, race: Race, joined: bool) -> None:
    """One try of `race` on a started engine; AssertionError says what went wrong."""
    what = f"{race.name} ({'one write' if joined else 'line by line'})"
    boards = expected_positions(race)
    write(eng, [START, *race.lines], joined)
    got = await_bestmoves(eng, len(boards), what)
    for line, board in zip(got, boards):
        move = chess.Move.from_uci(line.split()[1])
        assert move in board.legal_moves, f"{what}: {line} is not legal in {board.fen()}"
    lines = eng.sync()   # nothing more owed: no extra bestmove before readyok
    assert not any(line.startswith("bestmove") for line in lines), f"{what}: extra {lines}"


def run_races(cwd, weights, tries: int, races=RACES, backend: str = "cpu") -> None:
    """Every race `tries` times, line by line and in one write, on one engine
    process (`backend`: sim runs search threads with a slot each, which
    pick at once, as on a GPU)."""
    eng = UciProcess(cwd).start(weights, backend=backend)
    try:
        for race in races:
            for joined in (False, True):
                for _ in range(tries):
                    run_race(eng, race, joined)
    finally:
        eng.close()


# ---------------------------------------------------------------- fresh processes

def uci_isready_in_one_write(cwd, weights) -> None:
    """`uci`, WeightsFile and `isready` in one write to a new process:
    uciok, then readyok (the net loads in between)."""
    eng = UciProcess(cwd)
    try:
        write(eng, ["uci", f"setoption name WeightsFile value {weights}", "isready"], joined=True)
        eng.read_until("uciok", timeout=ANSWER_TIMEOUT_S)
        eng.read_until("readyok", timeout=ANSWER_TIMEOUT_S)
    finally:
        eng.close()


def setoption_isready_go_in_one_write(cwd, bad_weights) -> None:
    """`uci`, a WeightsFile that cannot load, `isready` and `go nodes 10` in
    one write: readyok and `bestmove (none)` with nothing more sent."""
    eng = UciProcess(cwd)
    try:
        write(eng, ["uci", f"setoption name WeightsFile value {bad_weights}", "isready",
                    "go nodes 10"], joined=True)
        eng.read_until("readyok", timeout=ANSWER_TIMEOUT_S)
        got = await_bestmoves(eng, 1, "uci+setoption+isready+go")
        assert got == ["bestmove (none)"], got
    finally:
        eng.close()


def position_go_in_one_write(cwd, weights) -> None:
    """`position` + `go` in one write right after start-up."""
    eng = UciProcess(cwd)
    try:
        write(eng, ["uci", f"setoption name WeightsFile value {weights}",
                    "setoption name Backend value cpu", START, "go nodes 20"], joined=True)
        got = await_bestmoves(eng, 1, "position+go after start")
        board = chess.Board()
        board.push_uci("e2e4")
        assert chess.Move.from_uci(got[0].split()[1]) in board.legal_moves
    finally:
        eng.close()


def run_fresh_process_races(cwd, weights, tries: int) -> None:
    bad = os.path.join(str(cwd), "not-a-net.pb.gz")
    with open(bad, "wb") as f:
        f.write(b"\x1f\x8b" + b"\0" * 64)
    for _ in range(tries):
        uci_isready_in_one_write(cwd, weights)
        setoption_isready_go_in_one_write(cwd, bad)
        position_go_in_one_write(cwd, weights)

