// search_many.cpp - many positions searched at once (include/lc0core_search_many.h):
// a job queue and one thread per search handle that runs jobs through the
// search's own C ABI (lc0core_search.h), so nothing here reaches into the
// search's internals.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "../include/lc0core_search_many.h"
#include "errors.h"
#include "position_rows.h"

namespace {

constexpr size_t kMaxRow = 1 << 20;
constexpr int kMaxSearches = 4096;

struct Job {
  std::string row;
  lc0core_search_limits limits{};
  bool finished = false;
  lc0core_search_job result{};
  std::vector<lc0core_root_edge> edges;
  std::string pv, error;
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Worker {
  lc0core_search_many_stats stats{};   // its thread's time (written under the many's mutex)
  lc0core_search* handle = nullptr;
  lc0core_info_fn on_end = nullptr;
  void* on_end_ctx = nullptr;
  std::thread thread;
};

}  // namespace

struct lc0core_search_many {
  std::vector<std::unique_ptr<Worker>> workers;
  std::mutex mutex;
  std::condition_variable work;      // jobs queued, or stopping
  std::condition_variable progress;  // a job finished
  std::deque<Job> jobs;              // job `base + i` is jobs[i]
  long long base = 0;                // first job not forgotten
  long long next = 0;                // next job to hand out
  long long finished_below = 0;      // every job below this has finished
  bool stopping = false;
  bool cancelled = false;
};

namespace {

// A job's status and message from the core's last error.
void fail(Job* job, int status, const std::string& message) {
  job->result.status = status;
  job->error = message.empty() ? "status " + std::to_string(status) : message;
}

int check(Job* job, int status) {
  if (status != LC0CORE_OK) fail(job, status, lc0core_last_error());
  return status;
}

// What the caller reads later: statistics, root edges, best edge and its PV.
void collect(lc0core_search* h, Job* job) {
  lc0core_search_job& r = job->result;
  if (check(job, lc0core_search_get_stats(h, &r.stats)) != LC0CORE_OK) return;
  job->edges.resize(size_t(std::max(1, r.stats.num_edges)));
  int count = 0;
  if (check(job, lc0core_search_root_edges(h, job->edges.data(), int(job->edges.size()), &count)) != LC0CORE_OK) return;
  job->edges.resize(size_t(count));
  r.num_edges = count;
  int best = -1, found = 0;
  if (check(job, lc0core_search_best_edges(h, 1, &best, &found)) != LC0CORE_OK) return;
  r.best_edge = found ? best : -1;
  if (r.best_edge < 0) return;
  std::vector<char> text(4096);
  for (;;) {
    const int status = lc0core_search_pv(h, r.best_edge, text.data(), int(text.size()));
    if (status == LC0CORE_BUFFER_TOO_SMALL && text.size() < kMaxRow) {
      text.resize(text.size() * 8);
      continue;
    }
    if (check(job, status) == LC0CORE_OK) job->pv = text.data();
    return;
  }
}

// One job on one handle: a fresh tree and NN cache (results must not depend
// on which jobs the handle ran before), no search without a legal move.
void run_job(lc0core_search_many* many, const Worker* w, Job* job, lc0core_search_many_stats* times) {
  Clock::time_point started = Clock::now();
  lc0core_search_job& r = job->result;
  r.best_edge = -1;
  lc0core::PositionHistory history;
  std::string error;
  const int parsed = lc0core::parse_position_row(job->row.c_str(), job->row.size() + 1, &history, &error);
  if (parsed != LC0CORE_OK) return fail(job, parsed, error);
  lc0core::MoveList legal;
  lc0core::legal_moves(history.last(), &legal);
  if (legal.count == 0) {
    r.outcome = lc0core::in_check(history.last()) ? LC0CORE_JOB_CHECKMATE : LC0CORE_JOB_STALEMATE;
    return;
  }
  std::string fen, moves;
  lc0core::split_position_row(job->row, &fen, &moves);
  lc0core_search* h = w->handle;
  if (check(job, lc0core_search_new_game(h)) != LC0CORE_OK) return;
  if (check(job, lc0core_search_set_position(h, fen.c_str(), moves.c_str(), 0)) != LC0CORE_OK) return;
  {
    std::lock_guard<std::mutex> lock(many->mutex);
    if (many->cancelled) return fail(job, LC0CORE_INVALID_ARGUMENT, "cancelled");
  }
  job->limits.searchmoves = nullptr;
  times->setup_s += seconds_since(started);
  started = Clock::now();
  const int searched = check(job, lc0core_search_run(h, &job->limits));
  times->search_s += seconds_since(started);
  if (searched != LC0CORE_OK) return;
  collect(h, job);
}

void worker_loop(lc0core_search_many* many, Worker* w) {
  std::unique_lock<std::mutex> lock(many->mutex);
  for (;;) {
    const Clock::time_point waiting = Clock::now();
    many->work.wait(lock, [many] { return many->stopping || many->next < many->base + static_cast<long long>(many->jobs.size()); });
    if (many->stopping) return;
    w->stats.job_wait_s += seconds_since(waiting);
    w->stats.jobs += 1;
    Job* job = &many->jobs[size_t(many->next - many->base)];
    ++many->next;
    const bool cancelled = many->cancelled;
    lock.unlock();
    const Clock::time_point started = Clock::now();
    lc0core_search_many_stats times{};
    if (cancelled) {
      fail(job, LC0CORE_INVALID_ARGUMENT, "cancelled");
    } else {
      lc0core::clear_last_error();
      try {
        run_job(many, w, job, &times);
      } catch (const std::exception& e) {
        fail(job, LC0CORE_INTERNAL_ERROR, std::string("internal error: ") + e.what());
      }
    }
    // The job made its last network call: a mux must not wait for it.
    if (w->on_end) w->on_end(w->on_end_ctx);
    const double spent = seconds_since(started);
    lock.lock();
    w->stats.setup_s += times.setup_s;
    w->stats.search_s += times.search_s;
    w->stats.result_s += std::max(0.0, spent - times.setup_s - times.search_s);
    job->finished = true;
    while (many->finished_below < many->base + static_cast<long long>(many->jobs.size()) &&
           many->jobs[size_t(many->finished_below - many->base)].finished) {
      ++many->finished_below;
    }
    many->progress.notify_all();
  }
}

Job* job_of(lc0core_search_many* many, long long id) {
  lc0core::require(many, "search_many");
  std::lock_guard<std::mutex> lock(many->mutex);
  if (id < many->base || id >= many->base + static_cast<long long>(many->jobs.size())) {
    throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "no such job (forgotten or not submitted)");
  }
  Job* job = &many->jobs[size_t(id - many->base)];
  if (!job->finished) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "the job has not finished");
  return job;
}

