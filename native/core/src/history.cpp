// history.cpp - a game's positions and lc0's repetition facts (lc0's
// PositionHistory::ComputeLastMoveRepetitions; the Python twin is
// lc0_rocm/search/positions.py PositionWalker._append_current).
#include "history.h"

namespace lc0core {

void PositionHistory::reset(const Position& first, bool from_startpos) {
  positions_.assign(1, first);
  repetitions_.assign(1, 0);
  cycle_length_.assign(1, 0);
  from_startpos_ = from_startpos;
}

void PositionHistory::push(Move legal_move) {
  positions_.push_back(apply_move(positions_.back(), legal_move));
  compute_last();
}

void PositionHistory::pop() {
  if (positions_.size() <= 1) return;
  positions_.pop_back();
  repetitions_.pop_back();
  cycle_length_.pop_back();
}

// Looks back 4, 6, ... plies for an equal position with the same side to
// move, stopping at a position reached by a zeroing move (its rule50 < 2
// means the ply before it zeroed the count, so nothing earlier can repeat).
void PositionHistory::compute_last() {
  const int last = int(positions_.size()) - 1;
  const Position& now = positions_[last];
  int repetitions = 0, cycle = 0;
  if (now.rule50 >= 4) {
    for (int index = last - 4; index >= 0; index -= 2) {
      if (positions_[index] == now) {
        cycle = last - index;
        repetitions = 1 + repetitions_[index];
        break;
      }
      if (positions_[index].rule50 < 2) break;
    }
  }
  repetitions_.push_back(repetitions);
  cycle_length_.push_back(cycle);
}

}  // namespace lc0core
