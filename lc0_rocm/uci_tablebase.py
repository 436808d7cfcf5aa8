"""The UCI engine's Syzygy tables (SyzygyPath): opened when the option is
set, handed to the search for probing inside the tree, and a replaced set
closed only once the search no longer holds it."""
from __future__ import annotations

from lc0_rocm import syzygy


class TablebaseSlot:
    def __init__(self):
        self.tables = None            # the SyzygyPath tables now, or None
        self._retired: list = []      # replaced tables a running search may still probe
        self._engine_holds = None     # the tables the engine holds now

    def open(self, path: str) -> str | None:
        """Open the tables under `path` (empty: none); a summary line for
        the GUI, or None. SyzygyError when they cannot be opened."""
        if self.tables is not None:
            self._retired.append(self.tables)
            self.tables = None
        self.tables = syzygy.open_tablebases(path)
        if self.tables is None:
            return None
        return (f"Syzygy tablebases: {len(getattr(self.tables, 'wdl', {}))} WDL tables, "
                f"up to {syzygy.max_pieces(self.tables)} pieces")

    def engine_replaced(self) -> None:
        """A new engine holds no tables yet."""
        self._engine_holds = None

    def sync(self, engine) -> None:
        """Hand the tables to `engine`, when it can probe inside the tree
        (root probing is the UCI engine's), and close retired tables it no
        longer holds."""
        if self._engine_holds is not self.tables:
            setter = getattr(engine, "set_tablebase", None)
            if setter is not None:
                setter(self.tables)
            self._engine_holds = self.tables
        for old in self._retired:
            if old is not self._engine_holds:
                old.close()
        self._retired = [tb for tb in self._retired if tb is self._engine_holds]
