// api_search.cpp - the C ABI of the native search (include/lc0core_search.h):
// the handle (tree, NN cache, knobs, network, game), tree reuse between
// positions of one game, runs and result queries.
#include <algorithm>
#include <atomic>
#include <cxxabi.h>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include "../include/lc0core_search.h"
#include "errors.h"
#include "search/search.h"

using namespace lc0core;
using namespace lc0core::search;

struct lc0core_search {
  SearchParams params;
  Evaluator evaluator;
  NNCache cache{2000000};
  std::unique_ptr<Tree> tree;
  std::string start_fen;
  bool chess960 = false;
  std::vector<Move> moves;
  PositionHistory history;
  bool has_position = false;
  std::unique_ptr<Search> last;      // the last run, for result queries (set before its worker starts)
  RunScratch scratch;                // the runs' batches, kept between runs
  std::mutex tree_mutex;             // the tree, between the worker and readers
  std::atomic<bool> stop{false};
  // The worker thread of a run and how it ended.
  std::thread worker;
  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool done = true;
  bool tree_broken = false;          // a failed run leaves visits in flight: start afresh
  int worker_status = LC0CORE_OK;
  std::string worker_error;

  ~lc0core_search() {
    stop.store(true);
    if (worker.joinable()) worker.join();
  }
};

