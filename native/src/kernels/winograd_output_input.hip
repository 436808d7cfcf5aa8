// winograd_output_input: one convolution's Winograd output transform with
// its epilogue, fused with the next convolution's input transform, for a
// tower of 3x3 convolutions that all run Winograd F(4x4, 3x3):
//   Y = A^T M A + bias                     (m [36][n * 4][C], this layer's products)
//   z = act(SE(Y) + residual)             (SE and residual optional)
//   y = z                                  ([n][64][C], when y is given)
//   v_next = B^T z B per tile              ([36][n * 4][C], when v_next is given)
// One block per position, one thread per (tile, channel): the position's z
// goes through shared memory (rounded to the storage type, as y would be
// between two separate launches), so the next layer's input transform reads
// its 6x6 windows there instead of from device memory, and a block's first
// convolution never writes its output at all. Replaces winograd_output (+
// se_fused) + winograd_input: two or three launches and two passes over the
// activations. Plain arithmetic, no warp-width assumption: the same source
// for AMD (wave32 and wave64) and NVIDIA. Design note: native/docs/WINOGRAD.md.
#include "../gpu_compat.h"
#include "block_ops.h"
#include "ops.h"
#include "winograd_transforms.h"

namespace lc0rocm {
namespace winograd_chain_detail {

constexpr int kMaxThreads = 4 * limits::kWinogradChainMaxChannels;

// Shared memory (plan/limits.h): with an SE unit the floats partial
// [max(4C, H)], pooled [C], hidden [H], gates [2C]; then the board z [64][C] in T.
__host__ __device__ constexpr size_t se_floats(int channels, int hidden) {
  return limits::winograd_chain_se_floats(channels, hidden);
}
inline size_t shared_bytes(int channels, int hidden, size_t element) {
  return limits::winograd_chain_shared_bytes(channels, hidden, element);
}

}  // namespace winograd_chain_detail

// kSe: with an SE unit (the layers without one compile without its code);
// kAct: the activation, or kAnyActivation to take act at run time.
template <typename T, bool kSe, Activation kAct>
__global__ void __launch_bounds__(winograd_chain_detail::kMaxThreads)
winograd_output_input_kernel(int channels, const T* m, const float* bias, SeWeights se, const T* residual,
                             T* y, T* v_next, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  using namespace winograd_detail;
  extern __shared__ float chain_scratch[];
  const int C = channels, H = kSe ? se.hidden : 0, tid = threadIdx.x;
  const int tile = tid / C, c = tid % C;
  const long long pos = blockIdx.x;
  const long long row = pos * 4 + tile;
  const long long plane = static_cast<long long>(gridDim.x) * 4 * C;  // elements per t
  const int rank0 = (tile / 2) * 4, file0 = (tile % 2) * 4;
  float* partial = chain_scratch;
  float* pooled = partial + (4 * C > H ? 4 * C : H);
  float* hidden = pooled + C;
  float* gates = hidden + H;
  T* board = reinterpret_cast<T*>(reinterpret_cast<char*>(chain_scratch) +
                                  (winograd_chain_detail::se_floats(C, H) * sizeof(float) + 15) / 16 * 16);

  // Every device load first: the residual's 16 values, then M's 36.
  float res[4][4];
  if (residual) {
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        res[k][j] = to_float(residual[(pos * 64 + (rank0 + k) * 8 + file0 + j) * C + c]);
  }
  const T* mp = m + row * C + c;
  float t1[6][4];                                    // M A, row by row
#pragma unroll
  for (int a = 0; a < 6; ++a) {
    float r[6];
#pragma unroll
    for (int b = 0; b < 6; ++b) r[b] = to_float(mp[(a * 6 + b) * plane]);
    output_1d(r, t1[a]);
  }
  const float b = bias ? bias[c] : 0.0f;
  float z[4][4];                                     // z[rank][file] within the tile
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float col[6], out[4];
#pragma unroll
    for (int a = 0; a < 6; ++a) col[a] = t1[a][j];
    output_1d(col, out);
#pragma unroll
    for (int k = 0; k < 4; ++k) z[k][j] = out[k] + b;
  }

