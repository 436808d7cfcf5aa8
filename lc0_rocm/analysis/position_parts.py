"""Writing a big run's output on every core: the run's positions cut into
parts, each sent with the columns of the rows it names to a Python process
of its own (`python -m` a writer module: no multiprocessing, which would
import the caller's main script again), which writes its part into a file
in a temporary folder; the caller joins the files in order.
"""
from __future__ import annotations

import concurrent.futures
import os
import pickle

from lc0_rocm import host
from lc0_rocm.analysis import pgn_parallel
from lc0_rocm.analysis.plan import Plan

# Positions a part at least (~1.5 s of JSONL lines on the project's VM's core; a process takes ~0.3 s to start).
PART_POSITIONS = 50_000
# Positions a part at most: a part's payload is held here while its process
# runs (~0.3 KB a position, pickled and not), a core's part at a time.
PART_MOST = 200_000


def count(plan, granule: int = 1) -> int:
    """How many parts: one per core, or more where a core's share would
    pass PART_MOST positions (they run a core each at a time, so what the
    parts hold here stays bounded however big the run); each of
    PART_POSITIONS or more and a whole number of `granule` positions (1:
    none to write alone)."""
    positions = len(plan.tasks)
    cores = host.usable_cores()
    if cores < 2:
        return 1
    return min(max(cores, -(-positions // PART_MOST)), positions // PART_POSITIONS, -(-positions // granule))


def part_of(plan, cols: dict, start: int, stop: int) -> tuple[Plan, dict]:
    """Positions start..stop-1 and the one after them (its value gives the
    last one's played-move loss) as a Plan of their own, and the columns
    of the rows they name."""
    positions, named = plan.positions.part(start, min(len(plan.tasks), stop + 1))
    return Plan(positions=positions), {name: column[named] for name, column in cols.items()}


def run(module: str, plan, cols: dict, cuts: list[int], extra: tuple, folder: str,
        suffix: str) -> tuple[list[str], list] | None:
    """`python -m module` on each part [cuts[k], cuts[k + 1]) of the
    positions, fed (the part's Plan with the next position, whose value
    gives the last one's loss; the columns of its rows; *extra; the part's
    length; its output file): the files in order and what each process
    answered, or None when one failed."""
    outs = [os.path.join(folder, f"part{k}{suffix}") for k in range(len(cuts) - 1)]

    def one(k: int):
        start, stop = cuts[k], cuts[k + 1]
        payload = (*part_of(plan, cols, start, stop), *extra, stop - start, outs[k])
        return pgn_parallel.run_module(module, [], pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))

    with concurrent.futures.ThreadPoolExecutor(min(len(outs), host.usable_cores()),
                                               thread_name_prefix="output-part") as pool:
        answers = list(pool.map(one, range(len(outs))))
    return None if any(a is None for a in answers) else (outs, answers)
