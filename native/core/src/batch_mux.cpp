// batch_mux.cpp - many searches sharing one network (include/lc0core_eval_mux.h):
// each search's forward call queues its rows and blocks; when every active
// search is waiting (or max_batch rows are queued) the thread that completes
// the round runs the real forward for all of them and wakes the others.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>
#include "../include/lc0core_eval_mux.h"
#include "encoder.h"
#include "errors.h"

using lc0core::kNumPlanes;
using lc0core::kPolicySize;

namespace {

using Clock = std::chrono::steady_clock;

struct Client {
  lc0core_mux* mux = nullptr;
  std::condition_variable wake;      // its round is done, or it is to lead the next one
  bool active = false;               // between its first call and its release
  bool done = false;                 // its queued call has been answered
  bool answered = false;             // answered in the running round (the leader's mark)
  int status = 0;
  int n = 0;
  const uint64_t* masks = nullptr;
  const float* values = nullptr;
  float* policy = nullptr;
  float* wdl = nullptr;
  float* moves_left = nullptr;
  const int* wanted = nullptr;       // non-null: only these logits of each row are copied back
  const int* offsets = nullptr;      // row i's: wanted[offsets[i] .. offsets[i + 1])
};

}  // namespace

struct lc0core_mux {
  lc0core_forward_fn forward = nullptr;
  void* ctx = nullptr;
  int max_batch = 0;
  int mode = LC0CORE_MUX_MERGE;
  std::vector<std::unique_ptr<Client>> clients;

  // One mutex; each waiting client sleeps on its own condition variable, so
  // a round's end wakes its own clients and at most one more (to lead the
  // next round), not every search of the mux.
  std::mutex mutex;
  std::vector<Client*> queue;        // waiting clients, in arrival order
  long long queued_rows = 0;
  int active = 0;
  bool running = false;              // a round is at the network (only its leader touches the buffers)

  // One call's merged rows (MERGE, FIXED): the caller's buffers when given
  // (lc0core_mux_set_buffers: pinned memory a GPU moves by DMA, with no
  // staging copy), else these vectors, reused from round to round.
  struct Rows {
    uint64_t* masks = nullptr;
    float *values = nullptr, *policy = nullptr, *wdl = nullptr, *moves_left = nullptr;
    int capacity = 0;
  } caller;
  std::vector<uint64_t> masks;
  std::vector<float> values, policy, wdl, moves_left;

  lc0core_mux_stats stats{};
  Clock::time_point created = Clock::now();
  Clock::time_point last_end{};      // the last round's end (none yet: epoch)
  bool ready_at_end = false;         // the next round was ready when it ended
};

