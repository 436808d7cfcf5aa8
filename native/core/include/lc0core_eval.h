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
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
