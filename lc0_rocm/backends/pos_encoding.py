"""lc0's fixed 64-channel positional encoding for PE_MAP attention bodies.

Each square gets 64 extra input channels, one per board square (a1 = 0 ...
h8 = 63): -1 for the square itself, 1 for every square a queen or a knight
standing on it could reach on an empty board, 0 elsewhere. This rule
reproduces lc0's `kPosEncoding` table entry for entry (checked in
tests/test_cpu_attention.py against values read from lc0 v0.32.1).
"""
from __future__ import annotations

import numpy as np

NUM_CHANNELS = 64


def _build() -> np.ndarray:
    rank, file = np.divmod(np.arange(64), 8)
    d_rank = np.abs(rank[:, None] - rank[None, :])
    d_file = np.abs(file[:, None] - file[None, :])
    queen = (d_rank == 0) | (d_file == 0) | (d_rank == d_file)
    knight = ((d_rank == 1) & (d_file == 2)) | ((d_rank == 2) & (d_file == 1))
    table = (queen | knight).astype(np.float32)
    np.fill_diagonal(table, -1.0)
    return table


# POS_ENCODING[square, channel], float32, read-only.
POS_ENCODING = _build()
POS_ENCODING.setflags(write=False)
