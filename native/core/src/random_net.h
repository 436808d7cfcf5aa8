// random_net.h - lc0's `random` network: outputs are a hash of the input
// planes (masks and values) and a seed, so the same position always gets the
// same made-up evaluation. For tests and for timing everything but the net.
// Owner: encoding.
#pragma once
#include <cstdint>

#include "../include/lc0core_encode.h"

namespace lc0core {

// The hash of one position's 112 (mask, value) planes, starting from `seed`.
uint64_t random_net_input_hash(int64_t seed, const uint64_t* masks, const float* values);

// One position's outputs from its input hash: raw policy logits (1858), wdl
// and moves left (always 0), as lc0's random backend gives them.
void random_net_outputs(uint64_t input_hash, bool uniform, float* policy_1858, float* wdl,
                        float* moves_left);

}  // namespace lc0core
