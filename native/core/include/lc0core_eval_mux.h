/* lc0core_eval_mux.h - many searches on one network: a batching multiplexer
 * that is itself a forward function (lc0core_eval.h).
 *
 * A mux has `clients` client contexts; each is the `ctx` of one search's
 * evaluator with lc0core_mux_forward as its forward. A client's call queues
 * its rows and blocks. A round (the calls to the real forward) starts when
 * every active client is waiting, or as soon as the queued rows reach
 * max_batch (> 0); in FIXED mode such an early round takes only the first
 * whole clients that fill full calls, the rest wait for the next. A
 * client's call returns as soon as the call holding its last row is back,
 * while the round goes on. A client becomes active at its first call and
 * stays active until lc0core_mux_release (its search ended).
 *
 * Modes: MERGE runs a round's rows as one batch (in chunks of max_batch
 * when > 0); FIXED pads each chunk to exactly max_batch rows (a net whose
 * results depend on the batch size then sees one size only); SEPARATE runs
 * each client's batch as a call of its own, as the search alone would (for
 * backends whose results depend on the batch, e.g. numpy's). The real
 * forward is called by one client thread at a time.
 *
 * MERGE and FIXED gather each call's rows into one set of buffers: the
 * mux's own, or the caller's (lc0core_mux_set_buffers), e.g. page-locked
 * memory that a GPU forward moves by DMA with no staging copy.
 */
#ifndef LC0CORE_EVAL_MUX_H
#define LC0CORE_EVAL_MUX_H
#include <stdint.h>
#include "lc0core_eval.h"
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
typedef struct lc0core_mux lc0core_mux;
enum { LC0CORE_MUX_MERGE = 0, LC0CORE_MUX_FIXED = 1, LC0CORE_MUX_SEPARATE = 2 };

typedef struct {
  long long rounds;          /* rounds run */
  long long calls;           /* calls to the real forward */
  long long rows;            /* positions evaluated (padding not counted) */
  long long padded_rows;     /* rows of zeros added in FIXED mode */
  int largest_round;         /* rows in the largest round */
  double busy_s;             /* seconds inside the real forward */
  double wall_s;             /* seconds since creation */
  double round_s;            /* seconds from rounds' starts to their ends: calls, copies, answers */
  double gap_s;              /* seconds from a round's end to the next one's start */
  long long ready_gaps;      /* gaps after which the next round was ready at once */
  double ready_gap_s;        /* their seconds: handing the next round over, not waiting for rows */
} lc0core_mux_stats;

/* max_batch: rows per real call (0 = any; FIXED needs >= 1). */
int lc0core_mux_create(lc0core_forward_fn forward, void* ctx, int max_batch, int mode, int clients,
                       lc0core_mux** out);
void lc0core_mux_destroy(lc0core_mux* mux);
/* Caller-owned buffers for the real forward's calls, `rows` (>= max_batch >=
 * 1; MERGE or FIXED) rows each: masks and values 112 a row, policy 1858,
 * wdl 3, moves_left 1. They must outlive the mux; set before the first
 * round (not while one runs). */
int lc0core_mux_set_buffers(lc0core_mux* mux, uint64_t* masks, float* values, float* policy, float* wdl,
                            float* moves_left, int rows);
/* Client `index`'s context, NULL when out of range. */
void* lc0core_mux_client(lc0core_mux* mux, int index);
/* An lc0core_forward_fn for a client context. */
int lc0core_mux_forward(void* client, int n, const uint64_t* masks, const float* values,
                        float* policy, float* wdl, float* moves_left);
/* lc0core_mux_forward for a caller that reads only some logits of each
 * row (an lc0core_forward_wanted_fn): row i's policy indices are
 * wanted[offsets[i] .. offsets[i + 1]), and
 * in MERGE and FIXED mode only those entries of its policy row are written
 * (a search reads its legal moves' ~36 of the 1858; the copies back were
 * most of a round's time outside the network). SEPARATE writes whole rows. */
int lc0core_mux_forward_wanted(void* client, int n, const uint64_t* masks, const float* values,
                               const int* wanted, const int* offsets, float* policy, float* wdl,
                               float* moves_left);
/* The client's search ended (an lc0core_info_fn): the others stop waiting for it. */
void lc0core_mux_release(void* client);
int lc0core_mux_get_stats(lc0core_mux* mux, lc0core_mux_stats* out);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
