// search.h - lc0 v0.32.1's classic search, one worker: gather a minibatch of
// leaves by multi-visit PUCT picking with in-flight visits (collisions),
// evaluate them in one network call, back the values up with certainty
// propagation, repeat until a stopper fires. lc0_rocm/search/core.py is the
// reference this follows step by step (same parameters, same trees).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <cstdint>
#include <functional>
#include <memory>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <random>
#include <vector>
#include "../../include/lc0core_eval.h"
#include "../encoder.h"
#include "../history.h"
#include "contempt.h"
#include "eval_memo.h"
#include "nn_cache.h"
#include "params.h"
#include "pick_lock.h"
#include "task_pool.h"
#include "tree.h"

namespace lc0core {
namespace search {

// Syzygy WDL probe from the tree: returns 1 and sets *wdl (-2..2, side to
// move's view) when the position is in the tables, else 0.
typedef int (*TablebaseProbeFn)(void* ctx, const char* fen, int* wdl);

// One way to run the network: a function and its context (a GPU stream, a
// demux over several GPUs, a callback). Calls on one slot never overlap.
struct EvaluatorSlot {
  lc0core_forward_fn forward = nullptr;
  void* ctx = nullptr;
  int max_batch = 0;                 // positions per forward call; 0 = any
  lc0core_forward_wanted_fn forward_wanted = nullptr;   // used instead of forward when set
};

struct Evaluator {
  // slots[0] always; with two or more, Threads >= 2 runs that many workers
  // that each gather, evaluate on their own slot and back up (lc0's search
  // threads), so several batches are at the network at once.
  std::vector<EvaluatorSlot> slots;
  int input_format = 1;
  bool has_moves_left = false;
  TablebaseProbeFn tb_probe = nullptr;
  void* tb_ctx = nullptr;
  int tb_max_pieces = 0;
  EvalMemo* memo = nullptr;          // answers shared with other searches (null: none)
};

struct Limits {
  long long nodes = -1;              // -1: none
  double movetime = -1.0;            // seconds, hard; -1: none
  double time_budget = -1.0;         // seconds, soft
  bool infinite = false;
  int depth = -1, mate = -1;
  std::vector<Move> searchmoves;
  double rescale_ratio = 1.0, rescale_diff = 0.0;   // contempt (Python computes them)
  int contempt_mode = kContemptNone;
};

struct Visit {                       // lc0's NodeToProcess
  uint32_t node;
  int depth;
  int multivisit = 1;
  int maxvisit = 0;
  bool collision = false;
  bool ooo_done = false;
  bool expand = false;               // a new leaf, expanded after the pick
  int nn_slot = -1;
  double q = 0.0, d = 0.0, m = 0.0;
};

// One network request: a tree leaf (node != kNone) or a prefetch.
struct Request {
  uint32_t node;
  uint64_t key;
  int first_move;                    // into Batch::moves / Batch::indices
  int num_moves;
};

struct Batch {
  std::vector<Visit> visits;
  std::vector<Request> requests;
  std::vector<Move> moves;           // legal moves of every request, in edge order
  std::vector<int> indices;          // their policy indices
  std::vector<Edge> edges;           // the moves with their priors, sorted, once evaluated
  std::vector<uint64_t> masks;       // 112 per request
  std::vector<float> values;
  std::vector<float> policy, wdl, moves_left;
  std::vector<size_t> leaves;        // expand_leaves' scratch, kept to spare an allocation per pick
  std::vector<char> root_allowed;    // the root's edges this batch's picks may take (root_filter)
  struct MemoScratch {               // forward_with_memo's: keys, and the rows the network computes
    std::vector<MemoKey> keys;
    std::vector<int> misses;
    std::vector<uint64_t> masks;
    std::vector<float> values, policy, wdl, moves_left;
    std::vector<int> wanted, offsets;  // the missed rows' policy indices
  } memo;
  std::vector<int> offsets;          // each request's first policy index in `indices`, and the end
  int ooo = 0;
  double seconds = 0.0;
  void clear() {
    visits.clear(), requests.clear(), moves.clear(), indices.clear(), edges.clear();
    masks.clear(), values.clear();
    ooo = 0, seconds = 0.0;
  }
};

// The batches a run gathers into, owned by whoever makes the runs so that
// a run of short searches (analysis: one per position) reuses their
// buffers (a batch's policy block is 7 KB a position) instead of
// allocating and clearing them for each search. One run at a time.
struct RunScratch {
  Batch batches[2];
};

struct BackupFix;

// Unlocks a held lock for a scope and locks it again on leaving, also when
// an exception leaves.
template <typename Lock>
class Unlocked {
 public:
  explicit Unlocked(Lock* lock) : lock_(lock) { lock_->unlock(); }
  ~Unlocked() { lock_->lock(); }
  Unlocked(const Unlocked&) = delete;
  Unlocked& operator=(const Unlocked&) = delete;

