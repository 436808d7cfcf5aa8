"""The Parquet output's row groups: the records of each `group` input
positions (writers.PARQUET_BATCH) as one Arrow table, built column by
column from analysis.flat's values. A big run's groups are built on every
core, a part of whole groups per process (position_parts, `python -m` this
module), each into an Arrow file in a temporary folder beside the output, which the
writer reads back in order: the same tables as one process, which is also
what happens when a part's process fails. Cut by input positions, the
groups do not depend on how many parts there were.
"""
from __future__ import annotations

import pickle
import sys
import tempfile
from typing import Iterator

from lc0_rocm.analysis import flat, position_parts


def schema():
    import pyarrow as pa
    return pa.schema([
        ("source", pa.string()), ("line", pa.int64()), ("game", pa.int64()), ("ply", pa.int64()),
        ("fen", pa.string()), ("mode", pa.string()), ("wdl", pa.list_(pa.float64(), 3)),
        ("q", pa.float64()), ("score_cp", pa.int64()), ("mate", pa.int64()),
        ("moves_left", pa.float64()), ("best", pa.string()), ("pv", pa.list_(pa.string())),
        ("policy", pa.list_(pa.struct([("move", pa.string()), ("p", pa.float64())]))),
        ("nodes", pa.int64()), ("outcome", pa.string()), ("id", pa.string()), ("played", pa.string()),
        ("played_loss", pa.float64()), ("mark", pa.string())])


def tables(plan, cols: dict, mode: str, group: int, scratch: str | None = None) -> Iterator:
    """The row groups' tables in input order (none for a group whose rows
    the engine all refused)."""
    parts = position_parts.count(plan, group)
    if parts >= 2:
        total = len(plan.tasks)
        groups = -(-total // group)
        cuts = [min(total, groups * k // parts * group) for k in range(parts + 1)]
        with tempfile.TemporaryDirectory(prefix=".lc0-rocm-parquet-", dir=scratch) as folder:
            done = position_parts.run("lc0_rocm.analysis.parquet_parts", plan, cols, cuts, (mode, group), folder,
                                      ".arrow")
            if done is not None:
                import pyarrow as pa
                for out in done[0]:
                    with pa.memory_map(out) as source:
                        reader = pa.ipc.open_file(source)
                        for k in range(reader.num_record_batches):
                            yield pa.Table.from_batches([reader.get_batch(k)])
                return
    yield from group_tables(plan, cols, mode, group)


def group_tables(plan, cols: dict, mode: str, group: int, until: int | None = None) -> Iterator:
    """The tables of groups of `group` positions (those before `until`)."""
    for values, occurrences in flat.chunks(plan, cols, mode, size=group, until=until):
        if occurrences:
            batch = _Columns(mode, schema())
            batch.extend(values, occurrences)
            yield batch.table()


class _Columns:
    """A row group's columns, gathered from its occurrences."""

    def __init__(self, mode: str, schema):
        self.mode, self.schema = mode, schema
        self.data: dict[str, list] = {f.name: [] for f in schema}
        self.moves: list = []
        self.probs: list = []
        self.offsets = [0]

    def extend(self, values: dict, occurrences: list[tuple]) -> None:
        positions = [p for p, _, _, _ in occurrences]
        rows = [values[t] for _, t, _, _ in occurrences]
        for v in rows:
            for m, p in v.policy:
                self.moves.append(m)
                self.probs.append(p)
            self.offsets.append(len(self.moves))
        data = self.data
        data["source"] += [p.source for p in positions]
        data["line"] += [p.line for p in positions]
        data["game"] += [p.game for p in positions]
        data["ply"] += [p.ply for p in positions]
        data["fen"] += [p.fen for p in positions]
        data["mode"] += [self.mode] * len(rows)
        for name in ("wdl", "q", "score_cp", "mate", "moves_left", "best", "pv", "nodes", "outcome"):
            data[name] += [getattr(v, name) for v in rows]
        data["id"] += [p.id for p in positions]
        data["played"] += [p.played for p in positions]
        data["played_loss"] += [loss for _, _, loss, _ in occurrences]
        data["mark"] += [mark for _, _, _, mark in occurrences]

    def table(self):
        import pyarrow as pa
        policy = pa.ListArray.from_arrays(
            pa.array(self.offsets, pa.int32()),
            pa.StructArray.from_arrays([pa.array(self.moves, pa.string()), pa.array(self.probs, pa.float64())],
                                       fields=list(self.schema.field("policy").type.value_type)))
        return pa.Table.from_arrays([policy if f.name == "policy" else pa.array(self.data[f.name], f.type)
                                     for f in self.schema], schema=self.schema)


def main() -> int:
    """A part's process: (plan, columns, mode, group, until, out) pickled
    on stdin -> its groups' tables in the Arrow file OUT, a record batch
    each, how many pickled on stdout."""
    import pyarrow as pa
    plan, cols, mode, group, until, out = pickle.loads(sys.stdin.buffer.read())
    count = 0
    with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, schema()) as writer:
        for table in group_tables(plan, cols, mode, group, until):
            writer.write_batch(table.combine_chunks().to_batches()[0])
            count += 1
    sys.stdout.buffer.write(pickle.dumps(count, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
