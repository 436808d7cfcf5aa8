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


def test_commands_written_together_to_a_new_process(tmp_path, maia_path):
    uci_races.run_fresh_process_races(tmp_path, maia_path, tries=1)
