// pychess_bridge.h - python-chess's representation of a game <-> the core's:
// a position from python-chess's bitboards, moves in python-chess's notation
// (16 bits: from | to << 6 | promotion << 12 with python-chess piece types,
// castling as the king's two-square move outside Chess960) and legal moves
// in the order python-chess's `legal_moves` lists them.
// Owner: encoding (used by api_encode.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "position.h"

namespace lc0core {

// One python-chess position, 15 words: pawns, knights, bishops, rooks,
// queens, kings, white pieces, black pieces, castling_rights (unfiltered),
// white to move, e.p. square (64 none), halfmove clock, fullmove number, is
// the game's first position, chess960.
enum { kPyWhiteToMove = 9, kPyEpSquare, kPyHalfmove, kPyFullmove, kPyGameStart, kPyChess960,
       kPyWords };
struct PythonChessPosition {
  const uint64_t* words;   // kPyWords
};

// The position as lc0 sees it: castling rights filtered as python-chess's
// clean_castling_rights(), lc0's e.p. flag (a game's first position keeps
// its FEN square as written). Refuses (false, *error) the positions the
// core's FEN parser refuses.
bool position_from_python_chess(const PythonChessPosition& in, Position* out, std::string* error);

// Is `move` one of legal_moves(pos)? Decided from the attack tables and the
// king's safety after it (castling, rare, by the move generator).
bool is_legal(const Position& pos, Move move, MoveList* scratch);

// The legal move of `pos` that python-chess's 16-bit move stands for;
// false if it is not one.
bool move_from_python_chess(const Position& pos, uint16_t raw, MoveList* scratch, Move* out);
uint16_t move_to_python_chess(const Position& pos, Move move, bool chess960);

}  // namespace lc0core