namespace {

bool round_ready(const lc0core_mux& m) {
  if (m.queue.empty() || m.running) return false;
  if (int(m.queue.size()) >= m.active) return true;
  return m.max_batch > 0 && m.queued_rows >= m.max_batch;
}

// A waiting client runs the next round when it is ready (mutex held).
void wake_a_leader(lc0core_mux& m) {
  if (round_ready(m)) m.queue.front()->wake.notify_one();
}

// One call of the real forward, timed.
int call(lc0core_mux& m, int n, const uint64_t* masks, const float* values, float* policy, float* wdl,
         float* moves_left, double* busy) {
  const auto started = Clock::now();
  const int status = m.forward(m.ctx, n, masks, values, policy, wdl, moves_left);
  *busy += std::chrono::duration<double>(Clock::now() - started).count();
  return status;
}

// Clients whose rows are all back return now, while the round goes on:
// their searches work on their next batches as the network computes the
// rest. One lock for a call's clients.
void answer(lc0core_mux& m, Client* const* clients, size_t count, int status) {
  std::lock_guard<std::mutex> lock(m.mutex);
  for (size_t i = 0; i < count; ++i) {
    Client* c = clients[i];
    c->answered = true;
    c->status = status;
    c->done = true;
    c->wake.notify_one();
  }
}

// Each client's rows as calls of their own (chunks of max_batch).
int run_separate(lc0core_mux& m, const std::vector<Client*>& round, long long* calls, double* busy) {
  int status = 0;
  for (Client* c : round) {
    const int step = m.max_batch > 0 ? m.max_batch : c->n;
    for (int at = 0; at < c->n && status == 0; at += step) {
      const int k = std::min(step, c->n - at);
      status = call(m, k, c->masks + size_t(at) * kNumPlanes, c->values + size_t(at) * kNumPlanes,
                    c->policy + size_t(at) * kPolicySize, c->wdl + size_t(at) * 3, c->moves_left + at, busy);
      ++*calls;
    }
    if (status != 0) break;          // the round's end answers the rest with the failure
    answer(m, &c, 1, status);
  }
  return status;
}

// Rows [from, from + count) of a client's policy from a call's rows: whole
// rows, or only the logits it wants.
void copy_policy(const Client& c, int from, int count, const float* rows) {
  if (!c.wanted) {
    std::memcpy(c.policy + size_t(from) * kPolicySize, rows, sizeof(float) * kPolicySize * count);
    return;
  }
  for (int r = 0; r < count; ++r) {
    const float* row = rows + size_t(r) * kPolicySize;
    float* out = c.policy + size_t(from + r) * kPolicySize;
    for (int k = c.offsets[from + r]; k < c.offsets[from + r + 1]; ++k) out[c.wanted[k]] = row[c.wanted[k]];
  }
}

// Buffers for calls of `step` rows: the caller's, or the mux's own vectors.
lc0core_mux::Rows call_buffers(lc0core_mux& m, int step) {
  if (m.caller.capacity >= step) return m.caller;
  if (int(m.moves_left.size()) < step) {
    m.masks.resize(size_t(step) * kNumPlanes);
    m.values.resize(size_t(step) * kNumPlanes);
    m.policy.resize(size_t(step) * kPolicySize);
    m.wdl.resize(size_t(step) * 3);
    m.moves_left.resize(size_t(step));
  }
  return {m.masks.data(), m.values.data(), m.policy.data(), m.wdl.data(), m.moves_left.data(), step};
}

// The round's rows merged, one call per `step` rows (max_batch, or all of
// them): each call's rows gathered from the clients in arrival order (a
// client's batch may span two calls), padded to max_batch in FIXED mode,
// and its outputs copied back to the clients they belong to.
int run_merged(lc0core_mux& m, const std::vector<Client*>& round, int rows, long long* calls,
               long long* padded, double* busy) {
  const bool fixed = m.mode == LC0CORE_MUX_FIXED;
  const int step = m.max_batch > 0 ? m.max_batch : rows;
  const lc0core_mux::Rows b = call_buffers(m, step);
  struct Part {
    Client* client;
    int from, count, at;             // the client's rows [from, from + count) at row `at` of the call
  };
  std::vector<Part> parts;
  std::vector<Client*> finished;     // the call's clients whose last row it held
  size_t next = 0;                   // the first client with rows not yet sent, and its first such row
  int offset = 0;
  int status = 0;
  for (int first = 0; first < rows && status == 0; first += step) {
    const int k = std::min(step, rows - first);
    parts.clear();
    for (int at = 0; at < k;) {
      Client* c = round[next];
      const int take = std::min(c->n - offset, k - at);
      std::memcpy(b.masks + size_t(at) * kNumPlanes, c->masks + size_t(offset) * kNumPlanes,
                  sizeof(uint64_t) * kNumPlanes * take);
      std::memcpy(b.values + size_t(at) * kNumPlanes, c->values + size_t(offset) * kNumPlanes,
                  sizeof(float) * kNumPlanes * take);
      parts.push_back({c, offset, take, at});
      at += take, offset += take;
      if (offset == c->n) ++next, offset = 0;
    }
    const int size = fixed ? step : k;
    if (size > k) {                  // padding: empty boards, outputs thrown away
      std::memset(b.masks + size_t(k) * kNumPlanes, 0, sizeof(uint64_t) * kNumPlanes * (size - k));
      std::memset(b.values + size_t(k) * kNumPlanes, 0, sizeof(float) * kNumPlanes * (size - k));
      *padded += size - k;
    }
    status = call(m, size, b.masks, b.values, b.policy, b.wdl, b.moves_left, busy);
    ++*calls;
    if (status != 0) break;
    finished.clear();
    for (const Part& p : parts) {
      Client* c = p.client;
      copy_policy(*c, p.from, p.count, b.policy + size_t(p.at) * kPolicySize);
      std::memcpy(c->wdl + size_t(p.from) * 3, b.wdl + size_t(p.at) * 3, sizeof(float) * 3 * p.count);
      std::memcpy(c->moves_left + p.from, b.moves_left + p.at, sizeof(float) * p.count);
      if (p.from + p.count == c->n) finished.push_back(c);
    }
    answer(m, finished.data(), finished.size(), 0);
  }
  return status;
}

// Runs the queued round with the lock released; each client is answered as
// soon as its rows are back, the rest (after a failure) at the end.
void run_round(lc0core_mux& m, std::unique_lock<std::mutex>& lock) {
  // All of the queue; but in FIXED mode, when the round starts for its rows
  // while some searches are still working, only the first whole clients
  // that fill full calls: the rest wait for the next round (with those
  // searches' rows) rather than go as padding.
  size_t take = m.queue.size();
  long long rows = m.queued_rows;
  if (m.mode == LC0CORE_MUX_FIXED && int(m.queue.size()) < m.active) {
    const long long full = m.queued_rows / m.max_batch * m.max_batch;
    rows = 0, take = 0;
    while (take < m.queue.size() && rows + m.queue[take]->n <= full) rows += m.queue[take++]->n;
    if (take == 0) rows = m.queue[take++]->n;
  }
  std::vector<Client*> round(m.queue.begin(), m.queue.begin() + take);
  m.queue.erase(m.queue.begin(), m.queue.begin() + take);
  m.queued_rows -= rows;
  m.running = true;
  const Clock::time_point started = Clock::now();
  if (m.last_end != Clock::time_point{}) {
    const double gap = std::chrono::duration<double>(started - m.last_end).count();
    m.stats.gap_s += gap;
    if (m.ready_at_end) m.stats.ready_gaps += 1, m.stats.ready_gap_s += gap;
  }
  for (Client* c : round) c->answered = false;
  lock.unlock();
  long long calls = 0, padded = 0;
  double busy = 0.0;
  const int status = m.mode == LC0CORE_MUX_SEPARATE ? run_separate(m, round, &calls, &busy)
                                                    : run_merged(m, round, int(rows), &calls, &padded, &busy);
  lock.lock();
  for (Client* c : round) {          // those a failed call left unanswered
    if (c->answered) continue;       // (an answered one may have queued its next call already)
    c->answered = true;
    c->status = status;
    c->done = true;
    c->wake.notify_one();
  }
  m.running = false;
  m.stats.rounds += 1;
  m.stats.calls += calls;
  m.stats.rows += rows;
  m.stats.padded_rows += padded;
  m.stats.largest_round = std::max(m.stats.largest_round, int(rows));
  m.stats.busy_s += busy;
  m.last_end = Clock::now();
  m.stats.round_s += std::chrono::duration<double>(m.last_end - started).count();
  m.ready_at_end = round_ready(m);
  wake_a_leader(m);                  // clients that queued meanwhile
}

Client* client_of(void* ctx) {
  lc0core::require(ctx, "mux client");
  return static_cast<Client*>(ctx);
}

}  // namespace

