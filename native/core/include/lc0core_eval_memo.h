/* lc0core_eval_memo.h - network answers shared by the searches of one
 * network (the analysis of many positions: the next position of a game
 * meets much of the tree of the one before).
 *
 * An answer is keyed by the exact input planes (a 128-bit hash of the 112
 * masks and values) and keeps the policy logits of the moves the request
 * asked about, the WDL and the moves left. A search given a memo
 * (lc0core_search_set_memo) looks each request of a batch up before its
 * network call and sends only the others: what it receives is what the
 * network returned for the same input, so its tree is the one it builds
 * without the memo -- for a network whose result for a row does not depend
 * on the other rows of its call (a fixed batch size on a GPU, the random
 * net; not numpy's). Thread-safe; at most `capacity` answers, the oldest
 * dropped first (per shard).
 */
#ifndef LC0CORE_EVAL_MEMO_H
#define LC0CORE_EVAL_MEMO_H
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
typedef struct lc0core_eval_memo lc0core_eval_memo;

typedef struct {
  long long lookups;         /* requests looked up */
  long long hits;            /* of them, answered from the memo */
  long long entries;         /* answers held now */
} lc0core_eval_memo_stats;

int lc0core_eval_memo_create(long long capacity, lc0core_eval_memo** out);
/* No search may still use it. */
void lc0core_eval_memo_destroy(lc0core_eval_memo* memo);
int lc0core_eval_memo_get_stats(lc0core_eval_memo* memo, lc0core_eval_memo_stats* out);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
