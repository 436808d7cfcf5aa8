"""Network-only analysis of rows ("FEN [moves ...]"): the native core encodes
a chunk of rows in one call, the backend runs it, the core takes each row's
softmax and top moves in one more; the results stay numpy arrays (columns),
never a Python object per position. On a GPU backend encoding, the forward
pass and finishing run on three threads, a chunk apart (the native steps
run without the GIL).

Without the native core the same columns come from python-chess boards and
`Network.evaluate_batch`.
"""
from __future__ import annotations

import concurrent.futures
import os
import threading

import numpy as np

from lc0_rocm.analysis import columns
from lc0_rocm.backends.base import NUM_PLANES, POLICY_SIZE

MAX_MOVES = 256


def _uci_table() -> np.ndarray:
    """UCI text by python-chess's 16-bit move code."""
    from lc0_rocm import native_encoder
    return np.array([m.uci() if m is not None else "" for m in native_encoder.move_table()], dtype="U5")


_table_lock = threading.Lock()
_UCI: np.ndarray | None = None


def uci_table() -> np.ndarray:
    global _UCI
    with _table_lock:
        if _UCI is None:
            _UCI = _uci_table()
        return _UCI


class RowEvaluator:
    """Evaluates rows on `network`, `chunk` rows per forward pass."""

    def __init__(self, network, top_k: int = 3, chunk: int | None = None, threads: int | None = None):
        self.network = network
        self.top_k = int(top_k)
        backend = getattr(network, "backend", None)
        self.gpu = getattr(backend, "device_info", None) is not None
        # A GPU pass takes at most the backend's max_batch rows.
        self.chunk = int(chunk or (getattr(backend, "max_batch", 1024) if self.gpu else 256))
        self.threads = int(threads or min(8, os.cpu_count() or 1))
        from lc0_rocm import native_core
        self.native = native_core.load() if native_core.available()[0] else None

    def run(self, rows: list[str]) -> dict[str, np.ndarray]:
        """The eval columns (analysis.columns) of `rows`, in order."""
        if self.native is None:
            return self._run_python(rows)
        out = self._run_native(rows)
        from lc0_rocm.analysis.inputs import row_error
        for i in np.flatnonzero(out["error"] != ""):       # rows the engine refused: say why
            columns.set_row(out, int(i), error=row_error(rows[i]) or "refused by the engine")
        return out

    def _run_native(self, rows: list[str]) -> dict[str, np.ndarray]:
        out = columns.empty(len(rows), "eval", self.top_k)
        chunks = [(start, rows[start:start + self.chunk]) for start in range(0, len(rows), self.chunk)]
        if not chunks:
            return out
        if not self.gpu or len(chunks) == 1:
            buffers = _Buffers(self.network, self.chunk)
            for start, part in chunks:
                self._encode(buffers, part)
                self._forward(buffers, len(part))
                self._finish(buffers, len(part), start, out)
            return out
        # GPU: three stages on three threads, a chunk apart: this one encodes
        # chunk i + 1 while a worker runs chunk i's forward pass and another
        # finishes chunk i - 1 (top moves, columns). Each stage keeps its
        # order (one thread each); a chunk's buffers are reused three chunks
        # later, once it is finished. (Two stages, encoding and finishing on
        # one thread, left maia-1900's pass waiting: 0.41x of backendbench.)
        buffers = [_Buffers(self.network, self.chunk) for _ in range(3)]
        finished: list = [None, None, None]
        pool = concurrent.futures.ThreadPoolExecutor
        with pool(1, thread_name_prefix="lc0-rocm-forward") as forwarding, \
                pool(1, thread_name_prefix="lc0-rocm-finish") as finishing:
            for i, (start, part) in enumerate(chunks):
                b = buffers[i % 3]
                if finished[i % 3] is not None:
                    finished[i % 3].result()          # its buffers are free again
                self._encode(b, part)
                forwarded = forwarding.submit(self._forward, b, len(part))
                finished[i % 3] = finishing.submit(self._finish_after, forwarded, b, len(part), start, out)
            for future in finished:
                if future is not None:
                    future.result()
        return out

    def _finish_after(self, forwarded, b: "_Buffers", n: int, start: int, out: dict) -> None:
        forwarded.result()                            # rethrows a failed forward pass
        self._finish(b, n, start, out)

    # ------------------------------------------------------------ native steps
    def _encode(self, b: "_Buffers", rows: list[str]) -> None:
        ffi, lib = self.native
        from lc0_rocm import native_core
        text = ("\0".join(rows) + "\0").encode()
        n = len(rows)
        p = b.pointer
        native_core.check(lib.lc0core_encode_rows(
            n, text, len(text), int(self.network.input_format), self.threads,
            p("uint64_t*", b.masks), p("float*", b.values), p("int32_t*", b.transforms),
            p("uint16_t*", b.moves), p("int16_t*", b.indices), p("int32_t*", b.counts),
            p("int32_t*", b.flags), p("int32_t*", b.status)))

    def _forward(self, b: "_Buffers", n: int) -> None:
        self.network.forward_packed_into(b.masks[:n], b.values[:n], (b.policy[:n], b.wdl[:n], b.moves_left[:n]))

    def _finish(self, b: "_Buffers", n: int, start: int, out: dict) -> None:
        ffi, lib = self.native
        from lc0_rocm import native_core
        k = self.top_k
        top = np.empty((n, k), dtype=np.int16)
        probs = np.empty((n, k), dtype=np.float32)
        p = b.pointer
        native_core.check(lib.lc0core_policy_top(
            n, p("float*", b.policy), p("int16_t*", b.indices), p("int32_t*", b.counts), 1.0, k,
            self.threads, ffi.cast("int16_t*", top.ctypes.data), ffi.cast("float*", probs.ctypes.data)))
        end = start + n
        status = b.status[:n]
        codes = np.take_along_axis(b.moves[:n], np.maximum(top, 0).astype(np.int64), axis=1)
        codes = np.where(top >= 0, codes, 0)           # past a row's moves the buffer holds anything
        names = np.where(top >= 0, uci_table()[codes], "")
        counts = b.counts[:n]
        columns.fill_eval(out, slice(start, end), status != 0, b.wdl[:n], b.moves_left[:n],
                          self.network.has_moves_left, names, probs, counts == 0,
                          (b.flags[:n] & 1) != 0)

    # ------------------------------------------------------------ no native core
    def _run_python(self, rows: list[str]) -> dict[str, np.ndarray]:
        from lc0_rocm.analysis.inputs import board_of_row, row_error
        out = columns.empty(len(rows), "eval", self.top_k)
        refused = {i: row_error(r) for i, r in enumerate(rows)}
        refused = {i: why for i, why in refused.items() if why}
        good = [i for i in range(len(rows)) if i not in refused]
        for start in range(0, len(good), self.chunk):
            part = good[start:start + self.chunk]
            boards = [board_of_row(rows[i]) for i in part]
            evaluations = self.network.evaluate_batch(boards)
            n, k = len(part), self.top_k
            names = np.full((n, k), "", dtype="U5")
            probs = np.zeros((n, k), dtype=np.float32)
            wdl = np.zeros((n, 3), dtype=np.float32)
            moves_left = np.zeros(n, dtype=np.float32)
            for i, (board, ev) in enumerate(zip(boards, evaluations)):
                ranked = sorted(ev.policy.items(), key=lambda item: -item[1])[:k]   # stable: legal order on ties
                for j, (move, prob) in enumerate(ranked):
                    names[i, j], probs[i, j] = move.uci(), prob
                wdl[i] = ev.wdl
                moves_left[i] = ev.moves_left or 0.0
            no_moves = np.array([not any(True for _ in b.legal_moves) for b in boards])
            in_check = np.array([b.is_check() for b in boards])
            columns.fill_eval(out, np.array(part), np.zeros(n, bool), wdl, moves_left,
                              self.network.has_moves_left, names, probs, no_moves, in_check)
        for i, why in refused.items():
            columns.set_row(out, i, error=why)
        return out


class _Buffers:
    """One chunk's inputs and outputs, in the memory the backend moves
    fastest (page-locked on GPU backends)."""

    def __init__(self, network, n: int):
        from lc0_rocm import native_core
        self.ffi, _ = native_core.load()
        self.masks = network.host_empty((n, NUM_PLANES), np.uint64)
        self.values = network.host_empty((n, NUM_PLANES), np.float32)
        self.policy = network.host_empty((n, POLICY_SIZE), np.float32)
        self.wdl = network.host_empty((n, 3), np.float32)
        self.moves_left = network.host_empty((n,), np.float32)
        self.transforms = np.empty(n, dtype=np.int32)
        self.moves = np.empty((n, MAX_MOVES), dtype=np.uint16)
        self.indices = np.empty((n, MAX_MOVES), dtype=np.int16)
        self.counts = np.empty(n, dtype=np.int32)
        self.flags = np.empty(n, dtype=np.int32)
        self.status = np.empty(n, dtype=np.int32)

    def pointer(self, ctype: str, array: np.ndarray):
        return self.ffi.cast(ctype, array.ctypes.data)
