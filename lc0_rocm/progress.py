"""Progress of work that takes more than a couple of seconds (make-net,
loading a large net, the first native build, fetch-net), on stderr.

On a terminal it is a tqdm bar (the phase shown beside it); otherwise, as
in a log or a GUI's engine window, one line per phase. Without tqdm
installed the line form is used everywhere.
"""
from __future__ import annotations

import sys
from types import TracebackType
from typing import TextIO


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):   # closed or not a real file
        return False


class Progress:
    """`with Progress("make-net bt4", unit="B") as p: p.phase("serializing");
    p.set_total(n); p.advance(k)`. Phases print a line each when stderr is
    not a terminal; counts only move the bar."""

    def __init__(self, desc: str, total: int | None = None, unit: str = "it",
                 stream: TextIO | None = None) -> None:
        self.desc = desc
        self.stream = sys.stderr if stream is None else stream
        self.bar = None
        if _is_terminal(self.stream):
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=unit == "B",
                                unit_divisor=1024 if unit == "B" else 1000,
                                file=self.stream, leave=False, dynamic_ncols=True)

    def phase(self, label: str) -> None:
        """A new step of the work: beside the bar, or one line."""
        if self.bar is not None:
            self.bar.set_postfix_str(label, refresh=True)
        else:
            print(f"{self.desc}: {label}", file=self.stream, flush=True)

    def set_total(self, total: int) -> None:
        if self.bar is not None:
            self.bar.reset(total=total)

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
