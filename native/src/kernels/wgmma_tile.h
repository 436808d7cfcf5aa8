// wgmma_tile.h - Hopper's warpgroup tensor-core products (wgmma) on operands
// that the tensor memory accelerator (TMA) puts in shared memory, the TMA
// stores that write results back, and the shared-memory barriers that pace
// them: the pieces of kernels/gemm_sm90.hip (and of gemm_sm90_layer_norm.hip
// and attn_qkv_attention_sm90.hip).
// Device code of NVIDIA builds for sm_90a only (LC0ROCM_SM90A: wgmma and its
// fences exist on compute capability 9.0 alone, not on later chips).
#pragma once
#include <cstdint>

#include "../gpu_compat.h"
#include "async_copy.h"

#if defined(LC0ROCM_SM90A_BUILD)
#include <cuda.h>  // CUtensorMap

namespace lc0rocm {
namespace wgmma {

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---------------------------------------------------------------- barriers
// A shared-memory barrier (mbarrier) whose phase completes after `count`
// arrivals and, where one arrival announced bytes, once that many bytes
// have landed. Waiters pass the parity of the phase they wait for (0, 1, 0, ...).
// Init and wait are async_copy.h's (its barriers are unsigned long long).
__device__ __forceinline__ void barrier_init(uint64_t* bar, unsigned count) {
  mbarrier_init(reinterpret_cast<unsigned long long*>(bar), count);
}
__device__ __forceinline__ void barrier_init_fence() { mbarrier_init_fence(); }
__device__ __forceinline__ void barrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
}
// One arrival that also announces `bytes` still to land (TMA copies).
__device__ __forceinline__ void barrier_arrive_expect_bytes(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void barrier_wait(uint64_t* bar, unsigned parity) {
  bulk_copy_wait(reinterpret_cast<unsigned long long*>(bar), parity);
}

// ---------------------------------------------------------------- registers
// A warpgroup's registers per thread raised or lowered to N (a multiple of
// 8, 24-256) while the kernel runs, so a producer warpgroup that needs few
// can hand them to the consumers (PTX ISA "setmaxnreg"); every warp of the
// warpgroup executes it.
template <int N>
__device__ __forceinline__ void registers_increase() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void registers_decrease() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// ---------------------------------------------------------------- TMA
// The box of `map` at (inner, outer) elements into shared memory at dst
// (1024-byte aligned for the 128-byte swizzle), counted on bar. Rows past
// the tensor's end arrive as zeros (and still count their bytes).
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int inner, int outer,
                                            uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(shared_address(bar))
      : "memory");
}

// A box of `map` from shared memory at src (1024-byte aligned, laid out as
// the map's swizzle says) to the tensor at (inner, outer) elements; parts of
// the box past the tensor's end are not written. Asynchronous: the calling
// thread's stores since the last bulk_commit form one group (bulk_wait_read,
// bulk_wait_all). The threads that wrote src call fence_async_shared first.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int inner, int outer) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(inner), "r"(outer), "r"(shared_address(src))
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until the stores of all but this thread's kPending latest groups have read
// their shared memory (it may be written again).
template <int kPending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
}
// Until this thread's stores are complete (before its block leaves).
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Makes this thread's shared-memory writes visible to the TMA (the async proxy).
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// A barrier of `threads` threads (a warpgroup: 128) on hardware barrier id
// (1-15; 0 is __syncthreads').
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void store_shared_u32(unsigned address, unsigned value) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address), "r"(value) : "memory");
}
__device__ __forceinline__ unsigned load_shared_u32(unsigned address) {
  unsigned value;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(value) : "r"(address) : "memory");
  return value;
}

