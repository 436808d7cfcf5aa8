// random_net.cpp - lc0's `random` network (facts from lc0's
// network_random.cc and utils/hashcat.h; our own code).
//
// The input hash starts at the seed and appends, plane by plane, the mask
// and then the value's 32 float bits. q = (hash % 200000 - 100000) / 100000;
// d = (1 - |q|) * (hash' % 10000) / 10000 with hash' = the hash with 1234
// appended; the logit of policy index i is (hash_i % 10000) * (3 / 10000)
// with hash_i = the hash with i appended. Uniform mode: q = d = 0, every
// logit 1. Moves left: 0.
#include "random_net.h"

#include <cmath>
#include <cstring>

#include "encoder.h"
#include "errors.h"

namespace lc0core {
namespace {

// lc0's scrambling of one 64-bit value.
uint64_t scramble(uint64_t v) {
  return 0xfad0d7f2fbb059f1ULL * (v + 0xbaad41cdcb839961ULL) +
         0x7acec0050bf82f43ULL * ((v >> 31) + 0xd571b3a92b1b2755ULL);
}

// Appends `x` to a running hash.
uint64_t append(uint64_t hash, uint64_t x) {
  return hash ^ (0x299799adf0d95defULL + scramble(x) + (hash << 6) + (hash >> 2));
}

// lc0 hashes a list {a, b} as append(append(0, a), b).
uint64_t hash_pair(uint64_t a, uint64_t b) { return append(append(0, a), b); }

// append(h, i) = h ^ (appended[i] + (h << 6) + (h >> 2)): the part that
// depends on the policy index alone, computed once.
struct AppendedIndices {
  uint64_t value[kPolicySize];
  AppendedIndices() {
    for (int i = 0; i < kPolicySize; ++i) value[i] = 0x299799adf0d95defULL + scramble(uint64_t(i));
  }
};
const AppendedIndices& appended_indices() {
  static const AppendedIndices table;
  return table;
}

}  // namespace

uint64_t random_net_input_hash(int64_t seed, const uint64_t* masks, const float* values) {
  uint64_t hash = uint64_t(seed);
  for (int i = 0; i < kNumPlanes; ++i) {
    hash = hash_pair(hash, masks[i]);
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof(bits));
    hash = hash_pair(hash, uint64_t(bits));
  }
  return hash;
}

void random_net_outputs(uint64_t input_hash, bool uniform, float* policy_1858, float* wdl,
                        float* moves_left) {
  float q = 0.0f, d = 0.0f;
  if (!uniform) {
    q = float((int(input_hash % 200000) - 100000) / 100000.0);
    const float max_d = 1.0f - std::fabs(q);
    d = float(max_d * float(hash_pair(input_hash, 1234) % 10000) / 10000.0);
  }
  wdl[0] = (1.0f + q - d) / 2.0f;
  wdl[1] = d;
  wdl[2] = (1.0f - q - d) / 2.0f;
  *moves_left = 0.0f;
  if (uniform) {
    for (int i = 0; i < kPolicySize; ++i) policy_1858[i] = 1.0f;
    return;
  }
  const uint64_t prefix = append(0, input_hash);
  const uint64_t shifted = (prefix << 6) + (prefix >> 2);
  const uint64_t* appended = appended_indices().value;
  const float scale = 3.0f / 10000.0f;
  for (int i = 0; i < kPolicySize; ++i) {   // append(prefix, i) % 10000, scaled
    // The remainder fits an int: a signed conversion is one instruction, an
    // unsigned 64-bit one a dozen (the value is the same).
    policy_1858[i] = float(int32_t((prefix ^ (appended[i] + shifted)) % 10000)) * scale;
  }
}

}  // namespace lc0core

LC0CORE_EXPORT int lc0core_random_forward(void* ctx, int n, const uint64_t* masks,
                                          const float* values, float* policy, float* wdl,
                                          float* moves_left) {
  return lc0core::guarded([&] {
    lc0core::require(ctx, "random net");
    if (n < 0) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "negative batch size");
    if (n == 0) return LC0CORE_OK;
    lc0core::require(masks, "masks");
    lc0core::require(values, "values");
    lc0core::require(policy, "policy");
    lc0core::require(wdl, "wdl");
    lc0core::require(moves_left, "moves_left");
    const auto* net = static_cast<const lc0core_random_net*>(ctx);
    for (int i = 0; i < n; ++i) {
      const uint64_t hash = lc0core::random_net_input_hash(
          net->seed, masks + size_t(i) * lc0core::kNumPlanes, values + size_t(i) * lc0core::kNumPlanes);
      lc0core::random_net_outputs(hash, net->uniform != 0, policy + size_t(i) * lc0core::kPolicySize,
                                  wdl + size_t(i) * 3, moves_left + i);
    }
    return LC0CORE_OK;
  });
}
