// san.h - a PGN movetext's SAN token as the legal move python-chess's
// Board.parse_san gives for it, and a legal move as Board.san writes it,
// in standard chess.
// Owner: analysis (reading PGN games); rules underneath (position.h).
#pragma once
#include <cstddef>
#include <string>
#include "position.h"

namespace lc0core {

// The move `san` (`length` bytes, a token as python-chess's PGN reader cuts
// it: no check marks) names in `pos`, when it surely is the one
// Board.parse_san returns: written as python-chess reads SAN, naming exactly
// one legal move. False for everything else (illegal, ambiguous, a null
// move, a piece's long algebraic without its letter), which the caller
// leaves to python-chess.
bool parse_san(const Position& pos, const char* san, size_t length, Move* out);

// The legal move `move` in `pos` as python-chess's Board.san writes it:
// O-O / O-O-O, the piece letter, the origin's file and/or rank where
// another piece of that kind could go there too, x, the target, =Q, and +
// or # after it.
std::string write_san(const Position& pos, Move move);

}  // namespace lc0core
