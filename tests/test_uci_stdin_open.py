"""Issue 69: a GUI's races through the real engine process, then stdin left
open with nothing more sent: every `go` is answered all the same, and no
bestmove waits for a later line. A few tries each here;
`python3 scripts/uci_races.py --tries 20` runs the acceptance's 20."""
from __future__ import annotations

import pytest

from tests import uci_races

pytestmark = pytest.mark.real_engine
TRIES = 1


@pytest.mark.parametrize("race", uci_races.RACES, ids=lambda r: r.name)
def test_race_then_silence(tmp_path, maia_path, race):
    uci_races.run_races(tmp_path, maia_path, TRIES, races=[race])


def test_races_with_search_threads_picking_at_once(tmp_path, maia_path):
    """The same races on the sim backend: search threads with a slot each
    (a GPU's worker mode), picking with the pickers' lock shared."""
    uci_races.run_races(tmp_path, maia_path, TRIES, backend="sim")


def test_commands_written_together_to_a_new_process(tmp_path, maia_path):
    uci_races.run_fresh_process_races(tmp_path, maia_path, tries=1)


def test_a_bestmove_leaves_a_gap_after_the_line_before_it():
    """A GUI that selects on the pipe and reads through a buffer sees only
    the first of two lines arriving in one read: the bestmove comes a moment
    after the info line before it (scripts/uci_races.py --select-reader)."""
    import time
    from lc0_rocm.uci import BESTMOVE_GAP_S, UciEngine
    stamps = []
    engine = UciEngine(lambda line: stamps.append((time.monotonic(), line)))
    engine.send("info depth 1 nodes 1")
    engine.send("bestmove e2e4")
    engine.send("readyok")
    (t0, _), (t1, best), (t2, _) = stamps
    assert best == "bestmove e2e4" and t1 - t0 >= BESTMOVE_GAP_S
    assert t2 - t1 < BESTMOVE_GAP_S          # only a bestmove waits


def test_stop_latency_script_times_each_stop(tmp_path):
    """scripts/stop_latency.py (the GPU figure's script) on the random
    backend: every `go infinite` + `stop` answered with a legal move, timed."""
    import importlib.util
    import json
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "stop_latency.py"
    spec = importlib.util.spec_from_file_location("stop_latency", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "stop.json"
    assert script.main(["--backend", "random", "--tries", "3", "--wait", "0.05", "0.1", "--json", str(out)]) == 0
    ours = json.loads(out.read_text())["ours"]
    assert ours["tries"] == 3 and ours["all_legal"] and 0 < ours["median_ms"] <= ours["max_ms"] < 5000