void copy_text(const std::string& text, char* out, int capacity) {
  lc0core::require(out, "out");
  if (capacity < 1) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "capacity < 1");
  if (int(text.size()) + 1 > capacity) throw lc0core::Error(LC0CORE_BUFFER_TOO_SMALL, "the text does not fit");
  std::memcpy(out, text.c_str(), text.size() + 1);
}

}  // namespace

LC0CORE_EXPORT int lc0core_search_many_create(int searches, lc0core_search_many** out) {
  return lc0core::guarded([&] {
    lc0core::require(out, "out");
    *out = nullptr;
    if (searches < 1 || searches > kMaxSearches) {
      throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "searches must be 1.." + std::to_string(kMaxSearches));
    }
    std::unique_ptr<lc0core_search_many> many(new lc0core_search_many());
    for (int i = 0; i < searches; ++i) {
      std::unique_ptr<Worker> w(new Worker());
      const int status = lc0core_search_create(&w->handle);
      if (status != LC0CORE_OK) throw lc0core::Error(status, lc0core_last_error());
      many->workers.push_back(std::move(w));
    }
    for (auto& w : many->workers) w->thread = std::thread(worker_loop, many.get(), w.get());
    *out = many.release();
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT void lc0core_search_many_destroy(lc0core_search_many* many) {
  if (!many) return;
  {
    std::lock_guard<std::mutex> lock(many->mutex);
    many->stopping = true, many->cancelled = true;
    many->work.notify_all();
  }
  for (auto& w : many->workers) {
    if (w->handle) lc0core_search_stop(w->handle);
  }
  for (auto& w : many->workers) {
    if (w->thread.joinable()) w->thread.join();
    lc0core_search_destroy(w->handle);
  }
  delete many;
}

LC0CORE_EXPORT lc0core_search* lc0core_search_many_handle(lc0core_search_many* many, int index) {
  if (!many || index < 0 || index >= int(many->workers.size())) return nullptr;
  return many->workers[index]->handle;
}

LC0CORE_EXPORT int lc0core_search_many_on_end(lc0core_search_many* many, int index, lc0core_info_fn fn,
                                              void* ctx) {
  return lc0core::guarded([&] {
    lc0core::require(many, "search_many");
    if (index < 0 || index >= int(many->workers.size())) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "no such search");
    std::lock_guard<std::mutex> lock(many->mutex);
    if (many->next != many->base + static_cast<long long>(many->jobs.size()) || many->finished_below != many->next) {
      throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "jobs are running");
    }
    many->workers[index]->on_end = fn;
    many->workers[index]->on_end_ctx = ctx;
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_submit(lc0core_search_many* many, int n, const char* rows, size_t length,
                                              const lc0core_search_limits* limits, long long* first) {
  return lc0core::guarded([&] {
    lc0core::require(many, "search_many");
    lc0core::require(first, "first");
    if (n < 0) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "n < 0");
    if (n > 0) {
      lc0core::require(rows, "rows");
      lc0core::require(limits, "limits");
    }
    std::vector<std::string> texts;
    texts.reserve(size_t(n));
    size_t at = 0;
    for (int i = 0; i < n; ++i) {
      const void* end = at < length ? std::memchr(rows + at, '\0', std::min(length - at, kMaxRow + 1)) : nullptr;
      if (!end) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "row " + std::to_string(i) + " is not NUL-terminated within `length` (or longer than 1 MB)");
      const size_t size = size_t(static_cast<const char*>(end) - (rows + at));
      texts.emplace_back(rows + at, size);
      at += size + 1;
    }
    std::lock_guard<std::mutex> lock(many->mutex);
    *first = many->base + static_cast<long long>(many->jobs.size());
    for (int i = 0; i < n; ++i) {
      many->jobs.emplace_back();
      many->jobs.back().row = std::move(texts[size_t(i)]);
      many->jobs.back().limits = limits[i];
    }
    many->work.notify_all();
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_wait(lc0core_search_many* many, long long end, double timeout_s,
                                            long long* finished) {
  return lc0core::guarded([&] {
    lc0core::require(many, "search_many");
    lc0core::require(finished, "finished");
    if (!(timeout_s >= 0)) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "timeout < 0");
    std::unique_lock<std::mutex> lock(many->mutex);
    const long long last = many->base + static_cast<long long>(many->jobs.size());
    if (end > last) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "waiting for jobs not submitted");
    many->progress.wait_for(lock, std::chrono::duration<double>(std::min(timeout_s, 1e6)),
                            [&] { return many->finished_below >= end; });
    *finished = many->finished_below;
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_job(lc0core_search_many* many, long long id, lc0core_search_job* out) {
  return lc0core::guarded([&] {
    lc0core::require(out, "out");
    *out = job_of(many, id)->result;
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_edges(lc0core_search_many* many, long long id, lc0core_root_edge* out,
                                             int capacity, int* count) {
  return lc0core::guarded([&] {
    lc0core::require(count, "count");
    const Job* job = job_of(many, id);
    *count = int(job->edges.size());
    if (*count > capacity) throw lc0core::Error(LC0CORE_BUFFER_TOO_SMALL, "root edges do not fit");
    if (*count > 0) {
      lc0core::require(out, "out");
      std::memcpy(out, job->edges.data(), sizeof(lc0core_root_edge) * job->edges.size());
    }
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_pv(lc0core_search_many* many, long long id, char* out, int capacity) {
  return lc0core::guarded([&] {
    copy_text(job_of(many, id)->pv, out, capacity);
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_results(lc0core_search_many* many, long long first, int count,
                                               lc0core_search_job* jobs, lc0core_root_edge* best_edges,
                                               char* pv, size_t pv_capacity, size_t* pv_offsets,
                                               size_t* pv_needed) {
  return lc0core::guarded([&] {
    lc0core::require(pv_needed, "pv_needed");
    if (count < 0) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "count < 0");
    if (count == 0) {
      *pv_needed = 0;
      return int(LC0CORE_OK);
    }
    lc0core::require(jobs, "jobs");
    lc0core::require(best_edges, "best_edges");
    lc0core::require(pv_offsets, "pv_offsets");
    std::vector<const Job*> found(static_cast<size_t>(count));
    size_t needed = 0;
    for (int i = 0; i < count; ++i) {
      found[size_t(i)] = job_of(many, first + i);
      pv_offsets[i] = needed;
      needed += found[size_t(i)]->pv.size() + 1;
    }
    *pv_needed = needed;
    if (needed > pv_capacity) throw lc0core::Error(LC0CORE_BUFFER_TOO_SMALL, "the PVs do not fit");
    lc0core::require(pv, "pv");
    for (int i = 0; i < count; ++i) {
      const Job* job = found[size_t(i)];
      jobs[i] = job->result;
      const int best = job->result.best_edge;
      if (best >= 0 && best < int(job->edges.size())) {
        best_edges[i] = job->edges[size_t(best)];
      } else {
        std::memset(&best_edges[i], 0, sizeof(best_edges[i]));
      }
      std::memcpy(pv + pv_offsets[i], job->pv.c_str(), job->pv.size() + 1);
    }
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_error(lc0core_search_many* many, long long id, char* out, int capacity) {
  return lc0core::guarded([&] {
    copy_text(job_of(many, id)->error, out, capacity);
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_get_stats(lc0core_search_many* many, lc0core_search_many_stats* out) {
  return lc0core::guarded([&] {
    lc0core::require(many, "search_many");
    lc0core::require(out, "out");
    std::lock_guard<std::mutex> lock(many->mutex);
    lc0core_search_many_stats sum{};
    for (const auto& w : many->workers) {
      sum.job_wait_s += w->stats.job_wait_s, sum.setup_s += w->stats.setup_s;
      sum.search_s += w->stats.search_s, sum.result_s += w->stats.result_s;
      sum.jobs += w->stats.jobs;
    }
    *out = sum;
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_forget(lc0core_search_many* many, long long end) {
  return lc0core::guarded([&] {
    lc0core::require(many, "search_many");
    std::lock_guard<std::mutex> lock(many->mutex);
    if (end > many->finished_below) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "forgetting jobs that have not finished");
    while (many->base < end) {
      many->jobs.pop_front();
      ++many->base;
    }
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_search_many_cancel(lc0core_search_many* many) {
  return lc0core::guarded([&] {
    lc0core::require(many, "search_many");
    {
      std::lock_guard<std::mutex> lock(many->mutex);
      many->cancelled = true;
    }
    for (auto& w : many->workers) lc0core_search_stop(w->handle);
    return int(LC0CORE_OK);
  });
}
