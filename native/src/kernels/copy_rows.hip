// copy_rows: a block of columns out of wider rows into a dense matrix,
// 16 bytes a thread (smolgen's compressed channels out of the rows of the
// product that computes them with Q|K|V: native/docs/ATTENTION_FUSED.md). A 2-D
// runtime copy of these narrow rows (64 bytes at bt4's, every 6 KB) took
// 11 us at bt4's batch 256 on an H100, about what reading x for a
// product of their own took.
#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

namespace lc0rocm {

__global__ void copy_rows_kernel(unsigned char* dst, long long dst_stride, const unsigned char* src,
                                 long long src_stride, int pieces_per_row, long long pieces) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= pieces) return;
  const long long row = i / pieces_per_row;
  const int piece = static_cast<int>(i - row * pieces_per_row);
  *reinterpret_cast<uint4*>(dst + row * dst_stride + 16 * piece) =
      *reinterpret_cast<const uint4*>(src + row * src_stride + 16 * piece);
}

bool copy_rows(hipStream_t stream, long long rows, int row_bytes, const void* src, long long src_stride,
               void* dst, long long dst_stride) {
  if (row_bytes % 16 != 0 || src_stride % 16 != 0 || dst_stride % 16 != 0 || !aligned16(src) || !aligned16(dst))
    return false;
  const int pieces_per_row = row_bytes / 16;
  const long long pieces = rows * pieces_per_row;
  if (pieces == 0) return true;
  gpu_launch(copy_rows_kernel, blocks_for(pieces), kBlockThreads, 0, stream, static_cast<unsigned char*>(dst),
             dst_stride, static_cast<const unsigned char*>(src), src_stride, pieces_per_row, pieces);
  GPU_CHECK_LAUNCH();
  return true;
}

}  // namespace lc0rocm
