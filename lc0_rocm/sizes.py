"""lc0's fixed sizes of a network's input and outputs, for every module.

Input: 8 history boards of 13 planes (our P N B R Q K, their P N B R Q K,
repetition), then 8 auxiliary planes; each plane covers the 64 squares.
Outputs: 1858 policy logits in lc0's order, win/draw/loss, moves left.
"""
from __future__ import annotations

SQUARES = 64
HISTORY = 8                            # boards of history in the input
PLANES_PER_BOARD = 13
AUX_PLANES = 8
NUM_PLANES = HISTORY * PLANES_PER_BOARD + AUX_PLANES   # 112
POLICY_SIZE = 1858                     # moves in lc0's policy table
WDL_SIZE = 3
