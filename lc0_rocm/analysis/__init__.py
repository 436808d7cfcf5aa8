"""Analysis at scale: many positions (PGN games, EPD suites, FEN lists)
through one network, in batches.

    import lc0_rocm
    for record in lc0_rocm.analyse("games.pgn", weights="maia-1900", nodes=100):
        print(record.ply, record.best, record.score_cp, record.mark)

`analyse` yields one `AnalysisRecord` per position, in input order (the
fields and their units: `help(lc0_rocm.analysis.AnalysisRecord)`). The
`lc0-rocm analyse` command does the same into files (JSONL, Parquet,
annotated PGN), resumably, over several GPUs or a Ray cluster; `lc0-rocm
suite` scores EPD test suites.

Modules: inputs (readers), plan (shards, manifest, resume), evaluate
(network-only batches), many (many searches at once in the native core),
worker / runner / ray_runner (who computes the shards), writers (outputs),
records, columns, settings, suite, cli.
"""
from __future__ import annotations

import os
from typing import Iterator

import chess

from lc0_rocm.analysis.records import AnalysisRecord

__all__ = ["AnalysisRecord", "analyse"]


def analyse(source, network=None, *, weights: str | None = None, backend: str = "auto",
            backend_opts: str | None = None, evaluate: bool = False, nodes: int | None = None,
            movetime: float | None = None, top_k: int = 3, every: int = 1, played: bool = False,
            options: dict | None = None, searches: int | None = None, batching: str = "auto",
            kind: str | None = None, shard_size: int | None = None) -> Iterator[AnalysisRecord]:
    """Analyse positions, yielding an AnalysisRecord per position in input order.

    `source`: a file (str or path: .pgn, .epd, else FEN lines; `kind`
    overrides) or a list of files, a chess.Board, or an iterable of boards
    and FEN strings. `network`: a loaded Network, else one is loaded from
    `weights` (a file or a fetched net's name; None: the default net, or no
    net for backend "random") on `backend` / `backend_opts` and closed at
    the end.

    `evaluate=True`: the network once per position (wdl, q, moves_left and
    the policy's `top_k` moves); otherwise a search of `nodes` visits and/or
    `movetime` seconds per position, many at once (`searches`, default
    by backend), with `options` (search knobs by lc0's UCI names; at a fixed
    node count smart pruning is off unless set, so results do not depend
    on timing). PGN: every position, or every `every`-th ply, `played`:
    only positions a move was played from. Positions the input repeats are
    computed once. A malformed line or game is skipped: its record is not
    yielded (the command line reports them in an errors file)."""
    from lc0_rocm.analysis.settings import Settings

    settings = Settings("eval" if evaluate else "search", nodes=nodes, movetime=movetime, top_k=top_k,
                        options=tuple((options or {}).items()), batching=batching, every=every,
                        played=played)
    from lc0_rocm.analysis.background import close_when_done, in_background
    loading = None
    if network is None:         # ours: loaded while the input is read and planned, closed at the end
        from lc0_rocm.network import load_network
        loading = in_background(lambda: load_network(weights, backend=backend, backend_opts=backend_opts))
    try:
        yield from _analyse_loaded(source, settings, network, loading, searches=searches, kind=kind,
                                   shard_size=shard_size, every=every, played=played, top_k=top_k)
    finally:
        if loading is not None:
            close_when_done(loading, lambda loaded: loaded.close())


# Names that are files, never FENs (a FEN holds spaces).
FILE_SUFFIXES = (".pgn", ".epd", ".fen", ".txt", ".gz")


def _input_files(source: str | os.PathLike | list) -> list[str] | None:
    """The files `source` names, or None when it holds positions: a path
    is a file, and so is a list whose entries are paths, files that exist
    or names like one (no spaces, a file's suffix). A file that is not
    there, a folder or no regular file is an AnalysisError: read as FENs
    it would be skipped without a word."""
    from lc0_rocm.analysis.inputs import check_input_files

    if isinstance(source, (str, os.PathLike)):
        names = [os.fspath(source)]
    else:
        if not source or not all(isinstance(s, (str, os.PathLike)) for s in source):
            return None
        if not any(isinstance(s, os.PathLike) or os.path.isfile(s)
                   or (not any(c.isspace() for c in s) and s.lower().endswith(FILE_SUFFIXES))
                   for s in source):
            return None
        names = [os.fspath(s) for s in source]
    check_input_files(names)
    return names


def _analyse_loaded(source, settings, network, loading, *, searches, kind, shard_size, every, played,
                    top_k) -> Iterator[AnalysisRecord]:
    """analyse()'s records: the input read and planned, then the network
    (`loading`'s when given) run over its shards."""
    from lc0_rocm.analysis import columns, writers
    from lc0_rocm.analysis.inputs import Selection, positions_from_items
    from lc0_rocm.analysis.pgn_parallel import read_positions
    from lc0_rocm.analysis.plan import default_shard_size, plan_from_positions
    from lc0_rocm.analysis.worker import ShardWorker

    if isinstance(source, chess.Board):
        items = positions_from_items([source])
    else:
        if not isinstance(source, (str, os.PathLike)):
            source = list(source)               # read once: it may be an iterator
        files = _input_files(source)
        if files is not None:
            items = read_positions(files, kind, Selection(every, played))
        else:
            items = positions_from_items(source)
    shard_size = shard_size or default_shard_size(settings.mode)
    plan = plan_from_positions(items, shard_size)
    if loading is not None:
        network = loading.result()
    worker = None
    try:
        worker = ShardWorker(settings, network=network, searches=searches)
        full = columns.empty(len(plan.rows), settings.mode, top_k)
        emitted = 0
        for k in range(plan.num_shards):
            rows = slice(k * shard_size, k * shard_size + len(plan.shard_rows(k)))
            columns.place(full, worker.compute(plan.shard_rows(k)), rows)
            for record in writers.records(plan, full, settings.mode, upto=rows.stop, start=emitted):
                emitted += 1
                if record is not None:
                    yield record
        for record in writers.records(plan, full, settings.mode, start=emitted):
            if record is not None:
                yield record
    finally:
        if worker is not None:
            worker.close()

