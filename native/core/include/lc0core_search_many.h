/* lc0core_search_many.h - many positions searched at once: a queue of jobs
 * and `searches` search handles (lc0core_search.h), each run by a thread of
 * its own that takes the next job, searches it from a fresh tree and NN
 * cache, and keeps what the caller reads afterwards. With each handle's
 * evaluator a client of one lc0core_mux (lc0core_eval_mux.h) the searches
 * share batched network calls; each search stays single-threaded and so
 * deterministic at a fixed node count, whichever handle runs it.
 *
 * The caller configures the handles (options, evaluator) before the first
 * submit and not while jobs run. A job's row is "FEN" or "FEN moves m1 m2 ..."
 * (UCI moves); a position with no legal move is not searched (its outcome
 * says checkmate or stalemate).
 */
#ifndef LC0CORE_SEARCH_MANY_H
#define LC0CORE_SEARCH_MANY_H
#include <stddef.h>
#include "lc0core_search.h"
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
typedef struct lc0core_search_many lc0core_search_many;
enum { LC0CORE_JOB_SEARCHED = 0, LC0CORE_JOB_CHECKMATE = 1, LC0CORE_JOB_STALEMATE = 2 };

typedef struct {
  int status;                /* 0, or why the job failed (lc0core_search_many_error says more) */
  int outcome;               /* LC0CORE_JOB_*: searched, or no legal move */
  int best_edge;             /* root edge index of the best move, -1 when none */
  int num_edges;
  lc0core_search_stats stats;   /* of the search (zeros when not searched) */
} lc0core_search_job;

/* Where the search threads' time went, summed over them: waiting for a
 * job (the queue empty), setting a job's position up, searching, and
 * keeping its results (the end-of-job callback included). */
typedef struct {
  double job_wait_s;
  double setup_s;
  double search_s;
  double result_s;
  long long jobs;            /* jobs taken */
} lc0core_search_many_stats;
int lc0core_search_many_create(int searches, lc0core_search_many** out);
/* Stops what runs and frees everything (the handles too). */
void lc0core_search_many_destroy(lc0core_search_many* many);
/* Handle `index`, to set options and the evaluator on (NULL when out of range). */
lc0core_search* lc0core_search_many_handle(lc0core_search_many* many, int index);
/* Called by handle `index`'s thread after each of its searches (e.g. lc0core_mux_release). */
int lc0core_search_many_on_end(lc0core_search_many* many, int index, lc0core_info_fn fn, void* ctx);
/* Queues n jobs: `rows` holds n NUL-terminated rows back to back (`length`
 * bytes in all), `limits` one entry each (searchmoves ignored). Jobs are
 * numbered in submission order; *first gets the number of the first. */
int lc0core_search_many_submit(lc0core_search_many* many, int n, const char* rows, size_t length,
                               const lc0core_search_limits* limits, long long* first);
/* Waits up to timeout_s until every job numbered below `end` has finished;
 * *finished gets how many jobs from the first have (all below it are done). */
int lc0core_search_many_wait(lc0core_search_many* many, long long end, double timeout_s,
                             long long* finished);
int lc0core_search_many_job(lc0core_search_many* many, long long job, lc0core_search_job* out);
/* The job's root edges, in edge order (as lc0core_search_root_edges). */
int lc0core_search_many_edges(lc0core_search_many* many, long long job, lc0core_root_edge* out,
                              int capacity, int* count);
/* The principal variation through the best edge, UCI moves separated by spaces. */
int lc0core_search_many_pv(lc0core_search_many* many, long long job, char* out, int capacity);
/* Jobs [first, first + count) at once (each must have finished), for a
 * caller that reads many small searches: jobs[i] as lc0core_search_many_job,
 * best_edges[i] the root edge at jobs[i].best_edge (zeros when -1), and the
 * PVs (as lc0core_search_many_pv, "" when there is no best edge)
 * NUL-terminated back to back in `pv`, job i's from pv_offsets[i].
 * *pv_needed gets the bytes the PVs take; LC0CORE_BUFFER_TOO_SMALL (nothing
 * written to `pv`) when that is more than pv_capacity. */
int lc0core_search_many_results(lc0core_search_many* many, long long first, int count,
                                lc0core_search_job* jobs, lc0core_root_edge* best_edges, char* pv,
                                size_t pv_capacity, size_t* pv_offsets, size_t* pv_needed);
/* A failed job's message ("" when it did not fail). */
int lc0core_search_many_error(lc0core_search_many* many, long long job, char* out, int capacity);
int lc0core_search_many_get_stats(lc0core_search_many* many, lc0core_search_many_stats* out);
/* Frees the results of the jobs numbered below `end` (they must have finished). */
int lc0core_search_many_forget(lc0core_search_many* many, long long end);
/* Stops the running searches and drops the queued jobs (they finish with
 * LC0CORE_INVALID_ARGUMENT "cancelled"). */
int lc0core_search_many_cancel(lc0core_search_many* many);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