namespace {

constexpr size_t kMaxText = 1 << 20;

lc0core_search* checked(lc0core_search* s) {
  require(s, "search handle");
  return s;
}

// Before changing the handle: a run still going must have been told to stop
// (then its current batch is waited for), else the change is refused.
void settle(lc0core_search* s) {
  checked(s);
  if (!s->worker.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(s->done_mutex);
    if (!s->done && !s->stop.load()) throw Error(LC0CORE_INVALID_ARGUMENT, "a search is running");
  }
  s->worker.join();
}

Search& last_run(lc0core_search* s) {
  if (!checked(s)->last) throw Error(LC0CORE_INVALID_ARGUMENT, "no search has run on this handle");
  return *s->last;
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The body of a run's thread: the search with the info callback between
// iterations; a status, never an exception, except a thread cancellation,
// which must pass (catching it aborts the process).
int run_worker(lc0core_search* search, lc0core_info_fn on_info, void* info_ctx,
               std::chrono::duration<double> interval) {
  using Clock = std::chrono::steady_clock;
  try {
    clear_last_error();
    auto next_info = Clock::now() + interval;
    search->last->run([&] {
      if (on_info && Clock::now() >= next_info) {
        on_info(info_ctx);
        next_info = Clock::now() + interval;
      }
    });
    return LC0CORE_OK;
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return LC0CORE_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(e.what());
    return LC0CORE_INTERNAL_ERROR;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return LC0CORE_INTERNAL_ERROR;
  }
}

bool is_startpos(const Position& pos) {
  Position start;
  std::string error;
  parse_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", false, &start, &error);
  return pos == start;
}

}  // namespace

LC0CORE_EXPORT int lc0core_search_create(lc0core_search** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    *out = new lc0core_search();
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT void lc0core_search_destroy(lc0core_search* search) { delete search; }

LC0CORE_EXPORT int lc0core_search_set_option(lc0core_search* search, const char* name, double value) {
  return guarded([&] {
    const std::string key = bounded_string(name, 256, "option name");
    settle(search);
    if (!(value >= -2147483648.0 && value <= 2147483647.0) && key != "NNCacheSize") {
      throw Error(LC0CORE_INVALID_ARGUMENT, "option " + key + ": out of range");
    }
    if (!(value >= 0 && value <= 4e9) && key == "NNCacheSize") {
      throw Error(LC0CORE_INVALID_ARGUMENT, "option NNCacheSize: out of range");
    }
    if (key == "MinibatchSize" && value < 1) {
      throw Error(LC0CORE_INVALID_ARGUMENT, "MinibatchSize must be >= 1 here");
    }
    if (!search->params.set(key, value)) throw Error(LC0CORE_INVALID_ARGUMENT, "unknown option " + key);
    if (key == "NNCacheSize") search->cache.set_capacity(search->params.NNCacheSize);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_set_evaluator(lc0core_search* search, const lc0core_evaluator* e) {
  return guarded([&] {
    require(e, "evaluator");
    require(reinterpret_cast<const void*>(e->forward), "evaluator.forward");
    if (!is_supported_input_format(e->input_format)) {
      throw Error(LC0CORE_INVALID_ARGUMENT, "unsupported input format " + std::to_string(e->input_format));
    }
    if (e->max_batch < 0) throw Error(LC0CORE_INVALID_ARGUMENT, "max_batch < 0");
    settle(search);
    Evaluator& ev = search->evaluator;
    ev.slots.assign(1, EvaluatorSlot{e->forward, e->ctx, e->max_batch, e->forward_wanted});
    ev.input_format = e->input_format, ev.has_moves_left = e->has_moves_left != 0;
    ev.tb_probe = e->tb_probe, ev.tb_ctx = e->tb_ctx, ev.tb_max_pieces = e->tb_max_pieces;
    search->last.reset();
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_add_slot(lc0core_search* search, lc0core_forward_fn forward, void* ctx,
                                           int max_batch) {
  return guarded([&] {
    require(reinterpret_cast<const void*>(forward), "forward");
    if (max_batch < 0) throw Error(LC0CORE_INVALID_ARGUMENT, "max_batch < 0");
    settle(search);
    Evaluator& ev = search->evaluator;
    if (ev.slots.empty()) throw Error(LC0CORE_INVALID_ARGUMENT, "set the evaluator before adding slots");
    if (ev.slots.size() >= 256) throw Error(LC0CORE_INVALID_ARGUMENT, "too many evaluator slots (256)");
    ev.slots.push_back(EvaluatorSlot{forward, ctx, max_batch, nullptr});
    search->last.reset();
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_set_memo(lc0core_search* search, lc0core_eval_memo* memo) {
  return guarded([&] {
    settle(search);
    search->evaluator.memo = memo ? &memo->memo : nullptr;
    search->last.reset();
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_new_game(lc0core_search* search) {
  return guarded([&] {
    settle(search);
    search->last.reset();
    // The game and its tree are gone, the tree's storage kept (as
    // set_position keeps it): analysis starts a game for every position, and
    // a new tree's chunk tables and first chunks, zeroed and faulted in
    // again, took 11 % of a run of short searches (BENCHMARKS.md).
    if (search->tree) search->tree->clear();
    search->tree_broken = false;
    search->has_position = false;
    search->moves.clear();
    search->start_fen.clear();
    search->cache.clear();
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_set_position(lc0core_search* search, const char* fen,
                                               const char* moves, int chess960) {
  return guarded([&] {
    const std::string fen_text = bounded_string(fen, 4096, "fen");
    const std::string move_text = moves ? bounded_string(moves, kMaxText, "moves") : std::string();
    settle(search);
    Position first;
    std::string error;
    if (!parse_fen(fen_text.c_str(), chess960 != 0, &first, &error)) throw Error(LC0CORE_BAD_FEN, error);
    PositionHistory history;
    history.reset(first, is_startpos(first));
    std::vector<Move> game;
    for (const std::string& w : words(move_text)) {
      Move m;
      if (!parse_uci(history.last(), w.c_str(), chess960 != 0, &m)) {
        throw Error(LC0CORE_ILLEGAL_MOVE, "illegal move " + w.substr(0, 16) + " in the position's moves");
      }
      history.push(m);
      game.push_back(m);
    }
    search->last.reset();
    // lc0's ResetToPosition: keep the subtree of the new position when the
    // game continued from the last searched one.
    uint32_t new_root = kNone;
    Tree* tree = search->tree.get();
    if (search->tree_broken) tree = nullptr;
    search->tree_broken = false;
    if (tree && search->start_fen == fen_text && search->chess960 == (chess960 != 0) &&
        game.size() >= search->moves.size() &&
        std::equal(search->moves.begin(), search->moves.end(), game.begin())) {
      new_root = tree->root();
      for (size_t i = search->moves.size(); i < game.size() && new_root != kNone; ++i) {
        uint32_t found = kNone;
        for (EdgeWalk w(*tree, new_root); w.valid(); w.next()) {
          if (tree->edge(w.edge_id()).move == game[i].raw) {
            found = w.child();
            break;
          }
        }
        new_root = found;
      }
    }
    if (new_root == kNone && search->tree) {
      search->tree->clear();           // its storage kept: no allocation for the next tree
    } else if (new_root == kNone) {
      search->tree.reset(new Tree());
    } else if (new_root != tree->root()) {
      search->tree = tree->subtree(new_root);
    }
    if (search->tree->node(search->tree->root()).terminal) {
      search->tree->make_not_terminal(search->tree->root());
    }
    search->start_fen = fen_text;
    search->chess960 = chess960 != 0;
    search->moves = std::move(game);
    search->history = std::move(history);
    search->has_position = true;
    return LC0CORE_OK;
  });
}

namespace {

// A run made ready: limits checked, its Search built, the handle marked busy.
void prepare_run(lc0core_search* search, const lc0core_search_limits* limits) {
  require(limits, "limits");
  settle(search);
  if (!search->has_position) throw Error(LC0CORE_INVALID_ARGUMENT, "no position set");
  if (search->evaluator.slots.empty()) throw Error(LC0CORE_INVALID_ARGUMENT, "no evaluator set");
  Limits l;
  l.nodes = limits->nodes;
  l.movetime = limits->movetime;
  l.time_budget = limits->time_budget;
  l.infinite = limits->infinite != 0;
  l.depth = limits->depth;
  l.mate = limits->mate;
  l.rescale_ratio = limits->rescale_ratio;
  l.rescale_diff = limits->rescale_diff;
  l.contempt_mode = limits->contempt_mode;
  if (limits->searchmoves) {
    for (const std::string& w : words(bounded_string(limits->searchmoves, kMaxText, "searchmoves"))) {
      Move m;
      if (!parse_uci(search->history.last(), w.c_str(), search->chess960, &m)) {
        throw Error(LC0CORE_ILLEGAL_MOVE, "searchmoves: illegal move " + w.substr(0, 16));
      }
      l.searchmoves.push_back(m);
    }
  }
  search->stop.store(false);
  search->last.reset(new Search(search->tree.get(), &search->history, &search->cache,
                                search->params, l, search->evaluator, &search->stop,
                                &search->tree_mutex, &search->scratch));
  search->done = false;
  search->worker_status = LC0CORE_OK;
  search->worker_error.clear();
}

// How a run ended, for lc0core_search_wait and the next run.
void finish_run(lc0core_search* search, int status) {
  std::string error;
  if (status != LC0CORE_OK) error = lc0core_last_error();
  std::lock_guard<std::mutex> lock(search->done_mutex);
  search->worker_status = status;
  search->worker_error = error;
  if (status != LC0CORE_OK) search->tree_broken = true;
  search->done = true;
  search->done_cv.notify_all();
}

}  // namespace

LC0CORE_EXPORT int lc0core_search_start(lc0core_search* search, const lc0core_search_limits* limits,
                                        lc0core_info_fn on_info, void* info_ctx,
                                        double info_interval_s) {
  return guarded([&] {
    if (!(info_interval_s >= 0)) throw Error(LC0CORE_INVALID_ARGUMENT, "info interval < 0");
    prepare_run(search, limits);
    search->worker = std::thread([search, on_info, info_ctx, info_interval_s] {
      finish_run(search, run_worker(search, on_info, info_ctx,
                                    std::chrono::duration<double>(info_interval_s)));
    });
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_run(lc0core_search* search, const lc0core_search_limits* limits) {
  return guarded([&] {
    prepare_run(search, limits);
    const int status = run_worker(search, nullptr, nullptr, std::chrono::duration<double>(0));
    finish_run(search, status);
    if (status != LC0CORE_OK) throw Error(status, search->worker_error);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_wait(lc0core_search* search, double timeout_s, int* finished) {
  return guarded([&] {
    require(finished, "finished");
    checked(search);
    if (!(timeout_s >= 0)) throw Error(LC0CORE_INVALID_ARGUMENT, "timeout < 0");
    std::unique_lock<std::mutex> lock(search->done_mutex);
    search->done_cv.wait_for(lock, std::chrono::duration<double>(std::min(timeout_s, 1e6)),
                             [search] { return search->done; });
    *finished = search->done ? 1 : 0;
    if (search->done && search->worker_status != LC0CORE_OK) {
      throw Error(search->worker_status, search->worker_error);
    }
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_stop(lc0core_search* search) {
  return guarded([&] {
    checked(search)->stop.store(true);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_get_stats(lc0core_search* search, lc0core_search_stats* out) {
  return guarded([&] {
    require(out, "out");
    Search& s = last_run(search);
    std::lock_guard<std::mutex> lock(search->tree_mutex);
    const Tree& tree = s.tree();
    const Node& root = tree.node(tree.root());
    std::memset(out, 0, sizeof(*out));
    out->total_nodes = s.total_nodes();
    out->total_playouts = s.total_playouts();
    out->cum_depth = s.cum_depth();
    out->tb_hits = s.tb_hits();
    out->nn_evals = s.nn_evals();
    out->cache_hits = (long long)search->cache.hits();
    out->memo_hits = s.memo_hits();
    out->max_depth = s.max_depth();
    out->elapsed_ms = s.elapsed_ms();
    out->nps_elapsed_ms = s.nps_elapsed_ms();
    out->root_n = root.n;
    out->root_wl = root.wl, out->root_d = root.d, out->root_m = root.m;
    out->num_edges = tree.is_expanded(tree.root()) ? root.num_edges : 0;
    out->draw_score = s.draw_score(0);
    out->tree_nodes = tree.num_nodes();
    out->tree_bytes = (long long)tree.bytes();
    out->batches = s.network_batches();
    out->network_s = s.network_seconds();
    out->gather_s = s.gather_seconds();
    out->backup_s = s.backup_seconds();
    out->picking_tasks = s.picking_tasks();
    out->expand_s = s.expand_seconds();
    out->expanding_tasks = s.expanding_tasks();
    out->two_fold_fixes = s.two_fold_fixes();
    out->deferred_fixes = s.deferred_fixes();
    out->pick_shared_s = s.pick_shared_seconds();
    out->collision_ends = s.collision_ends();
    out->idle_ends = s.idle_ends();
    out->tree_wait_s = s.tree_wait_seconds();
    out->ooo_left_in_batch = s.ooo_left_in_batch();
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_root_edges(lc0core_search* search, lc0core_root_edge* out,
                                             int capacity, int* count) {
  return guarded([&] {
    require(count, "count");
    Search& s = last_run(search);
    std::lock_guard<std::mutex> lock(search->tree_mutex);
    const Tree& tree = s.tree();
    const uint32_t root = tree.root();
    const int n = tree.is_expanded(root) ? tree.node(root).num_edges : 0;
    *count = n;
    if (n > capacity) throw Error(LC0CORE_BUFFER_TOO_SMALL, "root edges do not fit");
    if (n > 0) require(out, "out");
    const Position& pos = search->history.last();
    for (EdgeWalk w(tree, root); w.valid(); w.next()) {
      lc0core_root_edge& e = out[w.index()];
      std::memset(&e, 0, sizeof(e));
      Move m;
      m.raw = tree.edge(w.edge_id()).move;
      const std::string uci = to_uci(pos, m, search->chess960);
      std::strncpy(e.uci, uci.c_str(), sizeof(e.uci) - 1);
      e.prior = tree.prior(w.edge_id());
      if (w.child() != kNone) {
        const Node& c = tree.node(w.child());
        e.visits = c.n, e.in_flight = search::in_flight(c);
        e.wl = c.wl, e.d = c.d, e.m = c.m;
        e.terminal = c.terminal;
      }
    }
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_best_edges(lc0core_search* search, int count, int* out, int* found) {
  return guarded([&] {
    require(found, "found");
    if (count < 0) throw Error(LC0CORE_INVALID_ARGUMENT, "count < 0");
    if (count > 0) require(out, "out");
    Search& s = last_run(search);
    std::lock_guard<std::mutex> lock(search->tree_mutex);
    const Tree& tree = s.tree();
    const std::vector<uint32_t> best = s.best_edges(tree.root(), count, 0);
    *found = int(best.size());
    for (size_t i = 0; i < best.size(); ++i) out[i] = int(best[i] - tree.node(tree.root()).edges);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_pv(lc0core_search* search, int edge, char* out, int capacity) {
  return guarded([&] {
    require(out, "out");
    if (capacity < 1) throw Error(LC0CORE_INVALID_ARGUMENT, "capacity < 1");
    Search& s = last_run(search);
    std::lock_guard<std::mutex> lock(search->tree_mutex);
    const Tree& tree = s.tree();
    const uint32_t root = tree.root();
    if (!tree.is_expanded(root) || edge < 0 || edge >= tree.node(root).num_edges) {
      throw Error(LC0CORE_INVALID_ARGUMENT, "no such root edge");
    }
    const std::vector<Move> pv = s.principal_variation(tree.node(root).edges + edge);
    PositionHistory walk = search->history;
    std::string text;
    for (Move m : pv) {
      if (!text.empty()) text += ' ';
      text += to_uci(walk.last(), m, search->chess960);
      walk.push(m);
    }
    if (int(text.size()) + 1 > capacity) throw Error(LC0CORE_BUFFER_TOO_SMALL, "pv does not fit");
    std::memcpy(out, text.c_str(), text.size() + 1);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_search_check_tree(lc0core_search* search, char* out, int capacity) {
  return guarded([&] {
    require(out, "out");
    if (capacity < 1) throw Error(LC0CORE_INVALID_ARGUMENT, "capacity < 1");
    Search& s = last_run(search);
    std::lock_guard<std::mutex> lock(search->tree_mutex);
    const std::string fault = s.tree().check();
    const size_t length = std::min(fault.size(), size_t(capacity - 1));
    std::memcpy(out, fault.data(), length);
    out[length] = '\0';
    return LC0CORE_OK;
  });
}
