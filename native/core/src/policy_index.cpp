// policy_index.cpp - lc0's 1858 policy moves: the (from, to, promotion) ->
// index table, generated at start-up from the move geometry as
// lc0_rocm/tables.py generates it, a legal move's index under the
// side-to-move frame and a canonical transform, and the legal-move softmax.
#include <algorithm>
#include <cmath>
#include <vector>

#include "bitboard_transform.h"
#include "encoder.h"
#include "policy_table.h"

namespace lc0core {
namespace {

// A non-promotion step lc0 has an output for: queen-like or knight.
bool is_policy_step(int d_rank, int d_file) {
  const int ar = d_rank < 0 ? -d_rank : d_rank, af = d_file < 0 ? -d_file : d_file;
  if ((ar == 1 && af == 2) || (ar == 2 && af == 1)) return true;   // knight
  if (ar == 0 && af == 0) return false;
  return ar == 0 || af == 0 || ar == af;                             // queen-like
}

PolicyTable build_policy_table() {
  PolicyTable table;
  std::fill(&table.index[0][0][0], &table.index[0][0][0] + 64 * 64 * 4, int16_t(-1));
  int next = 0;
  // Every queen-like and knight move by from-square, then to-square
  // (a pawn move to rank 8 here is also its knight promotion).
  for (int from = 0; from < 64; ++from) {
    for (int to = 0; to < 64; ++to) {
      if (is_policy_step((to >> 3) - (from >> 3), (to & 7) - (from & 7))) {
        table.index[from][to][0] = int16_t(next++);
      }
    }
  }
  // Queen, rook, bishop promotions from a7..h7, to-file ascending.
  for (int file = 0; file < 8; ++file) {
    for (int to_file = file - 1; to_file <= file + 1; ++to_file) {
      if (to_file < 0 || to_file > 7) continue;
      for (int slot = 1; slot <= 3; ++slot) {   // q, r, b
        table.index[48 + file][56 + to_file][slot] = int16_t(next++);
      }
    }
  }
  return table;
}

// Promotion piece -> table slot: none or knight 0, queen 1, rook 2, bishop 3.
int promotion_slot(int promotion) {
  switch (promotion) {
    case QUEEN: return 1;
    case ROOK: return 2;
    case BISHOP: return 3;
    default: return 0;
  }
}

}  // namespace

const PolicyTable& policy_table() {
  static const PolicyTable table = build_policy_table();
  return table;
}

namespace {

// Square maps for the 16 frames (side to move x transform): a move's squares
// in the table's frame, one look-up each instead of the arithmetic per move.
struct SquareMaps {
  uint8_t square[2][8][64];
};

SquareMaps build_square_maps() {
  SquareMaps maps;
  for (int side = 0; side < 2; ++side) {
    for (int transform = 0; transform < 8; ++transform) {
      for (int sq = 0; sq < 64; ++sq) {
        maps.square[side][transform][sq] = uint8_t(transform_square(side == BLACK ? sq ^ 56 : sq, transform));
      }
    }
  }
  return maps;
}

}  // namespace

void policy_indices(const Position& pos, const Move* moves, int count, int transform, int* out) {
  static const SquareMaps maps = build_square_maps();
  const PolicyTable& table = policy_table();
  const uint8_t* square = maps.square[pos.side == BLACK][transform & 7];
  for (int i = 0; i < count; ++i) {
    const Move m = moves[i];
    out[i] = table.index[square[m.from()]][square[m.to()]][promotion_slot(m.promotion())];
  }
}

int policy_index(const Position& pos, Move move, int transform) {
  int index;
  policy_indices(pos, &move, 1, transform, &index);
  return index;
}

void softmax_of_indices(const float* logits_1858, const int16_t* indices, int count,
                        float temperature, float* out_probs) {
  // Accumulated in double, as network._legal_softmax does; an index outside
  // the table (never for a legal move) gets probability 0.
  double exps[kMaxMoves];
  count = std::min(count, kMaxMoves);
  double best = -HUGE_VAL;
  for (int i = 0; i < count; ++i) {
    if (indices[i] >= 0 && indices[i] < kPolicySize) {
      best = std::max(best, double(logits_1858[indices[i]]));
    }
  }
  double sum = 0.0;
  for (int i = 0; i < count; ++i) {
    const bool valid = indices[i] >= 0 && indices[i] < kPolicySize;
    exps[i] = valid ? std::exp((double(logits_1858[indices[i]]) - best) / temperature) : 0.0;
    sum += exps[i];
  }
  for (int i = 0; i < count; ++i) out_probs[i] = sum > 0.0 ? float(exps[i] / sum) : 0.0f;
}

void legal_softmax(const float* logits_1858, const Position& pos, const MoveList& moves,
                   int transform, float temperature, float* out_probs) {
  int16_t indices[kMaxMoves];
  for (int i = 0; i < moves.count; ++i) {
    indices[i] = int16_t(policy_index(pos, moves.moves[i], transform));
  }
  softmax_of_indices(logits_1858, indices, moves.count, temperature, out_probs);
}

}  // namespace lc0core
