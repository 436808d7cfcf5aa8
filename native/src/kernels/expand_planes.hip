// expand_planes: lc0's packed input (mask, value per plane) -> planes;
// transpose_planes: full float planes -> planes.
#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

namespace lc0rocm {

// One thread per (position, square, group of 8 planes): eight masks and
// values in, one 16-byte store of halves (two of floats) out. The plane
// group is the fastest index, so a warp's stores are contiguous in the
// square-major layout, and 32-bit index arithmetic suffices. (A thread per
// element with 64-bit index division took ~10 us at batch 256, where the
// 3.7 MB write alone needs ~2.)
constexpr int kPlaneGroup = 8;
constexpr int kPlaneGroups = 112 / kPlaneGroup;
static_assert(112 % kPlaneGroup == 0, "planes come in whole groups");

template <typename T>
__global__ void expand_planes_kernel(int n, const uint64_t* masks, const float* values, T* out) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n * 64 * kPlaneGroups) return;
  const int group = i % kPlaneGroups;
  const int position_square = i / kPlaneGroups;
  const int square = position_square % 64;
  const int first = position_square / 64 * 112 + group * kPlaneGroup;  // the group's first plane
  // Rows of masks (896 bytes) and values (448) keep 16-byte alignment
  // (network.cpp places values right after n rows of masks).
  const ulonglong2* mask_pairs = reinterpret_cast<const ulonglong2*>(masks + first);
  const float4* value_quads = reinterpret_cast<const float4*>(values + first);
  alignas(16) T expanded[kPlaneGroup];
  for (int k = 0; k < kPlaneGroup / 4; ++k) {
    const ulonglong2 m0 = mask_pairs[2 * k], m1 = mask_pairs[2 * k + 1];
    const float4 v = value_quads[k];
    expanded[4 * k + 0] = from_float<T>((m0.x >> square) & 1ull ? v.x : 0.0f);
    expanded[4 * k + 1] = from_float<T>((m0.y >> square) & 1ull ? v.y : 0.0f);
    expanded[4 * k + 2] = from_float<T>((m1.x >> square) & 1ull ? v.z : 0.0f);
    expanded[4 * k + 3] = from_float<T>((m1.y >> square) & 1ull ? v.w : 0.0f);
  }
  constexpr int kStores = kPlaneGroup * sizeof(T) / sizeof(uint4);  // 16-byte stores: 1 (half), 2 (float)
  const uint4* from = reinterpret_cast<const uint4*>(expanded);
  uint4* to = reinterpret_cast<uint4*>(out + static_cast<size_t>(position_square) * 112 + group * kPlaneGroup);
  for (int j = 0; j < kStores; ++j) to[j] = from[j];
}

// A block per position: its 112 x 64 floats come in through shared memory
// (coalesced 16-byte loads, plane-major as they arrive), then each thread
// writes one square's group of 16 planes, 32 bytes of halves (64 of
// floats): a warp's shared-memory reads are consecutive squares of one
// plane (no bank conflicts) and every store fills whole 32-byte sectors.
// (A thread per element read floats 256 bytes apart, with 64-bit index
// division.)
constexpr int kTransposeGroup = 16;
constexpr int kTransposeThreads = 64 * 112 / kTransposeGroup;  // 448: one (square, group) each
static_assert(112 % kTransposeGroup == 0, "planes come in whole groups");

template <typename T>
__global__ void __launch_bounds__(kTransposeThreads) transpose_planes_kernel(const float* in, T* out) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  __shared__ float4 tile[112 * 64 / 4];  // [plane][square], as in `in`
  const int position = blockIdx.x;
  const float4* from = reinterpret_cast<const float4*>(in + static_cast<size_t>(position) * 112 * 64);
  for (int q = threadIdx.x; q < 112 * 64 / 4; q += kTransposeThreads) tile[q] = from[q];
  __syncthreads();
  const float* planes = reinterpret_cast<const float*>(tile);
  const int square = threadIdx.x % 64;
  const int first = threadIdx.x / 64 * kTransposeGroup;
  alignas(16) T group[kTransposeGroup];
  for (int k = 0; k < kTransposeGroup; ++k) group[k] = from_float<T>(planes[(first + k) * 64 + square]);
  constexpr int kStores = kTransposeGroup * sizeof(T) / sizeof(uint4);  // 2 (half), 4 (float)
  const uint4* src = reinterpret_cast<const uint4*>(group);
  uint4* to = reinterpret_cast<uint4*>(out + (static_cast<size_t>(position) * 64 + square) * 112 + first);
  for (int j = 0; j < kStores; ++j) to[j] = src[j];
}

void expand_planes(hipStream_t stream, DType dt, int n, const uint64_t* masks,
                   const float* values, void* planes) {
  const long long threads = (long long)n * 64 * kPlaneGroups;
  if (threads == 0) return;
  if (!aligned16(masks) || !aligned16(values) || !aligned16(planes))
    fail(LC0ROCM_INTERNAL_ERROR, "expand_planes: masks, values and planes must be 16-byte aligned");
  if (dt == DType::F32)
    gpu_launch(expand_planes_kernel<float>, blocks_for(threads), kBlockThreads, 0, stream, n, masks, values,
               (float*)planes);
  else
    gpu_launch(expand_planes_kernel<half>, blocks_for(threads), kBlockThreads, 0, stream, n, masks, values,
               (half*)planes);
  GPU_CHECK_LAUNCH();
}

void transpose_planes(hipStream_t stream, DType dt, int n, const float* planes_in, void* planes) {
  if (n == 0) return;
  if (!aligned16(planes_in) || !aligned16(planes))
    fail(LC0ROCM_INTERNAL_ERROR, "transpose_planes: input and planes must be 16-byte aligned");
  if (dt == DType::F32)
    gpu_launch(transpose_planes_kernel<float>, dim3(n), kTransposeThreads, 0, stream, planes_in, (float*)planes);
  else
    gpu_launch(transpose_planes_kernel<half>, dim3(n), kTransposeThreads, 0, stream, planes_in, (half*)planes);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
