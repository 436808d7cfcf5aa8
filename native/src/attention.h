// attention.h - attention bodies (T79..T82 with smolgen, BT3/BT4) and the
// attention policy head, on the GPU.
//
// Tensors (lc0_rocm/backends/native_attention.py builds them from Weights):
// lc0's own layout, dense weights [out][in], named by their proto path with
// list indices, scalars as 1-element int32 tensors.
//   embedding:  ip_emb_w, ip_emb_b; PE_DENSE also ip_emb_preproc_{w,b},
//               ip_emb_ln_{gammas,betas}, ip_emb_ffn.dense{1,2}_{w,b},
//               ip_emb_ffn_ln_{gammas,betas}; optional ip_mult_gate, ip_add_gate
//               (stored [C][64]).
//   encoders:   encoder.<i>.mha.{q,k,v,dense}_{w,b}, encoder.<i>.ln{1,2}_{gammas,betas},
//               encoder.<i>.ffn.dense{1,2}_{w,b}; smolgen: encoder.<i>.mha.smolgen.
//               {compress, dense1_w, dense1_b, ln1_gammas, ln1_betas, dense2_w,
//               dense2_b, ln2_gammas, ln2_betas} and the shared smolgen_w [4096][gen];
//               headcount (scalar).
//   policy:     the head lc0 picks (Weights.policy_head("vanilla")) under
//               "policy_head.": ip_pol_{w,b}, ip2_pol_{w,b} (query), ip3_pol_{w,b}
//               (key), ip4_pol_w [4][d] (promotions q, r, b, n), optional
//               pol_encoder.<i>.* as above and pol_headcount (scalar).
//   value:      Weights.value_head("winner") under "value_head.": ip_val_{w,b},
//               ip1_val_{w,b}, ip2_val_{w,b}.
//   moves left: ip_mov_{w,b}, ip1_mov_{w,b}, ip2_mov_{w,b} (when config.moves_left).
//
// Numerics follow lc0_rocm/backends/cpu_attention.py (the numpy reference):
// post-LN encoders LN(alpha * branch + x), alpha = (2 * layers)^-0.25, LN
// epsilon 1e-3 for PE_DENSE nets and 1e-6 otherwise, 1e-3 in the embedding
// and smolgen layer norms.
#pragma once
#include "body.h"

namespace lc0rocm {

std::unique_ptr<Body> make_attention_body(const NetConfig& config, const WeightStore& weights);

// The attention policy head alone, for convolution bodies (tensors under
// `prefix`, input [n][64][channels], embedding activation `act`).
std::unique_ptr<PolicyHead> make_attention_policy_head(const NetConfig& config,
                                                       const WeightStore& weights,
                                                       const std::string& prefix, int channels,
                                                       Activation act);

// Slot of each of lc0's 1858 policy moves in the attention policy block
// (from * 64 + to, or 4096 + from_file * 24 + to_file * 3 + piece for q/r/b
// promotions), generated from the rules: queen-like and knight moves in
// (from, to) order, then the promotions.
std::vector<int32_t> attention_policy_slots();

}  // namespace lc0rocm
