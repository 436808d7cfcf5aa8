// demux_forward.cpp - lc0's demux backend as a forward function
// (include/lc0core_eval.h): one batch cut into parts that run at once on
// different children (GPUs), so a search slot can span several GPUs with no
// Python between the search and the GPU library.
#include <algorithm>
#include <vector>
#include "../include/lc0core_eval.h"
#include "encoder.h"
#include "errors.h"
#include "search/task_pool.h"

namespace {

using lc0core::kNumPlanes;
using lc0core::kPolicySize;

// One part on one entry, in chunks of the entry's max batch.
int run_part(const lc0core_demux& d, int entry, int first, int count, const uint64_t* masks,
             const float* values, float* policy, float* wdl, float* moves_left) {
  const int step = d.max_batch[entry] > 0 ? d.max_batch[entry] : count;
  for (int at = first; at < first + count; at += step) {
    const int k = std::min(step, first + count - at);
    const int status = d.forward[entry](d.ctx[entry], k, masks + size_t(at) * kNumPlanes,
                                        values + size_t(at) * kNumPlanes, policy + size_t(at) * kPolicySize,
                                        wdl + size_t(at) * 3, moves_left + at);
    if (status != 0) return status;
  }
  return 0;
}

// The threads that run the parts other than the first (the caller runs that
// one). Kept for the process: starting and joining a thread per call cost
// tens of microseconds on every batch. Parts are GPU calls that block for
// milliseconds, so there are enough threads for several demuxes called at
// once (a search's slots) with every entry busy; idle ones sleep.
lc0core::search::TaskPool& part_pool() {
  static lc0core::search::TaskPool pool(16);
  return pool;
}

}  // namespace

LC0CORE_EXPORT int lc0core_demux_forward(void* ctx, int n, const uint64_t* masks, const float* values,
                                         float* policy, float* wdl, float* moves_left) {
  return lc0core::guarded([&] {
    lc0core::require(ctx, "demux");
    auto* d = static_cast<lc0core_demux*>(ctx);
    if (d->count < 1 || d->count > 16) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "demux: 1..16 entries");
    for (int i = 0; i < d->count; ++i) lc0core::require(reinterpret_cast<const void*>(d->forward[i]), "demux entry");
    if (n < 0) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "negative batch size");
    if (n == 0) return int(LC0CORE_OK);
    lc0core::require(masks, "masks");
    lc0core::require(values, "values");
    lc0core::require(policy, "policy");
    lc0core::require(wdl, "wdl");
    lc0core::require(moves_left, "moves_left");
    int size = (n + d->count - 1) / d->count;
    if (size < d->minimum_split) size = std::min(n, d->minimum_split);
    const int start = d->start;
    d->start = (start + 1) % d->count;
    std::vector<int> status((n + size - 1) / size, 0);
    {
      lc0core::search::TaskPool::Group parts(&part_pool());
      for (int j = 1, first = size; first < n; ++j, first += size) {
        const int entry = (start + j) % d->count, count = std::min(size, n - first);
        parts.run([=, &status] {
          status[j] = run_part(*d, entry, first, count, masks, values, policy, wdl, moves_left);
        });
      }
      status[0] = run_part(*d, start, 0, std::min(size, n), masks, values, policy, wdl, moves_left);
    }                            // the group waits for its parts here
    for (int s : status) {
      if (s != 0) return s;      // the child's own status: its library holds the message
    }
    return int(LC0CORE_OK);
  });
}
