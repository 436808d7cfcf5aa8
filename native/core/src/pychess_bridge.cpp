// pychess_bridge.cpp - see pychess_bridge.h. The python-chess facts here
// (clean_castling_rights, _to_chess960 / _from_chess960) are read off
// python-chess 1.11; its move order is movegen.cpp's.
#include "pychess_bridge.h"

#include <algorithm>

#include "attacks.h"
#include "position_checks.h"

namespace lc0core {
namespace {

constexpr int kA1 = 0, kC1 = 2, kE1 = 4, kG1 = 6, kH1 = 7;
constexpr int kA8 = 56, kC8 = 58, kE8 = 60, kG8 = 62, kH8 = 63;

// The squares from which a pawn of `color` attacks `square`.
uint64_t pawn_attackers_of(int square, Color color) {
  return kAttacks.pawn[color == WHITE ? BLACK : WHITE][square];
}

// python-chess's _to_chess960: the king's two-square move from e1/e8 to
// g or c (no rook there) means castling, king takes rook.
int king_takes_rook_target(const Position& pos, int from, int to) {
  const uint64_t kings = pos.by_type[KING], rooks = pos.by_type[ROOK];
  if (from == kE1 && (kings & bit(kE1))) {
    if (to == kG1 && !(rooks & bit(kG1))) return kH1;
    if (to == kC1 && !(rooks & bit(kC1))) return kA1;
  } else if (from == kE8 && (kings & bit(kE8))) {
    if (to == kG8 && !(rooks & bit(kG8))) return kH8;
    if (to == kC8 && !(rooks & bit(kC8))) return kA8;
  }
  return to;
}

bool is_castling(const Position& pos, Move move) {
  return (pos.pieces(pos.side, KING) & bit(move.from())) &&
         (pos.pieces(pos.side, ROOK) & bit(move.to()));
}

// The positions the FEN parser admits (fen.cpp's checks, without the text
// round trip, which cost half of a board's encoding): consistent bitboards,
// one king each, no pawns on the back ranks, at most 16 pieces and 8 pawns
// plus promoted pieces a side (so no position has over 256 moves), the side
// not to move not in check, a possible e.p. square.
bool plausible(const Position& pos, std::string* error) {
  const Bitboard white = pos.by_color[WHITE], black = pos.by_color[BLACK];
  Bitboard typed = 0;
  bool overlap = (white & black) != 0;
  for (int t = PAWN; t <= KING; ++t) {
    overlap |= (typed & pos.by_type[t]) != 0;
    typed |= pos.by_type[t];
  }
  if (overlap || typed != (white | black)) {
    *error = "inconsistent bitboards";
    return false;
  }
  const std::string problems = position_problems(pos);
  if (!problems.empty()) {
    *error = problems;
    return false;
  }
  if (pos.ep_square >= 0 && !valid_ep_square(pos, pos.ep_square)) {
    *error = "impossible e.p. square";
    return false;
  }
  return true;
}

}  // namespace

bool position_from_python_chess(const PythonChessPosition& in, Position* out, std::string* error) {
  const uint64_t* w = in.words;
  Position pos;
  for (int t = PAWN; t <= KING; ++t) pos.by_type[t] = w[t];
  pos.by_color[WHITE] = w[6];
  pos.by_color[BLACK] = w[7];
  pos.side = w[kPyWhiteToMove] ? WHITE : BLACK;
  if (w[kPyHalfmove] > 0x7FFFFFFF || w[kPyFullmove] < 1 || w[kPyFullmove] > 0xFFFFFFFFu ||
      w[kPyEpSquare] > 64) {
    *error = "halfmove clock, fullmove number or e.p. square out of range";
    return false;
  }
  pos.rule50 = uint32_t(w[kPyHalfmove]);
  pos.fullmove = uint32_t(w[kPyFullmove]);
  pos.castling_rooks = clean_castling_rights(pos, w[8], w[kPyChess960] != 0);
  const int ep = int(w[kPyEpSquare]);
  if (ep < 64 && (w[kPyGameStart] || (pawn_attackers_of(ep, pos.side) & pos.pieces(pos.side, PAWN)))) {
    pos.ep_square = int8_t(ep);
  }
  if (!plausible(pos, error)) return false;
  *out = pos;
  return true;
}

bool is_legal(const Position& pos, Move move, MoveList* scratch) {
  const Color us = pos.side, them = Color(us ^ 1);
  const int from = move.from(), to = move.to(), promotion = move.promotion();
  if (!(pos.by_color[us] & bit(from))) return false;
  const PieceType piece = piece_on(pos, from);
  if (piece == KING && (pos.pieces(us, ROOK) & bit(to))) {   // castling: rare, ask the generator
    legal_moves(pos, scratch);
    return std::find(scratch->begin(), scratch->end(), move) != scratch->end();
  }
  if ((pos.by_color[us] | pos.by_type[KING]) & bit(to)) return false;
  const bool promotes = piece == PAWN && (rank_of(to) == 0 || rank_of(to) == 7);
  if (promotes != (promotion != 0) || (promotion && (promotion < KNIGHT || promotion > QUEEN))) {
    return false;
  }
  const Bitboard occupied = pos.occupied();
  Bitboard reach = 0;
  switch (piece) {
    case KNIGHT: reach = kAttacks.knight[from]; break;
    case BISHOP: reach = bishop_attacks(from, occupied); break;
    case ROOK: reach = rook_attacks(from, occupied); break;
    case QUEEN: reach = queen_attacks(from, occupied); break;
    case KING: reach = kAttacks.king[from]; break;
    case PAWN: {
      const Bitboard ep = pos.ep_square >= 0 ? bit(pos.ep_square) : 0;
      reach = kAttacks.pawn[us][from] & (pos.by_color[them] | ep);
      const int forward = us == WHITE ? 8 : -8, one = from + forward;
      if (!(occupied & bit(one))) {
        reach |= bit(one);
        if (rank_of(from) == (us == WHITE ? 1 : 6) && !(occupied & bit(one + forward))) {
          reach |= bit(one + forward);
        }
      }
      break;
    }
    default: return false;
  }
  if (!(reach & bit(to))) return false;
  const Position after = apply_move(pos, move);
  const Bitboard king = after.pieces(us, KING);
  return king && !(attackers_to(after, lsb(king), after.occupied()) & after.by_color[them]);
}

bool move_from_python_chess(const Position& pos, uint16_t raw, MoveList* scratch, Move* out) {
  const int from = raw & 63, promotion = raw >> 12;
  if (promotion != 0 && (promotion < 2 || promotion > 5)) return false;
  const int to = king_takes_rook_target(pos, from, (raw >> 6) & 63);
  // python-chess's piece types are ours + 1 (knight 2 .. queen 5).
  const Move wanted(from, to, promotion ? promotion - 1 : 0);
  if (!is_legal(pos, wanted, scratch)) return false;
  *out = wanted;
  return true;
}

uint16_t move_to_python_chess(const Position& pos, Move move, bool chess960) {
  int to = move.to();
  if (!chess960 && is_castling(pos, move)) {
    // Outside Chess960 python-chess names castling by the king's two squares.
    to = (move.from() & 56) + ((to & 7) > (move.from() & 7) ? 6 : 2);
  }
  const int promotion = move.promotion() ? move.promotion() + 1 : 0;
  return uint16_t(move.from() | to << 6 | promotion << 12);
}

}  // namespace lc0core
