// policy_table.h - lc0's policy index table and the softmax over a list of
// policy indices, shared by policy_index.cpp, the batch API and the search.
// Owner: encoding.
#pragma once
#include <cstdint>

namespace lc0core {

// index[from][to][slot]: the 1858 index of a move in the side-to-move frame,
// slot 0 = no promotion or knight, 1 = queen, 2 = rook, 3 = bishop; -1 when
// lc0 has no output for it. Equal to lc0_rocm.tables.MOVE_INDEX.
struct PolicyTable {
  int16_t index[64][64][4];
};
const PolicyTable& policy_table();

// Softmax of logits_1858[indices[i]] (i < count <= kMaxMoves) with lc0's
// policy temperature (1 = plain softmax), accumulated in double.
void softmax_of_indices(const float* logits_1858, const int16_t* indices, int count,
                        float temperature, float* out_probs);

}  // namespace lc0core
