/* lc0core_eval.h - how the native core calls a network.
 *
 * The signature is lc0rocm_forward's (native/include/lc0rocm.h) with its
 * stream as `ctx`, so the search can call the GPU library directly with no
 * Python in between; the numpy backend and the random backend are reached
 * through the same pointer type (a cffi callback, or the core's own random
 * net). Returns 0 on success, non-zero on failure.
 */
#ifndef LC0CORE_EVAL_H
#define LC0CORE_EVAL_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
typedef int (*lc0core_forward_fn)(void* ctx, int n, const uint64_t* masks, const float* values,
                                  float* policy, float* wdl, float* moves_left);
/* A forward for a caller that reads only some logits of each row: row i's
 * policy indices are wanted[offsets[i] .. offsets[i + 1]), and the other
 * entries of its policy row may be left as they were. */
typedef int (*lc0core_forward_wanted_fn)(void* ctx, int n, const uint64_t* masks, const float* values,
                                         const int* wanted, const int* offsets, float* policy, float* wdl,
                                         float* moves_left);

/* lc0's demux as a forward function: a batch is cut into parts of
 * ceil(n / count) positions (at least minimum_split), part j going to
 * entry (start + j) mod count, and the parts run at once, one thread each;
 * `start` turns with each call. An entry is a child's forward and its
 * context (e.g. a stream on another GPU). Calls on one demux never overlap
 * (the caller's slot guarantees it). */
typedef struct {
  int count;                 /* 1..16 entries */
  lc0core_forward_fn forward[16];
  void* ctx[16];
  int max_batch[16];         /* 0 = any */
  int minimum_split;
  int start;
} lc0core_demux;
int lc0core_demux_forward(void* demux, int n, const uint64_t* masks, const float* values,
                          float* policy, float* wdl, float* moves_left);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