LC0CORE_EXPORT int lc0core_mux_create(lc0core_forward_fn forward, void* ctx, int max_batch, int mode,
                                      int clients, lc0core_mux** out) {
  return lc0core::guarded([&] {
    lc0core::require(out, "out");
    *out = nullptr;
    lc0core::require(reinterpret_cast<const void*>(forward), "forward");
    if (clients < 1 || clients > 65536) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "clients must be 1..65536");
    if (max_batch < 0) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "max_batch < 0");
    if (mode != LC0CORE_MUX_MERGE && mode != LC0CORE_MUX_FIXED && mode != LC0CORE_MUX_SEPARATE) {
      throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "unknown mux mode");
    }
    if (mode == LC0CORE_MUX_FIXED && max_batch < 1) {
      throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "the FIXED mode needs max_batch >= 1");
    }
    std::unique_ptr<lc0core_mux> mux(new lc0core_mux());
    mux->forward = forward, mux->ctx = ctx, mux->max_batch = max_batch, mux->mode = mode;
    for (int i = 0; i < clients; ++i) {
      mux->clients.emplace_back(new Client());
      mux->clients.back()->mux = mux.get();
    }
    *out = mux.release();
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_mux_set_buffers(lc0core_mux* mux, uint64_t* masks, float* values, float* policy,
                                           float* wdl, float* moves_left, int rows) {
  return lc0core::guarded([&] {
    lc0core::require(mux, "mux");
    for (const void* p : {static_cast<const void*>(masks), static_cast<const void*>(values),
                          static_cast<const void*>(policy), static_cast<const void*>(wdl),
                          static_cast<const void*>(moves_left)}) {
      lc0core::require(p, "a buffer");
    }
    if (mux->mode == LC0CORE_MUX_SEPARATE || mux->max_batch < 1 || rows < mux->max_batch) {
      throw lc0core::Error(LC0CORE_INVALID_ARGUMENT,
                           "buffers serve calls of max_batch rows (MERGE or FIXED, max_batch >= 1): rows < max_batch");
    }
    std::lock_guard<std::mutex> lock(mux->mutex);
    if (mux->running) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "a round is running");
    mux->caller = {masks, values, policy, wdl, moves_left, rows};
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT void lc0core_mux_destroy(lc0core_mux* mux) { delete mux; }

LC0CORE_EXPORT void* lc0core_mux_client(lc0core_mux* mux, int index) {
  if (!mux || index < 0 || index >= int(mux->clients.size())) return nullptr;
  return mux->clients[index].get();
}

namespace {

int forward_rows(void* ctx, int n, const uint64_t* masks, const float* values, const int* wanted,
                 const int* offsets, float* policy, float* wdl, float* moves_left) {
  return lc0core::guarded([&] {
    Client* c = client_of(ctx);
    if (n < 0) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "negative batch size");
    if ((wanted == nullptr) != (offsets == nullptr)) {
      throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "wanted and offsets go together");
    }
    if (n == 0) return int(LC0CORE_OK);
    for (const void* p : {static_cast<const void*>(masks), static_cast<const void*>(values),
                          static_cast<const void*>(policy), static_cast<const void*>(wdl),
                          static_cast<const void*>(moves_left)}) {
      lc0core::require(p, "a batch buffer");
    }
    lc0core_mux& m = *c->mux;
    std::unique_lock<std::mutex> lock(m.mutex);
    if (!c->active) c->active = true, ++m.active;
    c->n = n, c->masks = masks, c->values = values, c->policy = policy, c->wdl = wdl, c->moves_left = moves_left;
    c->wanted = wanted, c->offsets = offsets;
    c->done = false;
    m.queue.push_back(c);
    m.queued_rows += n;
    while (!c->done) {
      if (round_ready(m)) {
        run_round(m, lock);          // its rows may be left for a later round
      } else {
        c->wake.wait(lock);
      }
    }
    return c->status;                // the real forward's own status: its library holds the message
  });
}

}  // namespace

