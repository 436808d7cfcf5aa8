/* lc0core_search.h - the native search (lc0 v0.32.1's classic search).
 *
 * A handle holds one game's tree (reused between positions of the game),
 * the NN cache, the knobs and the network to call. lc0core_search_start()
 * searches in a thread of its own until a limit or lc0core_search_stop()
 * (callable from any thread) ends it; lc0core_search_wait() waits for that.
 * Results and statistics can be read at any time (also from the info
 * callback, which the search thread calls every `info_interval_s` seconds):
 * the search holds the tree only while it gathers and backs up, never while
 * the network computes, so a stopped search answers at once while its last
 * batch finishes in the background (as lc0 does). Changing the handle
 * (options, position, a new run) first waits for that batch.
 */
#ifndef LC0CORE_SEARCH_H
#define LC0CORE_SEARCH_H
#include <stdint.h>
#include "lc0core_eval.h"
#include "lc0core_eval_memo.h"
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
typedef struct lc0core_search lc0core_search;

/* Syzygy WDL probe: 1 and *wdl (-2..2, side to move) when found, else 0. */
typedef int (*lc0core_tb_probe_fn)(void* ctx, const char* fen, int* wdl);
typedef void (*lc0core_info_fn)(void* ctx);

typedef struct {
  lc0core_forward_fn forward;
  void* ctx;
  int max_batch;             /* positions per forward call, 0 = any */
  int input_format;          /* the net's input format (1, 2, 3, 4, 132, 5, 133) */
  int has_moves_left;
  lc0core_tb_probe_fn tb_probe;  /* NULL: no tablebases */
  void* tb_ctx;
  int tb_max_pieces;
  /* NULL, or called instead of `forward` (same ctx) with the logits the
   * search reads: e.g. lc0core_mux_forward_wanted for a mux client. */
  lc0core_forward_wanted_fn forward_wanted;
} lc0core_evaluator;

typedef struct {
  long long nodes;           /* -1: none (lc0 counts the reused tree too) */
  double movetime;           /* seconds, hard; < 0: none */
  double time_budget;        /* seconds, soft; < 0: none */
  int infinite;              /* no smart pruning, no time limits */
  int depth;                 /* average depth; < 0: none */
  int mate;                  /* a mate in <= this many moves; < 0: none */
  const char* searchmoves;   /* UCI moves separated by spaces, or NULL */
  double rescale_ratio;      /* contempt's WDL rescaling (1, 0, 0: off) */
  double rescale_diff;
  int contempt_mode;         /* 0 none, 1 white, 2 black */
} lc0core_search_limits;

typedef struct {
  long long total_nodes, total_playouts, cum_depth, tb_hits, nn_evals, cache_hits;
  int max_depth;
  double elapsed_ms;
  double nps_elapsed_ms;     /* since the first playout; < 0 before */
  unsigned root_n;
  double root_wl, root_d, root_m;
  int num_edges;
  double draw_score;         /* draw score at the root's children */
  long long tree_nodes;      /* nodes allocated */
  long long tree_bytes;      /* bytes the tree's pools hold */
  long long batches;         /* network calls (batches with requests) */
  double network_s;          /* seconds inside those calls, summed over threads */
  double gather_s, backup_s; /* seconds gathering and backing up (tree locked) */
  long long picking_tasks;   /* branches picked by task workers */
  double expand_s;           /* of gather_s: expanding leaves (workers: tree unlocked) */
  long long expanding_tasks; /* parts of expansions run by task workers */
  long long memo_hits;       /* of nn_evals, answered by the memo (lc0core_search_set_memo) */
  long long two_fold_fixes;  /* two-fold draws undone (their first occurrence lay before the root) */
  long long deferred_fixes;  /* of those, found by threads picking at once and undone after */
  double pick_shared_s;      /* of gather_s: workers picking with the pickers' lock shared, its wait included */
  long long collision_ends;  /* gatherings ended short by the collision budget (lc0's collisions_left) */
  long long idle_ends;       /* gatherings ended short for an idle network (IdlingMinimumWork) */
  double tree_wait_s;        /* workers waiting for the tree mutex, summed over threads */
  long long ooo_left_in_batch; /* workers' picks whose out-of-order results waited for their batch's backup (the tree mutex busy) */
} lc0core_search_stats;

typedef struct {
  char uci[8];
  unsigned visits, in_flight;
  double wl, d, m;           /* the child's, from the root side to move's view for wl */
  float prior;
  int terminal;              /* 0 none, 1 end of game, 2 two-fold, 3 tablebase */
} lc0core_root_edge;

int lc0core_search_create(lc0core_search** out);
void lc0core_search_destroy(lc0core_search* search);
int lc0core_search_set_option(lc0core_search* search, const char* name, double value);
int lc0core_search_set_evaluator(lc0core_search* search, const lc0core_evaluator* evaluator);
/* One more way to run the network (another GPU stream, another GPU, a
 * demux), used at the same time as the evaluator's own: with Threads >= 2
 * and slots added, worker i of Threads evaluates on slot i mod slots (the
 * evaluator's forward is slot 0). set_evaluator drops the added slots. */
int lc0core_search_add_slot(lc0core_search* search, lc0core_forward_fn forward, void* ctx,
                            int max_batch);
/* Network answers shared with other searches (lc0core_eval_memo.h), or
 * NULL for none (the default). The memo must outlive the handle's runs. */
int lc0core_search_set_memo(lc0core_search* search, lc0core_eval_memo* memo);
/* Forget the tree and the NN cache. */
int lc0core_search_new_game(lc0core_search* search);
/* The game: its first position and the UCI moves since (space separated).
 * The tree is reused when the game continues the previous one. */
int lc0core_search_set_position(lc0core_search* search, const char* fen, const char* moves,
                                int chess960);
int lc0core_search_start(lc0core_search* search, const lc0core_search_limits* limits,
                         lc0core_info_fn on_info, void* info_ctx, double info_interval_s);
/* A run on the calling thread (no thread of its own, no info callback):
 * returns when a limit or lc0core_search_stop() ended it, with the status a
 * failed run gives lc0core_search_wait. For callers that run many searches
 * on threads of their own (lc0core_search_many.h). */
int lc0core_search_run(lc0core_search* search, const lc0core_search_limits* limits);
/* Waits up to timeout_s for the run to end; *finished = 1 when it has. A
 * failed run (the network call failed) gives its status here. */
int lc0core_search_wait(lc0core_search* search, double timeout_s, int* finished);
int lc0core_search_stop(lc0core_search* search);
int lc0core_search_get_stats(lc0core_search* search, lc0core_search_stats* out);
/* Root edges in edge order (prior, highest first). */
int lc0core_search_root_edges(lc0core_search* search, lc0core_root_edge* out, int capacity,
                              int* count);
/* Up to `count` root edge indices, best first (searchmoves only). */
int lc0core_search_best_edges(lc0core_search* search, int count, int* out, int* found);
/* The principal variation through root edge `edge`, UCI moves separated by spaces. */
int lc0core_search_pv(lc0core_search* search, int edge, char* out, int capacity);
/* The whole tree checked after a run (links, visit counts, values): the
 * first broken invariant into `out`, "" when there is none. For tests. */
int lc0core_search_check_tree(lc0core_search* search, char* out, int capacity);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
