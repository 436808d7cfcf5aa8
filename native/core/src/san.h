// san.h - a PGN movetext's SAN token as the legal move python-chess's
// Board.parse_san gives for it, in standard chess.
// Owner: analysis (reading PGN games); rules underneath (position.h).
#pragma once
#include <cstddef>
#include "position.h"

namespace lc0core {

// The move `san` (`length` bytes, a token as python-chess's PGN reader cuts
// it: no check marks) names in `pos`, when it surely is the one
// Board.parse_san returns: written as python-chess reads SAN, naming exactly
// one legal move. False for everything else (illegal, ambiguous, a null
// move, a piece's long algebraic without its letter), which the caller
// leaves to python-chess.
bool parse_san(const Position& pos, const char* san, size_t length, Move* out);

}  // namespace lc0core
