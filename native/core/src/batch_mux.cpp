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
  int status = 0;
  int n = 0;
  const uint64_t* masks = nullptr;
  const float* values = nullptr;
  float* policy = nullptr;
  float* wdl = nullptr;
  float* moves_left = nullptr;
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

  // The merged rows of a round (MERGE, FIXED), reused from round to round.
  std::vector<uint64_t> masks;
  std::vector<float> values, policy, wdl, moves_left;

  lc0core_mux_stats stats{};
  Clock::time_point created = Clock::now();
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
    c->status = status;
  }
  return status;
}

// The round's rows merged into one batch, run in chunks (padded to max_batch
// in FIXED mode), the outputs copied back to each client.
int run_merged(lc0core_mux& m, const std::vector<Client*>& round, int rows, long long* calls,
               long long* padded, double* busy) {
  const bool fixed = m.mode == LC0CORE_MUX_FIXED;
  const int step = m.max_batch > 0 ? m.max_batch : rows;
  const int capacity = fixed ? (rows + step - 1) / step * step : rows;
  if (int(m.wdl.size()) < capacity * 3) {
    m.masks.resize(size_t(capacity) * kNumPlanes);
    m.values.resize(size_t(capacity) * kNumPlanes);
    m.policy.resize(size_t(capacity) * kPolicySize);
    m.wdl.resize(size_t(capacity) * 3);
    m.moves_left.resize(size_t(capacity));
  }
  int at = 0;
  for (const Client* c : round) {
    std::memcpy(m.masks.data() + size_t(at) * kNumPlanes, c->masks, sizeof(uint64_t) * kNumPlanes * c->n);
    std::memcpy(m.values.data() + size_t(at) * kNumPlanes, c->values, sizeof(float) * kNumPlanes * c->n);
    at += c->n;
  }
  if (capacity > rows) {             // padding: empty boards, outputs thrown away
    std::fill(m.masks.begin() + size_t(rows) * kNumPlanes, m.masks.begin() + size_t(capacity) * kNumPlanes, 0);
    std::fill(m.values.begin() + size_t(rows) * kNumPlanes, m.values.begin() + size_t(capacity) * kNumPlanes, 0.0f);
    *padded += capacity - rows;
  }
  int status = 0;
  for (int first = 0; first < capacity && status == 0; first += step) {
    const int k = std::min(step, capacity - first);
    status = call(m, k, m.masks.data() + size_t(first) * kNumPlanes, m.values.data() + size_t(first) * kNumPlanes,
                  m.policy.data() + size_t(first) * kPolicySize, m.wdl.data() + size_t(first) * 3,
                  m.moves_left.data() + first, busy);
    ++*calls;
  }
  at = 0;
  for (Client* c : round) {
    if (status == 0) {
      std::memcpy(c->policy, m.policy.data() + size_t(at) * kPolicySize, sizeof(float) * kPolicySize * c->n);
      std::memcpy(c->wdl, m.wdl.data() + size_t(at) * 3, sizeof(float) * 3 * c->n);
      std::memcpy(c->moves_left, m.moves_left.data() + at, sizeof(float) * c->n);
    }
    c->status = status;
    at += c->n;
  }
  return status;
}

// Runs the queued round with the lock released, then answers its clients.
void run_round(lc0core_mux& m, std::unique_lock<std::mutex>& lock) {
  std::vector<Client*> round;
  round.swap(m.queue);
  const int rows = int(m.queued_rows);
  m.queued_rows = 0;
  m.running = true;
  lock.unlock();
  long long calls = 0, padded = 0;
  double busy = 0.0;
  if (m.mode == LC0CORE_MUX_SEPARATE) {
    run_separate(m, round, &calls, &busy);
  } else {
    run_merged(m, round, rows, &calls, &padded, &busy);
  }
  lock.lock();
  for (Client* c : round) {
    c->done = true;
    c->wake.notify_one();
  }
  m.running = false;
  m.stats.rounds += 1;
  m.stats.calls += calls;
  m.stats.rows += rows;
  m.stats.padded_rows += padded;
  m.stats.largest_round = std::max(m.stats.largest_round, rows);
  m.stats.busy_s += busy;
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

LC0CORE_EXPORT void lc0core_mux_destroy(lc0core_mux* mux) { delete mux; }

LC0CORE_EXPORT void* lc0core_mux_client(lc0core_mux* mux, int index) {
  if (!mux || index < 0 || index >= int(mux->clients.size())) return nullptr;
  return mux->clients[index].get();
}

LC0CORE_EXPORT int lc0core_mux_forward(void* ctx, int n, const uint64_t* masks, const float* values,
                                       float* policy, float* wdl, float* moves_left) {
  return lc0core::guarded([&] {
    Client* c = client_of(ctx);
    if (n < 0) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "negative batch size");
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
    c->done = false;
    m.queue.push_back(c);
    m.queued_rows += n;
    while (!c->done) {
      if (round_ready(m)) {
        run_round(m, lock);          // this client's rows are in it: done now
      } else {
        c->wake.wait(lock);
      }
    }
    return c->status;                // the real forward's own status: its library holds the message
  });
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
