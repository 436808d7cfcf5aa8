"""Issue 69's smaller UCI points: `go perft` without a depth, BackendOptions
checked when set, LogFile timestamps from one clock reading, and a GUI that
closes the engine's output (the engine exits without waiting for input)."""
from __future__ import annotations

import time

import pytest

from lc0_rocm import uci
from tests.uci_fakes import Collector, FakeEngine, FakeLoader
from tests.uci_process import UciProcess


@pytest.fixture
def session(tmp_path, maia_path):
    out = Collector()
    engine = uci.UciEngine(out, engine_class=FakeEngine, network_loader=FakeLoader(), cwd=tmp_path)
    engine.handle(f"setoption name WeightsFile value {maia_path}")
    yield engine, out
    engine.shutdown()


@pytest.mark.parametrize("args", ["", "x", "0", "1 2"])
def test_go_perft_without_a_depth_answers_an_error_and_bestmove_none(session, args):
    engine, out = session
    engine.handle(f"go perft {args}")
    assert out.lines[-2].startswith("info string error go perft")
    assert out.lines[-1] == "bestmove (none)"


def test_go_perft_with_a_depth_still_counts(session):
    engine, out = session
    engine.handle("go perft 2")
    assert out.lines[-1] == "Nodes searched: 400"


@pytest.mark.parametrize("value", ["threads=-5", "threads=0", "threads=x", "max_batch=0", "(gpu=-1)",
                                   "backend=cpu,(threads=-2)"])
def test_backend_options_with_a_bad_count_are_refused_and_the_previous_kept(session, value):
    engine, out = session
    engine.handle("setoption name BackendOptions value threads=2")
    engine.handle(f"setoption name BackendOptions value {value}")
    assert out.lines[-1].startswith("info string error BackendOptions:") and "integer" in out.lines[-1]
    assert engine.values["BackendOptions"] == "threads=2"


def test_logfile_stamp_is_one_clock_reading(tmp_path, monkeypatch):
    log = uci.IoLog()
    log.open(str(tmp_path / "log.txt"))
    instant = 1_700_000_000.9999996          # a hair before a second boundary
    monkeypatch.setattr(uci.time, "time", lambda: instant)
    log.write(">>", "isready")
    log.close()
    line = (tmp_path / "log.txt").read_text()
    expected = time.strftime("%m%d %H:%M:%S", time.localtime(instant)) + ".999999 >> isready\n"
    assert line == expected


@pytest.mark.real_engine
def test_closed_output_ends_the_engine_while_stdin_stays_open(tmp_path, maia_path):
    """The GUI closes our stdout (not stdin): the search stops, and the engine
    exits instead of waiting for more input."""
    eng = UciProcess(tmp_path).start(maia_path)
    try:
        eng.send("go infinite")
        eng.read_until("info")
        eng.close_stdout()
        assert eng.wait_exit(30) == 0       # stdin is still open
        assert "Traceback" not in eng.stderr_text()
    finally:
        eng.close()