// ---------------------------------------------------------------- wgmma
// The shared-memory operand of a wgmma: a K-major tile whose rows are 64
// halves (128 bytes) as TMA's 128-byte swizzle lays them out, eight rows a
// 1,024-byte group. Descriptor fields (PTX ISA "matrix descriptor"): start
// address >> 4 (bits 0-13), leading-dimension offset >> 4 (16-29; unused by
// swizzled K-major tiles, 1 by convention), stride offset >> 4 between
// 8-row groups (32-45), swizzle mode 1 = 128 bytes (62-63). A step of 16
// halves along K inside the 128-byte row is +32 bytes of start address: the
// hardware applies the swizzle to the address it forms.
__device__ __forceinline__ uint64_t operand_descriptor(const void* tile) {
  const uint64_t address = shared_address(tile);
  return ((address & 0x3FFFF) >> 4) | (uint64_t(16 >> 4) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

// Before a warpgroup's first wgmma after its accumulators were touched.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// The wgmmas issued since the last commit form one group.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Until at most kPending groups of this warpgroup are still running.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accumulator reads or writes across a
// wgmma_fence / wgmma_wait (it does not know the asynchronous products use them).
template <int kCount>
__device__ __forceinline__ void fence_accumulators(float (&d)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// The same for half sums (two halves a register).
template <int kCount>
__device__ __forceinline__ void fence_accumulators(unsigned (&d)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// Macros because inline PTX must name every operand: a "%i" in the text and
// a constraint after it for each accumulator register (48-128 of them).
// The placeholders "%0, %1, ..., %<n-1>" of the first n operands, ten at a
// time: LC0ROCM_WGMMA_P(t, u) is ", %<t><u>" (t the tens, u the units).
#define LC0ROCM_WGMMA_P(t, u) ", %" #t #u
#define LC0ROCM_WGMMA_P_0_3(t) LC0ROCM_WGMMA_P(t, 0) LC0ROCM_WGMMA_P(t, 1) LC0ROCM_WGMMA_P(t, 2) LC0ROCM_WGMMA_P(t, 3)
#define LC0ROCM_WGMMA_P_0_5(t) LC0ROCM_WGMMA_P_0_3(t) LC0ROCM_WGMMA_P(t, 4) LC0ROCM_WGMMA_P(t, 5)
#define LC0ROCM_WGMMA_P_0_7(t) LC0ROCM_WGMMA_P_0_5(t) LC0ROCM_WGMMA_P(t, 6) LC0ROCM_WGMMA_P(t, 7)
#define LC0ROCM_WGMMA_P_0_9(t) LC0ROCM_WGMMA_P_0_7(t) LC0ROCM_WGMMA_P(t, 8) LC0ROCM_WGMMA_P(t, 9)
#define LC0ROCM_WGMMA_PLACES_40 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9" LC0ROCM_WGMMA_P_0_9(1) LC0ROCM_WGMMA_P_0_9(2) LC0ROCM_WGMMA_P_0_9(3)
#define LC0ROCM_WGMMA_PLACES_60 LC0ROCM_WGMMA_PLACES_40 LC0ROCM_WGMMA_P_0_9(4) LC0ROCM_WGMMA_P_0_9(5)
#define LC0ROCM_WGMMA_PLACES_90 \
  LC0ROCM_WGMMA_PLACES_60 LC0ROCM_WGMMA_P_0_9(6) LC0ROCM_WGMMA_P_0_9(7) LC0ROCM_WGMMA_P_0_9(8)
#define LC0ROCM_WGMMA_PLACES_120 \
  LC0ROCM_WGMMA_PLACES_90 LC0ROCM_WGMMA_P_0_9(9) LC0ROCM_WGMMA_P_0_9(10) LC0ROCM_WGMMA_P_0_9(11)
#define LC0ROCM_WGMMA_PLACES_48 LC0ROCM_WGMMA_PLACES_40 LC0ROCM_WGMMA_P_0_7(4)
#define LC0ROCM_WGMMA_PLACES_64 LC0ROCM_WGMMA_PLACES_60 LC0ROCM_WGMMA_P_0_3(6)
#define LC0ROCM_WGMMA_PLACES_96 LC0ROCM_WGMMA_PLACES_90 LC0ROCM_WGMMA_P_0_5(9)
#define LC0ROCM_WGMMA_PLACES_128 LC0ROCM_WGMMA_PLACES_120 LC0ROCM_WGMMA_P_0_7(12)
// Their constraints c(d[0]), ..., c(d[n-1]) (c "+f" for float sums, "+r"
// for registers of half pairs), sixteen at a time.
#define LC0ROCM_WGMMA_D8(c, d, i) \
  c(d[(i)]), c(d[(i) + 1]), c(d[(i) + 2]), c(d[(i) + 3]), c(d[(i) + 4]), c(d[(i) + 5]), c(d[(i) + 6]), c(d[(i) + 7])
#define LC0ROCM_WGMMA_D16(c, d, i) LC0ROCM_WGMMA_D8(c, d, i), LC0ROCM_WGMMA_D8(c, d, (i) + 8)
#define LC0ROCM_WGMMA_ACCUMULATORS_48(c, d) \
  LC0ROCM_WGMMA_D16(c, d, 0), LC0ROCM_WGMMA_D16(c, d, 16), LC0ROCM_WGMMA_D16(c, d, 32)
#define LC0ROCM_WGMMA_ACCUMULATORS_64(c, d) LC0ROCM_WGMMA_ACCUMULATORS_48(c, d), LC0ROCM_WGMMA_D16(c, d, 48)
#define LC0ROCM_WGMMA_ACCUMULATORS_96(c, d) \
  LC0ROCM_WGMMA_ACCUMULATORS_64(c, d), LC0ROCM_WGMMA_D16(c, d, 64), LC0ROCM_WGMMA_D16(c, d, 80)
#define LC0ROCM_WGMMA_ACCUMULATORS_128(c, d) \
  LC0ROCM_WGMMA_ACCUMULATORS_96(c, d), LC0ROCM_WGMMA_D16(c, d, 96), LC0ROCM_WGMMA_D16(c, d, 112)
// The text of one wgmma.mma_async of `shape` (e.g. "m64n128k16.f32.f16.f16")
// on the accumulators `places`: A's and B's descriptors are operands a and
// b, and scale-d is on where operand p is nonzero (no transposes, scales 1).
#define LC0ROCM_WGMMA_MMA_ASYNC(shape, places, a, b, p)                                        \
  "{\n"                                                                                        \
  ".reg .pred p;\n"                                                                            \
  "setp.ne.b32 p, %" #p ", 0;\n"                                                               \
  "wgmma.mma_async.sync.aligned." shape " {" places "}, %" #a ", %" #b ", p, 1, 1, 0, 0;\n" \
  "}\n"

// One k16 step on a warpgroup's 64 x 128 float accumulators: d += A . B^T
// with A 64 x 16 and B 128 x 16 in shared memory, both K-major (PTX ISA
// "wgmma.mma_async" .m64n128k16.f32.f16.f16, no transposes, scale-d on).
// Asynchronous: d may be read only after wgmma_wait.
__device__ __forceinline__ void wgmma_64x128x16(float* d, uint64_t a_desc, uint64_t b_desc) {
  asm volatile(LC0ROCM_WGMMA_MMA_ASYNC("m64n128k16.f32.f16.f16", LC0ROCM_WGMMA_PLACES_64, 64, 65, 66)
               : LC0ROCM_WGMMA_ACCUMULATORS_64("+f", d)
               : "l"(a_desc), "l"(b_desc), "r"(1));
}

// The same on 64 x 256 accumulators (.m64n256k16): B is 256 x 16.
__device__ __forceinline__ void wgmma_64x256x16(float* d, uint64_t a_desc, uint64_t b_desc) {
  asm volatile(LC0ROCM_WGMMA_MMA_ASYNC("m64n256k16.f32.f16.f16", LC0ROCM_WGMMA_PLACES_128, 128, 129, 130)
               : LC0ROCM_WGMMA_ACCUMULATORS_128("+f", d)
               : "l"(a_desc), "l"(b_desc), "r"(1));
}

// The same 64 x 256 product with half sums (.m64n256k16.f16.f16.f16): d
// holds 64 registers of half pairs, register i the float layout's elements
// 2i and 2i + 1 (PTX ISA, wgmma's D fragments for .f16).
__device__ __forceinline__ void wgmma_64x256x16(unsigned* d, uint64_t a_desc, uint64_t b_desc) {
  asm volatile(LC0ROCM_WGMMA_MMA_ASYNC("m64n256k16.f16.f16.f16", LC0ROCM_WGMMA_PLACES_64, 64, 65, 66)
               : LC0ROCM_WGMMA_ACCUMULATORS_64("+r", d)
               : "l"(a_desc), "l"(b_desc), "r"(1));
}

// Half sums into the float layout: register i's halves become d[2i], d[2i + 1].
template <int kCount>
__device__ __forceinline__ void widen_sums(const unsigned (&h)[kCount], float (&d)[2 * kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h[i]));
    d[2 * i] = f.x;
    d[2 * i + 1] = f.y;
  }
}

// The same on 64 x 192 accumulators (.m64n192k16): B is 192 x 16. With
// accumulate 0, d = A . B^T (scale-d off): no zeroing of d in between.
__device__ __forceinline__ void wgmma_64x192x16(float* d, uint64_t a_desc, uint64_t b_desc, unsigned accumulate = 1) {
  asm volatile(LC0ROCM_WGMMA_MMA_ASYNC("m64n192k16.f32.f16.f16", LC0ROCM_WGMMA_PLACES_96, 96, 97, 98)
               : LC0ROCM_WGMMA_ACCUMULATORS_96("+f", d)
               : "l"(a_desc), "l"(b_desc), "r"(accumulate));
}

// The same 64 x 192 product with half sums (.f16.f16.f16): d holds 48
// registers of half pairs, register i the float layout's elements 2i, 2i + 1.
__device__ __forceinline__ void wgmma_64x192x16(unsigned* d, uint64_t a_desc, uint64_t b_desc, unsigned accumulate = 1) {
  asm volatile(LC0ROCM_WGMMA_MMA_ASYNC("m64n192k16.f16.f16.f16", LC0ROCM_WGMMA_PLACES_48, 48, 49, 50)
               : LC0ROCM_WGMMA_ACCUMULATORS_48("+r", d)
               : "l"(a_desc), "l"(b_desc), "r"(accumulate));
}

}  // namespace wgmma
}  // namespace lc0rocm

#undef LC0ROCM_WGMMA_P
#undef LC0ROCM_WGMMA_P_0_3
#undef LC0ROCM_WGMMA_P_0_5
#undef LC0ROCM_WGMMA_P_0_7
#undef LC0ROCM_WGMMA_P_0_9
#undef LC0ROCM_WGMMA_PLACES_40
#undef LC0ROCM_WGMMA_PLACES_60
#undef LC0ROCM_WGMMA_PLACES_90
#undef LC0ROCM_WGMMA_PLACES_120
#undef LC0ROCM_WGMMA_PLACES_48
#undef LC0ROCM_WGMMA_PLACES_64
#undef LC0ROCM_WGMMA_PLACES_96
#undef LC0ROCM_WGMMA_PLACES_128
#undef LC0ROCM_WGMMA_D8
#undef LC0ROCM_WGMMA_D16
#undef LC0ROCM_WGMMA_ACCUMULATORS_48
#undef LC0ROCM_WGMMA_ACCUMULATORS_64
#undef LC0ROCM_WGMMA_ACCUMULATORS_96
#undef LC0ROCM_WGMMA_ACCUMULATORS_128
#undef LC0ROCM_WGMMA_MMA_ASYNC
#endif
