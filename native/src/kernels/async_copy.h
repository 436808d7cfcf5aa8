// async_copy.h - global -> shared copies that do not wait (cp.async,
// NVIDIA sm_80+), for kernels that issue every load of a block before
// using any: each thread's copies are in flight together instead of one
// round trip to memory per loop iteration. Device code of NVIDIA builds only.
#pragma once
#include "../gpu_compat.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
namespace lc0rocm {

__device__ __forceinline__ void copy16_async(void* shared_dst, const void* global_src) {
  unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global_src) : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Wait until at most `pending` of this thread's copy groups are in flight.
__device__ __forceinline__ void wait_copies(int pending) {
  switch (pending) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    case 7: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 8;\n" ::: "memory"); break;
  }
}

// Shared-memory barriers (mbarrier, NVIDIA sm_90 on) for the tensor memory
// accelerator's copies (wgmma_tile.h): completion counted in arrivals and
// in bytes landed.
// A barrier whose phase completes after `count` arrivals (and, where an
// arrival announced bytes, once they have landed).
__device__ __forceinline__ void mbarrier_init(unsigned long long* barrier, unsigned count) {
#if defined(LC0ROCM_MBARRIER_AVAILABLE)
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(barrier));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(b), "r"(count) : "memory");
#else
  (void)barrier, (void)count;
#endif
}
// After a block's barrier inits, before any thread uses them (with a
// __syncthreads): the tensor memory accelerator must see them initialised.
__device__ __forceinline__ void mbarrier_init_fence() {
#if defined(LC0ROCM_MBARRIER_AVAILABLE)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// Waits until the barrier's phase of this parity (0, 1, 0, ... per use) completes.
__device__ __forceinline__ void bulk_copy_wait(unsigned long long* barrier, unsigned parity) {
#if defined(LC0ROCM_MBARRIER_AVAILABLE)
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(barrier));
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(b),
      "r"(parity)
      : "memory");
#else
  (void)barrier;
  (void)parity;
#endif
}

}  // namespace lc0rocm
#endif