 private:
  Lock* lock_;
};


// A gathering worker's task workers (lc0's) and a board per task worker for
// its parts of an expansion: copies of the root's history made with the
// pool (expand_range leaves a board at the root, so they serve all search).
struct TaskWorkers {
  TaskWorkers(int threads, const PositionHistory& root) : pool(threads) {
    for (int i = 0; i < threads; ++i) boards.emplace_back(new PositionHistory(root));
  }
  TaskPool pool;
  std::vector<std::unique_ptr<PositionHistory>> boards;
};

// One picking task's state: its board history, its output (visits and
// requests in the order one thread picking alone would produce them) and
// lc0's max_limit (collisions' extra visits).
struct PickContext {
  PositionHistory* history;
  Batch* out;
  int max_limit;
  int pick_limit;
  TaskWorkers* tasks;                // the gathering worker's task workers; null: none
  const char* root_allowed = nullptr;   // the root's edges allowed; null: all
};

// One edge's selection state in pick_node (its score, the one field the
// selection scans, is kept in an array of its own). A single array of these,
// set up only as far as the selection reaches, replaces parallel per-edge
// arrays, whose set-up compiled to several small memset calls per visited
// node; 32 bytes, so indexing stays a shift.
struct PickEdge {
  double pol, util;                  // util: kNoUtil until set (by a visited child or the FPU)
  long long nstarted;                // visits plus visits in flight
  uint32_t kid;                      // child node (kNone: not spawned)
  int to_perform;
};

class Search {
 public:
  // `tree_mutex` guards the tree: the search holds it except while the
  // network computes, so results can be read (and `stop` answered) then.
  Search(Tree* tree, PositionHistory* history, NNCache* cache, const SearchParams& params,
         const Limits& limits, const Evaluator& evaluator, std::atomic<bool>* stop,
         std::mutex* tree_mutex, RunScratch* scratch);

  // Searches until a stopper fires; `report` is called between iterations.
  // Threads >= 2 with one evaluator slot: a pipeline that gathers the next
  // batch while the network computes the current one (deterministic, as the
  // reference's); with several slots: Threads workers, each gathering,
  // evaluating on its slot and backing up, the tree locked only while they
  // gather and back up.
  // Throws std::runtime_error when the network call fails.
  void run(const std::function<void()>& report);
  // lc0's ExecuteOneIteration; true when the search is to stop.
  bool run_iteration();

  // Results and statistics.
  std::vector<uint32_t> best_edges(uint32_t node, int count, int depth) const;
  uint32_t best_edge(uint32_t node, int depth) const;   // best_edges(node, 1, depth)[0] or kNone
  std::vector<Move> principal_variation(uint32_t edge_id, int depth = 0) const;
  double elapsed_ms() const;
  double nps_elapsed_ms() const;     // since the first playout; -1 before
  long long total_nodes() const { return total_playouts_ + initial_visits_; }
  long long total_playouts() const { return total_playouts_; }
  long long cum_depth() const { return cum_depth_; }
  int max_depth() const { return max_depth_; }
  long long tb_hits() const { return tb_hits_.load(); }
  long long nn_evals() const { return nn_evals_; }
  long long memo_hits() const { return memo_hits_.load(); }
  long long network_batches() const { return network_batches_; }
  double network_seconds() const { return network_seconds_; }
  double gather_seconds() const { return gather_seconds_; }
  double backup_seconds() const { return backup_seconds_; }
  double expand_seconds() const { return expand_seconds_; }
  double pick_shared_seconds() const { return pick_shared_seconds_; }
  double tree_wait_seconds() const { return 1e-9 * double(tree_wait_ns_.load()); }
  long long picking_tasks() const { return picking_tasks_.load(); }
  long long expanding_tasks() const { return expanding_tasks_.load(); }
  long long two_fold_fixes() const { return two_fold_fixes_; }
  long long deferred_fixes() const { return deferred_fixes_; }
  // Gatherings that ended before a full minibatch: the collision budget
  // spent (lc0's collisions_left), or the network idle (workers).
  long long collision_ends() const { return collision_ends_.load(); }
  long long idle_ends() const { return idle_ends_.load(); }
  // Picks whose out-of-order results a busy tree mutex left in the batch.
  long long ooo_left_in_batch() const { return ooo_left_in_batch_.load(); }
  double draw_score(int depth) const { return depth % 2 ? draw_score_odd_ : draw_score_even_; }
  const Tree& tree() const { return *tree_; }
  bool root_allowed(Move move) const;

