"""When a backend's forward passes ran on its device: the pass log that GPU
backends (device events) and the `sim` backend keep while asked to, and
what a search benchmark reads off it (how busy the device was, batch sizes).

A backend with a log has `pass_log_start()` (clears it and starts its
clock) and `pass_log() -> PassLog`.
"""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class PassLog:
    """Passes oldest first: begin and end in milliseconds since the log
    started (one timeline for every stream), positions per pass, stream."""

    begin_ms: np.ndarray
    end_ms: np.ndarray
    positions: np.ndarray
    stream: np.ndarray

    @classmethod
    def from_records(cls, records, count: int) -> "PassLog":
        """From a C array of structs with begin_ms, end_ms, positions, stream."""
        rows = [(r.begin_ms, r.end_ms, r.positions, r.stream) for r in records[0:count]]
        cols = list(zip(*rows)) if rows else [(), (), (), ()]
        return cls(np.asarray(cols[0], np.float64), np.asarray(cols[1], np.float64),
                   np.asarray(cols[2], np.int64), np.asarray(cols[3], np.int64))

    def __len__(self) -> int:
        return len(self.begin_ms)

    def within(self, begin_ms: float, end_ms: float) -> "PassLog":
        """The passes that began in [begin_ms, end_ms)."""
        keep = (self.begin_ms >= begin_ms) & (self.begin_ms < end_ms)
        return PassLog(self.begin_ms[keep], self.end_ms[keep], self.positions[keep], self.stream[keep])

    def busy_ms(self) -> float:
        """Milliseconds in which at least one pass ran (overlapping passes of
        several streams count once)."""
        if not len(self):
            return 0.0
        order = np.argsort(self.begin_ms, kind="stable")
        total, start, end = 0.0, self.begin_ms[order[0]], self.end_ms[order[0]]
        for b, e in zip(self.begin_ms[order[1:]], self.end_ms[order[1:]]):
            if b > end:
                total += end - start
                start, end = b, e
            else:
                end = max(end, e)
        return float(total + end - start)

    def summed_ms(self) -> float:
        """The passes' times added up (counts overlaps once per pass)."""
        return float(np.sum(self.end_ms - self.begin_ms))

    def histogram(self) -> dict[str, int]:
        """Passes by batch size in power-of-two buckets: "1", "2-3", "4-7", ..."""
        sizes, counts = np.unique(self.positions, return_counts=True)
        return batch_histogram(dict(zip(sizes.tolist(), counts.tolist())))

    def mean_batch(self) -> float:
        return float(np.mean(self.positions)) if len(self) else 0.0


def batch_histogram(passes_by_size: dict[int, int]) -> dict[str, int]:
    """{batch size: passes} in power-of-two buckets "1", "2-3", "4-7", ...,
    smallest first (sizes below 1 left out)."""
    out: dict[str, int] = {}
    for size, passes in passes_by_size.items():
        if size < 1:
            continue
        b = int(size).bit_length() - 1
        key = str(1 << b) if b == 0 else f"{1 << b}-{(2 << b) - 1}"
        out[key] = out.get(key, 0) + int(passes)
    return merge_histograms(out)


def merge_histograms(*histograms: dict[str, int]) -> dict[str, int]:
    """Bucketed histograms (batch_histogram's) added up, smallest bucket first."""
    out: dict[str, int] = {}
    for histogram in histograms:
        for key, passes in histogram.items():
            out[key] = out.get(key, 0) + passes
    return dict(sorted(out.items(), key=lambda kv: int(kv[0].split("-")[0])))
