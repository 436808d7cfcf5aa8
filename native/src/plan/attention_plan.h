// plan/attention_plan.h - which kernels an attention body runs, per encoder
// layer, for a batch size on a device: the one place these choices are
// made (attention/*.cpp runs what the plan says; describe() prints it).
// Plain C++, unit-tested on the CPU for the GPUs we know
// (tests/test_native_plan.py). The thresholds are measured: each says
// where and by how much in its comment (attention_plan.cpp).
#pragma once
#include <string>
#include <vector>

#include "device.h"
#include "settings.h"

namespace lc0rocm {

// A dense layer y = x . W^T + b: `in` inputs, `out` outputs.
struct DenseShape {
  int in = 0, out = 0;
};

// One post-LN encoder layer's shapes.
struct EncoderShape {
  int heads = 0, depth = 0, embedding = 0;
  DenseShape out, ffn1, ffn2;  // the attention's output product, the FFN's two
  bool smolgen = false;
  int gen = 0;                 // smolgen's generator inputs a head
  int qkv_with_compress = 0;   // Q|K|V's rows with smolgen's compress stacked after them; 0: Q|K|V's alone
};

// What the plan needs to know of an attention net (body, or the attention
// policy head alone on a convolution body).
struct AttentionNet {
  bool half = false;
  bool policy_only = false;           // the attention policy head of a convolution body
  bool pe_dense = false;
  int embedding = 0;
  std::vector<EncoderShape> encoders;         // the body's
  std::vector<EncoderShape> policy_encoders;  // the policy head's
  int smolgen_outputs = 0;                    // the shared generator's (smolgen_w: 4,096), 0 without
  DenseShape embedding_ffn1, embedding_ffn2;  // PE_DENSE's FFN
  DenseShape policy_embedding, policy_query_key;
};

// What the library's sm_90 kernels said when they were prepared for the
// device (kernels/ops.h, attention_kernels.h: attributes set, tensor maps
// at hand): whether each runs, and how many of gemm_sm90_layer_norm's
// blocks the device runs at once (its occupancy).
struct Sm90Facts {
  bool gemm = false;
  int layer_norm_blocks = 0;  // 0: gemm_sm90_layer_norm does not run here
  bool qkv_attention = false;
};

enum class AttentionKernel {
  Unfused,   // split heads, batched products, softmax, merge (heads deeper than 48)
  Scalar,    // attn_fused_attention.hip
  Mma,       // attn_fused_attention_tc.hip, mma.sync fragments (NVIDIA sm_80+)
  Wmma,      // attn_fused_attention_tc.hip, wmma (NVIDIA sm_70+)
  Mfma,      // AMD CDNA matrix cores (attn_fused_attention_amd.hip)
  RdnaWmma,  // AMD RDNA 3 (attn_fused_attention_amd.hip)
  QkvSm90,   // with the Q|K|V product in one launch (attn_qkv_attention_sm90.hip)
};

// In which order an encoder layer runs its Q|K|V product and smolgen's chain.
enum class QkvOrder {
  QkvFirst,      // Q|K|V, then smolgen (a float pass's split of x serves both)
  SmolgenFirst,  // smolgen first, while x is in L2
  Beside,        // Q|K|V on the side lane beside smolgen (captured passes only)
  WithCompress,  // one product for Q|K|V and smolgen's compress
  OneLaunch,     // smolgen first, then Q|K|V and the attention in one launch
};

struct EncoderPlan {
  QkvOrder order = QkvOrder::QkvFirst;
  AttentionKernel attention = AttentionKernel::Scalar;
  bool generate = false;         // smolgen's second layer norm inside its generator product
  bool out_norm_sm90 = false;    // the output product with its layer norm on gemm_sm90_layer_norm
  bool ffn2_norm_sm90 = false;   // the FFN's second product likewise
};

// How a dense layer's product runs at a number of rows.
enum class Product { Blas, Gemv, Sm90, Tf32Split };

// Rules that hold for a whole network (set at creation), which the
// per-batch plan applies.
struct AttentionRules {
  bool half = false;
  bool policy_only = false;
  bool fused = true, matrix = true, mma = true;  // attention kernels allowed
  int generate_positions = 0;     // smolgen's LN2 in its generator up to this batch
  int beside_positions = 0;       // Q|K|V beside smolgen up to this batch (body only)
  int smolgen_first_positions = 0;  // smolgen before Q|K|V from this batch (0: never; body only)
  int compress_positions = 0;     // the compress in the Q|K|V product from this batch (0: never)
  int qkv_attention_positions = 0;  // Q|K|V and the attention in one launch from this batch (0: never; body only)
  bool qkv_half_sums = false;
  int wide_norm_rows = 0;         // smolgen's LN2 on 256-thread blocks from this many rows (0: never)
  int gemv_max_rows = 0;          // dense layers of up to this many rows on gemv_rows
  int sm90_from_rows = 0;         // the FFN's first products (and the policy's) on gemm_sm90 (0: never)
  bool sm90_half_sums = false;    // its products sum in half where N is a multiple of 256
  int sm90_norm_from_rows = 0;    // output and FFN second products with their layer norms (0: never)
  int sm90_norm_min_fill = 0;     // ... where its rounds are at least this full (percent)
  int sm90_norm_blocks = 0;       // gemm_sm90_layer_norm's resident blocks
  int tf32_from_rows = 0;         // float products split for tf32 from this many rows (0: never)
  bool side_lane = false;         // some batch runs Q|K|V beside smolgen: the stream makes a side lane
};

AttentionRules attention_rules(const AttentionNet& net, const DeviceInfo& device, const Settings& settings,
                               const Sm90Facts& sm90);

// Per dense layer, decided once: whether it may run on gemm_sm90 (the
// FFNs' first products and the policy's embedding and query | key), with
// its layer norm on gemm_sm90_layer_norm (the body's output and FFN second
// products), and split for tf32.
struct DenseRoute {
  bool sm90 = false;
  bool sm90_half_sums = false;
  bool sm90_norm = false;
  bool tf32 = false;
};
enum class DenseRole { Other, Sm90Product, NormProduct };
DenseRoute dense_route(const AttentionRules& rules, DenseShape shape, DenseRole role);

// The product a dense layer of `route` runs at `rows` rows (gemv_rows,
// gemm_sm90, split tf32 or BLAS; where a kernel then refuses its buffers at
// run time, BLAS). tf32_room: whether the pass's split scratch holds x.
Product product_for(const AttentionRules& rules, const DeviceInfo& device, const DenseRoute& route, DenseShape shape,
                    long long rows, bool tf32_room);
// Whether a product of `route` runs with its layer norm on
// gemm_sm90_layer_norm at `rows` rows.
bool takes_sm90_norm(const AttentionRules& rules, const DenseRoute& route, DenseShape shape, long long rows);

struct AttentionPlan {
  int batch = 0;
  std::vector<EncoderPlan> encoders;         // the body's, in order
  std::vector<EncoderPlan> policy_encoders;  // the policy head's
  bool norm_exchange = false;  // some product runs on gemm_sm90_layer_norm: the pass prepares its exchange
  bool dependent_launch = false;  // kernels as dependent launches (the dependent_launch setting may override)
};

// The fused attention's kernel for a layer (the one launch with Q|K|V
// aside): what runs where that launch refuses its operands at run time.
AttentionKernel fused_attention_kernel(const AttentionRules& rules, const DeviceInfo& device,
                                       const EncoderShape& layer);

// The plan of a pass of n positions. captured: the pass is captured into a
// graph (Q|K|V beside smolgen only there: plain passes measured faster in
// series, SIDE_LANE.md); describe() plans as a replayed pass runs.
AttentionPlan plan_attention(const AttentionNet& net, const AttentionRules& rules, const DeviceInfo& device, int n,
                             bool captured);

// The plan in words, as lc0rocm_stream_describe gives it (tests match it).
std::string describe_attention(const AttentionNet& net, const AttentionRules& rules, const DeviceInfo& device, int n);

}  // namespace lc0rocm
