// position_checks.h - what makes a position playable, shared by the FEN
// parser and the python-chess bridge (which gets bitboards, not text).
#pragma once
#include <string>
#include "position.h"

namespace lc0core {

// python-chess's clean_castling_rights(): of `rights` (rook squares), keep
// those whose rook and king stand where castling needs them.
Bitboard clean_castling_rights(const Position& pos, Bitboard rights, bool chess960);
// python-chess's _valid_ep_square(): the square behind a pawn of the side
// not to move that could just have moved two squares.
bool valid_ep_square(const Position& pos, int square);
// The problems that make `pos` unplayable, named as python-chess names them
// ("no white king, too many black pawns"); empty when there are none.
std::string position_problems(const Position& pos);

}  // namespace lc0core