 private:
  using Clock = std::chrono::steady_clock;
  // Gathering (search.cpp).
  // `leaf_history` (at the root) is the board the picked leaves are
  // expanded on: history_ itself, or a worker's own copy.
  // `tasks`: the worker's task workers (null: none).
  void gather_batch(PositionHistory* leaf_history, TaskWorkers* tasks);   // timed: gather_into_batch
  void gather_into_batch(PositionHistory* leaf_history, TaskWorkers* tasks);
  struct GatherTimes {
    double expand = 0.0, shared = 0.0;   // seconds expanding, and picking with the pickers' lock shared
  };
  void gather_picks(Batch* batch, PositionHistory* leaf_history, TaskWorkers* tasks, GatherTimes* times);
  int collisions_left(long long nodes) const;
  const char* root_filter(Batch* batch);
  void pick(Batch* batch, const char* root_allowed, int limit, TaskWorkers* tasks, bool shared);
  // kShared: other threads pick at once (worker mode; the pickers' lock
  // held shared); else this thread picks alone, or with task workers in
  // branches of their own. Compiled both ways: picking alone keeps plain
  // loads and adds.
  template <bool kShared>
  // `collision`: the caller could not start a visit here (all `limit`
  // visits are a collision, even if the node was backed up since).
  void pick_node(PickContext& c, uint32_t node, int limit, int depth, bool is_root, bool collision = false);
  template <bool kShared>
  void pick_children(PickContext& c, int depth, const PickEdge* e, int count, int collided);
  template <bool kShared>
  bool try_start(uint32_t node);
  double fpu(double wl, double d, bool is_root, double draw_score, double visited_pol) const;   // the node's wl, d
  double cpuct(uint32_t n, bool is_root) const;
  void ensure_two_fold_correct(uint32_t child, int depth);
  // A two-fold draw whose first occurrence lies before the (new) root is no
  // draw now (picking asks this of every edge it takes: inline).
  bool needs_two_fold_fix(uint32_t child, int depth) const {
    const Node& cn = tree_->node(child);   // may be being expanded (terminal_of)
    return terminal_of(cn) == kTwoFold && depth < load_value(cn.m);
  }
  void fix_two_folds();              // the fixes pickers left (worker mode)
  bool two_folds_pending() const;
  void visit(PickContext& c, uint32_t node, int depth);
  int append_requests(Batch* to, const Batch& from);   // returns the first appended slot
  // Expanding the picked leaves (lc0's ProcessPickedTask).
  bool being_expanded(uint32_t node) const;
  void expand_leaves(Batch* batch, size_t from, PositionHistory* history, TaskWorkers* tasks);
  void expand_range(Batch* batch, const size_t* leaves, int count, Batch* out, PositionHistory* history);
  void moves_from_root(uint32_t node, std::vector<uint16_t>* path) const;
  void expand_leaf(PickContext& c, Visit* v);
  bool extend_terminal(PickContext& c, uint32_t node, int depth, const MoveList& moves);
  void prefetch_into_batch(PositionHistory* history);   // `history`: a board at the root
  void top_up_batch(PositionHistory* history, Batch* batch);
  void prefetch(PickContext& c, uint32_t node, int budget, bool is_odd_depth, bool is_root, int* spent);
  std::unique_ptr<Batch> spare_batch();
  void return_batch(std::unique_ptr<Batch> batch);
  // Evaluation (evaluate.cpp).
  void add_request(PickContext& c, uint32_t node, uint64_t key, const MoveList& moves);
  void evaluate(Batch* batch, const EvaluatorSlot& slot) const;   // forward, then prepare_priors
  void forward(Batch* batch, const EvaluatorSlot& slot) const;    // the network call alone
  void forward_with_memo(Batch* batch, const EvaluatorSlot& slot) const;
  // Rows' wanted logits: wanted[offsets[i] .. offsets[i + 1]) for row i
  // (the slot may write only those of its policy row).
  void call_network(const EvaluatorSlot& slot, int n, const uint64_t* masks, const float* values,
                    const int* wanted, const int* offsets, float* policy, float* wdl,
                    float* moves_left) const;
  void prepare_priors(Batch* batch) const;
  void cache_results(const Batch& batch) const;            // every request's result
  void cache_request(const Batch& batch, size_t slot) const;
  bool run_pipelined_step(int* inflight, std::future<void>* inflight_done, int* current);
  void run_workers(const std::function<void()>& report);
  void worker_loop(int index, const std::function<void()>* report);
  void priors_of(const Batch& batch, int slot, uint16_t* codes, int* order) const;
  void set_priors(uint32_t node, const Request& r);
  void set_priors_from_cache(uint32_t node, const CacheHit& entry);
  void root_noise(uint32_t node);
  void rescale(Visit* visit) const;
  void cache_edges(uint32_t node, uint64_t key, double q, float d, float m);
  // Backup (backup.cpp).
  bool finish();
  bool stops_midway();
  void abandon();
  void cancel_in_flight(uint32_t node, int visits);
  // Worker mode backs up beside the pickers (the pickers' lock shared);
  // what would change the tree's shape under them is left for this, which
  // takes the lock exclusively when there is any: visits that may make
  // their parents terminal, and nodes to make solid.
  void settle_deferred();
  void backup(const Visit& visit);
  bool maybe_set_bounds(uint32_t p, double m, BackupFix* fix);
  // True when the certainty propagation of a fresh terminal at `node`
  // would only write bounds its ancestors already have (no bound changed,
  // no node made terminal); *end is then the ancestor where it would stop
  // (kNone: it would go on to the root or a terminal ancestor).
  bool bounds_unchanged(uint32_t node, uint32_t* end) const;
  // Stoppers (stoppers.cpp).
  bool should_stop();
  bool stoppers_fire();
  bool kld_gain_too_small();
  void throttle();
  double mate_depth() const;
  void hint_playouts(double value);
  long long node_limit_left() const;
  void root_edge_stats(std::vector<uint32_t>* edge_n, bool* win_found, int* losing,
                       bool* may_resign) const;
  bool smart_pruning_fires(double now_ms);
  bool stop_requested() const { return stopped_ || stop_->load(std::memory_order_relaxed); }
  // Workers: below ParallelSearchMinimumVisits at the root only worker 0
  // gathers (the others wait); the threads that gather now. Reads the
  // root's visits: the tree mutex or the pickers' lock held (undoing a
  // two-fold draw writes them under both).
  bool one_gatherer() const {
    return visits_of(tree_->node(tree_->root())) < uint32_t(std::max(0, params_.ParallelSearchMinimumVisits));
  }
  int gathering_threads() const { return one_gatherer() ? 1 : params_.Threads; }
  // Selection (selection.cpp).
  void update_current_best();
  bool edge_listed(uint32_t node, uint32_t edge_id) const;   // not filtered out by searchmoves
  bool visited_draw(uint32_t child) const;
  int edge_rank(uint32_t child) const;
  int compare_edges(double draw_score, uint32_t a, uint32_t ca, uint32_t b, uint32_t cb) const;