  if (kSe) {
    // SE: the channel's mean over its 4 tiles, two dense layers, then a
    // sigmoid scale and a shift per channel (se_fused.hip's arithmetic).
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int j = 0; j < 4; ++j) sum += z[k][j];
    partial[tile * C + c] = sum;
    __syncthreads();
    if (tid < C) pooled[tid] = (partial[tid] + partial[C + tid] + partial[2 * C + tid] + partial[3 * C + tid]) *
                               (1.0f / 64.0f);
    __syncthreads();
    block_se_gates(pooled, static_cast<const T*>(se.w1), se.b1, static_cast<const T*>(se.w2), se.b2, C, H, act,
                   partial, hidden, gates);
    const float scale = gates[c], shift = gates[C + c];
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int j = 0; j < 4; ++j) z[k][j] = z[k][j] * scale + shift;
  }

  // Residual and activation, rounded to T once: into y and the board.
#pragma unroll
  for (int k = 0; k < 4; ++k) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int square = (rank0 + k) * 8 + file0 + j;
      float v = z[k][j];
      if (residual) v += res[k][j];
      const T out = from_float<T>(activate_as<kAct>(v, act));
      if (y) y[(pos * 64 + square) * C + c] = out;
      board[square * C + c] = out;
    }
  }
  if (!v_next) return;
  __syncthreads();

  // The next layer's input transform of this tile from the board: the 6x6
  // window of ranks rank0-1 .. rank0+4 (zero off the board).
  float d[6][6];
#pragma unroll
  for (int a = 0; a < 6; ++a) {
    const int rank = rank0 - 1 + a;
#pragma unroll
    for (int bb = 0; bb < 6; ++bb) {
      const int file = file0 - 1 + bb;
      const bool on = rank >= 0 && rank < 8 && file >= 0 && file < 8;
      d[a][bb] = on ? to_float(board[(rank * 8 + file) * C + c]) : 0.0f;
    }
  }
  float u[6][6];                                     // B^T d, column by column
#pragma unroll
  for (int bb = 0; bb < 6; ++bb) {
    float col[6], out[6];
#pragma unroll
    for (int a = 0; a < 6; ++a) col[a] = d[a][bb];
    input_1d(col, out);
#pragma unroll
    for (int a = 0; a < 6; ++a) u[a][bb] = out[a];
  }
  T* vp = v_next + row * C + c;
#pragma unroll
  for (int a = 0; a < 6; ++a) {
    float out[6];
    input_1d(u[a], out);
#pragma unroll
    for (int bb = 0; bb < 6; ++bb) vp[(a * 6 + bb) * plane] = from_float<T>(out[bb]);
  }
}

template <typename T>
static void launch_output_input(hipStream_t stream, int n, int threads, size_t shared, bool with_se, int channels,
                                const T* m, const float* bias, const SeWeights& se, const T* residual, T* y,
                                T* v_next, Activation act) {
  with_activation(act, [&](auto tag) {
    constexpr Activation kAct = decltype(tag)::value;
    if (with_se)
      gpu_launch(winograd_output_input_kernel<T, true, kAct>, n, threads, shared, stream, channels, m, bias, se,
                 residual, y, v_next, act);
    else
      gpu_launch(winograd_output_input_kernel<T, false, kAct>, n, threads, shared, stream, channels, m, bias, se,
                 residual, y, v_next, act);
  });
}

void winograd_output_input(hipStream_t stream, DType dt, int n, int channels, const void* m, const float* bias,
                           const SeWeights* se, const void* residual, void* y, void* v_next, Activation act) {
  const int hidden = se ? se->hidden : 0;
  if (!limits::winograd_chain_fits(dt == DType::F16, channels, hidden))
    fail(LC0ROCM_INTERNAL_ERROR, "winograd_output_input: " + std::to_string(channels) + " channels, " +
                                     std::to_string(hidden) + " SE hidden are not supported");
  if (n == 0) return;
  const SeWeights weights = se ? *se : SeWeights{};
  const size_t shared = winograd_chain_detail::shared_bytes(channels, hidden, dtype_size(dt));
  const int threads = 4 * channels;
  if (dt == DType::F32)
    launch_output_input<float>(stream, n, threads, shared, se != nullptr, channels,
                               static_cast<const float*>(m), bias, weights, static_cast<const float*>(residual),
                               static_cast<float*>(y), static_cast<float*>(v_next), act);
  else
    launch_output_input<half>(stream, n, threads, shared, se != nullptr, channels,
                              static_cast<const half*>(m), bias, weights, static_cast<const half*>(residual),
                              static_cast<half*>(y), static_cast<half*>(v_next), act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
