// plan/limits.h - the shapes each kernel takes, defined once: the plan
// (plan/*.cpp) chooses by them, and the kernels' launchers check them
// again before they launch (kernels/ops.h, attention_kernels.h).
// Plain C++: no GPU headers.
#pragma once
#include <cstddef>

#include "device.h"

// The shared-memory sizes below are also computed in device code (a
// kernel's offsets); plain C++ compilers see plain functions.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define LC0ROCM_LIMITS_DEVICE __host__ __device__
#else
#define LC0ROCM_LIMITS_DEVICE
#endif

namespace lc0rocm {
namespace limits {

constexpr size_t kDefaultShared = 48 * 1024;  // shared memory a kernel may have without opting in

// gemm_sm90.hip: N a multiple of its 128-wide tiles, K of its 64-wide slices.
constexpr int kSm90TileN = 128, kSm90TileK = 64;
inline bool gemm_sm90_fits(int N, int K) {
  return N >= kSm90TileN && N % kSm90TileN == 0 && K >= kSm90TileK && K % kSm90TileK == 0;
}

// gemm_sm90_layer_norm.hip: N in 256-wide tiles, a group of up to 4 blocks
// (N up to 1,024), K at least two 64-wide slices; rows in 128-row tiles.
constexpr int kSm90NormTileM = 128, kSm90NormTileN = 256, kSm90NormTileK = 64, kSm90NormMaxBlocks = 4;
inline bool gemm_sm90_layer_norm_fits(int N, int K) {
  return N % kSm90NormTileN == 0 && N / kSm90NormTileN >= 1 && N / kSm90NormTileN <= kSm90NormMaxBlocks &&
         K % kSm90NormTileK == 0 && K >= 2 * kSm90NormTileK;
}
// How full (percent) its rounds of row tiles over the device's groups of
// N / 256 blocks are for M rows, resident_blocks of its blocks running at
// once (0: it never runs): its blocks wait for each other, so a last round
// part empty costs a whole round.
inline int gemm_sm90_layer_norm_fill(long long M, int N, int resident_blocks) {
  const int blocks = N / kSm90NormTileN;
  if (M < 1 || blocks < 1 || blocks > kSm90NormMaxBlocks) return 0;
  const long long groups = resident_blocks / blocks;
  if (groups == 0) return 0;
  const long long row_tiles = (M + kSm90NormTileM - 1) / kSm90NormTileM;
  const long long rounds = (row_tiles + groups - 1) / groups;
  return static_cast<int>(100 * row_tiles / (rounds * groups));
}

// attn_qkv_attention_sm90.hip: heads of depth 32 in pairs, the embedding in
// 64-wide slices, at least two of them (the slices a block keeps ahead).
constexpr int kQkvDepth = 32, kQkvPairHeads = 2, kQkvTileK = 64, kQkvAhead = 2;
inline bool qkv_attention_sm90_fits(int heads, int depth, int embedding) {
  return depth == kQkvDepth && heads >= kQkvPairHeads && heads % kQkvPairHeads == 0 &&
         embedding >= kQkvAhead * kQkvTileK && embedding % kQkvTileK == 0;
}

// attn_smolgen_generate.hip: mma.sync on 32-lane warps; 4,096 outputs (64 x
// 64 logits a head), up to 32 heads, gen inputs a head in chunks of 32 up to
// 256, heads * gen up to 8,192.
constexpr int kGenerateOutputs = 4096, kGenerateMaxHeads = 32, kGenerateChunk = 32, kGenerateMaxChunks = 8,
              kGenerateMaxWidth = 4 * 256 * 8;
inline bool smolgen_generate_fits(const DeviceInfo& device, int heads, int gen, int outputs) {
  const long long width = static_cast<long long>(heads) * gen;
  return device.mma_fp16 && device.warp_size == 32 && outputs == kGenerateOutputs && heads >= 1 &&
         heads <= kGenerateMaxHeads && gen >= kGenerateChunk && gen % kGenerateChunk == 0 &&
         gen <= kGenerateMaxChunks * kGenerateChunk && width <= kGenerateMaxWidth;
}

// attn_layer_norm.hip: rows wider than 256 16-byte vectors (smolgen's
// second layer norm) go a row to a block of 256 threads instead of 1,024
// from this many rows (its wide_from_rows; the plan may move it).
constexpr int kWideNormDefaultRows = 256;

// gemv_rows.hip: up to 4 rows of half, K in 16-byte vectors, the rows of x
// in 48 KB of shared memory (no opt-in: a capture could not set one), row
// r's output written by lane r.
constexpr int kGemvMaxRows = 4, kGemvVecHalves = 8;
inline bool gemv_rows_fits(const DeviceInfo& device, long long M, int N, int K) {
  return M >= 1 && M <= kGemvMaxRows && N >= 1 && K >= kGemvVecHalves && K % kGemvVecHalves == 0 &&
         2 * static_cast<size_t>(M) * static_cast<size_t>(K) <= kDefaultShared && device.warp_size >= kGemvMaxRows;
}

// The fused attention: heads up to depth 48 in its shared memory (scalar,
// attn_fused_attention.hip). On matrix cores, half storage, Q|K|V rows in
// 16-byte pieces: NVIDIA's (attn_fused_attention_tc.hip) on 32-lane warps,
// mma.sync for depth 16 or 32, wmma for 16, 32 or 48; AMD CDNA's MFMA (64
// lanes) and RDNA 3's WMMA (32 lanes) for depth 16 or 32.
constexpr int kFusedMaxDepth = 48;
inline bool mma_attention_fits(const DeviceInfo& d, int depth) {
  return d.nvidia && d.warp_size == 32 && d.fast_fp16 && d.mma_fp16 && (depth == 16 || depth == 32);
}
inline bool wmma_attention_fits(const DeviceInfo& d, int depth) {
  return d.nvidia && d.warp_size == 32 && d.fast_fp16 && (depth == 16 || depth == 32 || depth == 48);
}
inline bool mfma_attention_fits(const DeviceInfo& d, int depth) {
  return d.mfma_fp16 && d.warp_size == 64 && (depth == 16 || depth == 32);
}
inline bool rdna_attention_fits(const DeviceInfo& d, int depth) {
  return d.rdna_wmma_fp16 && d.warp_size == 32 && (depth == 16 || depth == 32);
}

// conv3x3_implicit.hip: half on mma.sync, cin in steps of 16 up to 128, cout
// in steps of 8; the board and a block's weight rows in 48 KB.
constexpr int kImplicitMaxChannels = 128, kImplicitOutPerBlock = 8, kImplicitPad = 8;
LC0ROCM_LIMITS_DEVICE constexpr size_t implicit_conv_shared_bytes(int cin) {
  return 2 * (static_cast<size_t>(100) * (cin + kImplicitPad) +
              static_cast<size_t>(kImplicitOutPerBlock) * (9 * cin + kImplicitPad));
}
inline bool implicit_conv_shape_fits(int cin, int cout) {
  return cin > 0 && cin % 16 == 0 && cin <= kImplicitMaxChannels && cout > 0 && cout % kImplicitOutPerBlock == 0 &&
         implicit_conv_shared_bytes(cin) <= kDefaultShared;
}
inline bool implicit_conv_fits(const DeviceInfo& d, bool half, int cin, int cout) {
  return half && d.nvidia && d.mma_fp16 && implicit_conv_shape_fits(cin, cout);
}

// se_fused.hip: a block of 256 threads per position; pooled [C], hidden [H],
// gates [2C] and the partial sums [max(256, H, 2C)] floats in 48 KB.
constexpr int kSeFusedThreads = 256;
LC0ROCM_LIMITS_DEVICE constexpr int max3(int a, int b, int c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }
LC0ROCM_LIMITS_DEVICE constexpr size_t se_fused_shared_floats(int channels, int hidden) {
  return static_cast<size_t>(3 * channels + hidden + max3(kSeFusedThreads, hidden, 2 * channels));
}
inline bool se_fused_fits(int channels, int hidden) {
  return channels > 0 && hidden > 0 && se_fused_shared_floats(channels, hidden) * sizeof(float) <= kDefaultShared;
}

// winograd_output_input.hip: a block of 4C threads per position (C up to
// 128); with an SE unit the floats partial [max(4C, H)], pooled [C], hidden
// [H], gates [2C]; then the board [64][C] in the storage type, in 48 KB.
constexpr int kWinogradChainMaxChannels = 128;
LC0ROCM_LIMITS_DEVICE constexpr size_t winograd_chain_se_floats(int channels, int hidden) {
  return hidden <= 0 ? 0
                     : static_cast<size_t>((4 * channels > hidden ? 4 * channels : hidden) + 3 * channels + hidden);
}
LC0ROCM_LIMITS_DEVICE constexpr size_t winograd_chain_shared_bytes(int channels, int hidden, size_t element) {
  return (winograd_chain_se_floats(channels, hidden) * sizeof(float) + 15) / 16 * 16 + 64 * channels * element;
}
inline bool winograd_chain_fits(bool half, int channels, int se_hidden) {
  return channels > 0 && channels <= kWinogradChainMaxChannels && se_hidden >= 0 &&
         winograd_chain_shared_bytes(channels, se_hidden, half ? 2 : 4) <= kDefaultShared;
}

// value_head_tail.hip: 1 (classical) or 3 (WDL) outputs, k inputs in
// 16-byte vectors, W as floats in shared memory (up to 12 KB).
constexpr int kValueTailMaxInputs = 1024;
inline bool value_tail_fits(bool half, int k, int outs) {
  const int vec = half ? 8 : 4;
  return (outs == 1 || outs == 3) && k >= 1 && k % vec == 0 && k <= kValueTailMaxInputs;
}

// resnet_tower.hip: 64 channels, up to 64 residual blocks, SE hidden widths
// a multiple of 4 up to 64, half on mma.sync with 32-lane warps (whether
// its shared memory fits is the kernel's to say: TowerFacts).
constexpr int kTowerChannels = 64, kTowerMaxBlocks = 64, kTowerMaxSeHidden = 64, kTowerClusterBlocks = 4;
inline bool resnet_tower_fits(const DeviceInfo& d, bool half, int channels, int blocks, int se_hidden) {
  return half && d.nvidia && d.mma_fp16 && d.warp_size == 32 && channels == kTowerChannels && blocks >= 1 &&
         blocks <= kTowerMaxBlocks && se_hidden >= 0 && se_hidden <= kTowerMaxSeHidden && se_hidden % 4 == 0;
}

// tf32_split.hip: rows in 16-byte pieces.
inline bool tf32_split_fits(int cols) { return cols % 4 == 0; }

}  // namespace limits
}  // namespace lc0rocm
