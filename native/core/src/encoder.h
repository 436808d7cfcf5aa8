// encoder.h - lc0's 112 input planes of the newest position of a history,
// for every input format we support; lc0's packed form (mask + value).
// Owner: encoding (encoder.cpp, policy_index.cpp, random_net.cpp).
#pragma once
#include <cstdint>
#include "history.h"

namespace lc0core {

constexpr int kNumPlanes = 112;
constexpr int kPolicySize = 1858;
enum Transform : int { kFlip = 1, kMirror = 2, kTranspose = 4 };

struct EncodedPosition {
  uint64_t masks[kNumPlanes];
  float values[kNumPlanes];
  int transform;                         // lc0 transform bits applied (0 outside canonical formats)
};

bool is_supported_input_format(int input_format);   // 1, 2, 3, 4, 132, 5, 133
// Encodes history.last(); identical to lc0_rocm.encoder.encode_packed.
void encode(const PositionHistory& history, int input_format, EncodedPosition* out);

// lc0 policy index (0..1857) of a legal move of `pos` (real orientation),
// in the side-to-move frame under `transform`; equal to
// lc0_rocm.encoder.policy_indices.
int policy_index(const Position& pos, Move move, int transform);
// policy_index of `count` moves of one position into out[0..count).
void policy_indices(const Position& pos, const Move* moves, int count, int transform, int* out);

// Softmax over the legal moves' logits (with lc0's policy temperature, 1 =
// plain softmax), float32 out, in the order of `moves`.
void legal_softmax(const float* logits_1858, const Position& pos, const MoveList& moves,
                   int transform, float temperature, float* out_probs);

}  // namespace lc0core
