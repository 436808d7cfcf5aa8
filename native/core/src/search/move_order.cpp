// move_order.cpp - the rank of a move in python-chess's generate_legal_moves:
// not in check: piece moves (from, then to, high squares first), castling
// (rook square high first), pawn captures, single pushes, double pushes,
// en passant; in check: king moves first, then the same without castling.
// Promotions come queen, rook, bishop, knight.
#include "move_order.h"

#include <algorithm>
#include <cstdint>

namespace lc0core {
namespace search {
namespace {

int promotion_rank(int promotion) {
  switch (promotion) {
    case QUEEN: return 0;
    case ROOK: return 1;
    case BISHOP: return 2;
    case KNIGHT: return 3;
    default: return 0;
  }
}

int32_t rank_of(const Position& pos, Move move, bool evasion) {
  const int from = move.from(), to = move.to();
  const Bitboard from_bb = Bitboard(1) << from, to_bb = Bitboard(1) << to;
  const Bitboard ours = pos.by_color[pos.side];
  const bool king = (pos.by_type[KING] & from_bb) != 0;
  const bool pawn = (pos.by_type[PAWN] & from_bb) != 0;
  int group;
  int a = 0, b = 0;
  if (king && (ours & to_bb)) {          // castling, king takes rook
    group = 1, a = 63 - to;
  } else if (!pawn) {
    group = 0, a = 63 - from, b = 63 - to;
    if (evasion && king) group = -1, a = 63 - to, b = 0;
  } else {
    const int diff = to > from ? to - from : from - to;
    const bool capture = (pos.by_color[pos.side ^ 1] & to_bb) != 0;
    if (capture) {
      group = 2, a = 63 - from, b = 63 - to;
    } else if (diff == 8) {
      group = 3, a = 63 - to;
    } else if (diff == 16) {
      group = 4, a = 63 - to;
    } else {                             // en passant
      group = 5, a = 63 - from;
    }
  }
  return (group + 1) * 1000000 + a * 1000 + b * 10 + promotion_rank(move.promotion());
}

}  // namespace

void sort_like_python_chess(const Position& pos, MoveList* moves) {
  const bool evasion = in_check(pos);
  int32_t keys[kMaxMoves];
  int order[kMaxMoves];
  const int n = moves->count;
  for (int i = 0; i < n; ++i) {
    keys[i] = rank_of(pos, moves->moves[i], evasion);
    order[i] = i;
  }
  std::sort(order, order + n, [&](int x, int y) { return keys[x] < keys[y]; });
  Move sorted[kMaxMoves];
  for (int i = 0; i < n; ++i) sorted[i] = moves->moves[order[i]];
  std::copy(sorted, sorted + n, moves->moves);
}

}  // namespace search
}  // namespace lc0core
