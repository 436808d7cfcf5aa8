// position_checks.cpp - see position_checks.h.
#include "position_checks.h"

#include <algorithm>
#include <vector>

#include "attacks.h"

namespace lc0core {

// python-chess's clean_castling_rights(): keep rights whose rook and king
// are where castling needs them.
Bitboard clean_castling_rights(const Position& pos, Bitboard rights_in, bool chess960) {
  Bitboard result = 0;
  for (Color c : {WHITE, BLACK}) {
    const Bitboard rank = back_rank(c);
    Bitboard rights = rights_in & pos.pieces(c, ROOK) & rank;
    const Bitboard king = pos.pieces(c, KING) & rank;
    if (!king || !rights) continue;
    if (!chess960) {
      if (!(king & (c == WHITE ? bit(4) : bit(60)))) continue;
      result |= rights & (kFileA | kFileH);
      continue;
    }
    const int king_square = msb(king);
    const int a_side = lsb(rights), h_side = msb(rights);
    if (a_side < king_square) result |= bit(a_side);
    if (h_side > king_square) result |= bit(h_side);
  }
  return result;
}

// python-chess's _valid_ep_square(): the square behind a pawn that could
// just have moved two squares.
bool valid_ep_square(const Position& pos, int square) {
  const Color them = Color(pos.side ^ 1);
  const int forward = pos.side == WHITE ? 8 : -8;
  if (rank_of(square) != (pos.side == WHITE ? 5 : 2)) return false;
  if (!(pos.pieces(them, PAWN) & bit(square - forward))) return false;
  return !(pos.occupied() & (bit(square) | bit(square + forward)));
}

std::string position_problems(const Position& pos) {
  std::vector<std::string> problems;
  const Bitboard kings = pos.by_type[KING];
  if (!pos.occupied()) problems.push_back("empty board");
  if (!(kings & pos.by_color[WHITE])) problems.push_back("no white king");
  if (!(kings & pos.by_color[BLACK])) problems.push_back("no black king");
  if (popcount(kings) > 2) problems.push_back("too many kings");
  if (popcount(pos.by_color[WHITE]) > 16) problems.push_back("too many white pieces");
  if (popcount(pos.by_color[BLACK]) > 16) problems.push_back("too many black pieces");
  if (popcount(pos.pieces(WHITE, PAWN)) > 8) problems.push_back("too many white pawns");
  if (popcount(pos.pieces(BLACK, PAWN)) > 8) problems.push_back("too many black pawns");
  if (pos.by_type[PAWN] & (kRank1 | kRank8)) problems.push_back("pawns on the back rank");
  // Each piece beyond the initial set took a promotion, and so a pawn (this
  // keeps fantasy positions such as 15 queens, with over 256 moves, out).
  for (Color c : {WHITE, BLACK}) {
    auto beyond = [&](PieceType t, int initial) { return std::max(0, popcount(pos.pieces(c, t)) - initial); };
    const int promoted = beyond(QUEEN, 1) + beyond(ROOK, 2) + beyond(BISHOP, 2) + beyond(KNIGHT, 2);
    if (popcount(pos.pieces(c, PAWN)) + promoted > 8) {
      problems.push_back(std::string("too many promoted ") + (c == WHITE ? "white" : "black") + " pieces");
    }
  }
  const Bitboard their_king = kings & pos.by_color[pos.side ^ 1];
  if (their_king && popcount(kings) == 2 &&
      (attackers_to(pos, lsb(their_king), pos.occupied()) & pos.by_color[pos.side])) {
    problems.push_back("the side not to move is in check");
  }
  std::string text;
  for (const auto& p : problems) text += (text.empty() ? "" : ", ") + p;
  return text;
}

}  // namespace lc0core