LC0CORE_EXPORT int lc0core_mux_forward(void* ctx, int n, const uint64_t* masks, const float* values,
                                       float* policy, float* wdl, float* moves_left) {
  return forward_rows(ctx, n, masks, values, nullptr, nullptr, policy, wdl, moves_left);
}

LC0CORE_EXPORT int lc0core_mux_forward_wanted(void* ctx, int n, const uint64_t* masks, const float* values,
                                              const int* wanted, const int* offsets, float* policy,
                                              float* wdl, float* moves_left) {
  return forward_rows(ctx, n, masks, values, wanted, offsets, policy, wdl, moves_left);
}

LC0CORE_EXPORT void lc0core_mux_release(void* ctx) {
  if (!ctx) return;
  Client* c = static_cast<Client*>(ctx);
  lc0core_mux& m = *c->mux;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (!c->active) return;
  c->active = false;
  --m.active;
  wake_a_leader(m);                  // the rest may now all be waiting
}

LC0CORE_EXPORT int lc0core_mux_get_stats(lc0core_mux* mux, lc0core_mux_stats* out) {
  return lc0core::guarded([&] {
    lc0core::require(mux, "mux");
    lc0core::require(out, "out");
    std::lock_guard<std::mutex> lock(mux->mutex);
    *out = mux->stats;
    out->wall_s = std::chrono::duration<double>(Clock::now() - mux->created).count();
    return int(LC0CORE_OK);
  });
}