  Tree* tree_;
  PositionHistory* history_;
  NNCache* cache_;
  const SearchParams params_;
  const Limits limits_;
  const Evaluator evaluator_;
  std::atomic<bool>* stop_;
  std::mutex* tree_mutex_;
  std::vector<Move> root_filter_;
  bool root_black_;
  int root_ply_;                     // history size at the root
  double draw_score_even_, draw_score_odd_;
  bool rescale_on_;
  int target_minibatch_, max_out_of_order_;
  float inv_policy_temp_;
  std::mt19937_64 rng_;

  Clock::time_point start_;
  Clock::time_point nps_start_;
  bool nps_started_ = false;
  long long initial_visits_ = 0, total_playouts_ = 0, total_batches_ = 0;
  long long cum_depth_ = 0, nn_evals_ = 0, network_batches_ = 0;
  std::atomic<long long> tb_hits_{0};    // picking tasks count them too
  mutable std::atomic<long long> memo_hits_{0};   // counted where the network is called
  std::atomic<long long> picking_tasks_{0};
  std::atomic<long long> expanding_tasks_{0};
  double network_seconds_ = 0.0, gather_seconds_ = 0.0, backup_seconds_ = 0.0, expand_seconds_ = 0.0;
  double pick_shared_seconds_ = 0.0;
  int max_depth_ = 0;
  bool stopped_ = false;
  double remaining_playouts_ = 4e9;    // the stoppers' hint, worked on under the tree mutex
  // The hint as the last backup left it, which picking reads (worker mode:
  // beside another worker's stopper check, see stops_midway).
  std::atomic<double> playouts_hint_{4e9};
  double playouts_left() const { return playouts_hint_.load(std::memory_order_relaxed); }
  double remaining_time_ms_ = 0.0;
  bool remaining_time_set_ = false;
  double first_eval_time_ms_ = -1.0;
  double last_batch_ms_ = 0.0;
  int nn_pending_ = 0;
  std::vector<uint32_t> kld_prev_visits_;
  double kld_prev_nodes_ = 0.0;
  std::atomic<uint32_t> current_best_{kNone};   // root edge id (backing up sets it beside picking)
  // Per-pick state: the batch being gathered or finished (two for the pipeline).
  Batch* batches_;                     // RunScratch::batches
  Batch* batch_;
  // Worker mode: a batch per worker, a lock per slot, the first failure.
  std::vector<std::unique_ptr<Batch>> worker_batches_;
  std::unique_ptr<std::mutex[]> slot_mutexes_;
  std::condition_variable_any progress_;   // a worker backed up a batch
  // Workers pick at once under pick_lock_ shared; whatever else changes
  // the tree holds write_lock_ (the caller's tree mutex, then pick_lock_).
  PickLock pick_lock_;
  std::atomic<int64_t> tree_wait_ns_{0};   // workers waiting for the tree mutex, summed
  TreeWriteLock write_lock_{tree_mutex_, &pick_lock_, &tree_wait_ns_};
  // Threads workers on slots of their own: they expand leaves with the tree
  // unlocked, fill the NN cache where the network ran, and send early to an
  // idle network.
  bool worker_mode_ = false;
  std::atomic<int> at_network_{0};     // workers in a network call (lc0's backend_waiting_counter)
  std::exception_ptr worker_error_;
  // Task workers (lc0's): each gathering worker has its own, which pick in
  // separate branches and expand leaves for it. [0]: the first worker's
  // (the only one outside worker mode).
  int task_workers_ = 0;               // threads per gathering worker's pool
  std::vector<std::unique_ptr<TaskWorkers>> task_pools_;
  TaskWorkers* task_pool(size_t worker) const { return worker < task_pools_.size() ? task_pools_[worker].get() : nullptr; }
  void add_task_pool() { task_pools_.emplace_back(new TaskWorkers(task_workers_, *history_)); }
  std::mutex fix_mutex_;               // two-fold fixes reach above a task's branch
  std::vector<std::pair<uint32_t, int>> pending_fixes_;   // (node, depth), under fix_mutex_
  std::atomic<bool> fixes_pending_{false};                // !pending_fixes_.empty(), written under fix_mutex_
  long long two_fold_fixes_ = 0, deferred_fixes_ = 0;     // under fix_mutex_
  std::atomic<long long> collision_ends_{0}, idle_ends_{0}, ooo_left_in_batch_{0};
  // Backing up beside the pickers (worker mode, under the tree mutex), and
  // what it left for settle_deferred: visits, and (depth, node) to make solid.
  bool backing_up_shared_ = false;
  std::vector<Visit> deferred_backups_;
  std::vector<std::pair<int, uint32_t>> solid_pending_;
  std::mutex spare_mutex_;
  std::vector<std::unique_ptr<Batch>> spare_batches_;
};

}  // namespace search
}  // namespace lc0core
