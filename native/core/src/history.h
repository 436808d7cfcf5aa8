// history.h - a game from its first position: the positions and lc0's
// repetition facts the encoder and the search read.
// Owner: rules (history.cpp).
#pragma once
#include <vector>
#include "position.h"

namespace lc0core {

class PositionHistory {
 public:
  // `from_startpos`: the game began at the standard start position (lc0's
  // fill rule leaves missing history boards empty then; else it repeats the
  // first position).
  void reset(const Position& first, bool from_startpos);
  void push(Move legal_move);            // appends apply_move(last(), move)
  void pop();                            // drops the newest position (not the first)
  int size() const { return int(positions_.size()); }
  const Position& at(int index) const { return positions_[index]; }   // 0 = first
  const Position& last() const { return positions_.back(); }
  bool from_startpos() const { return from_startpos_; }
  // lc0's repetition count of position `index`: how many earlier equal
  // positions there are, looking back 4, 6, ... plies and not past a zeroing
  // move (rule50). The encoder's repetition plane is repetitions(i) >= 1.
  int repetitions(int index) const { return repetitions_[index]; }
  // Plies back to the last equal position, 0 when none (for two-fold draws).
  int cycle_length(int index) const { return cycle_length_[index]; }

 private:
  void compute_last();
  std::vector<Position> positions_;
  std::vector<int> repetitions_;
  std::vector<int> cycle_length_;
  bool from_startpos_ = true;
};

}  // namespace lc0core
