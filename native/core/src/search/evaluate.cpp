// evaluate.cpp - network requests of the search: encoding a leaf, one
// forward call per batch, lc0's priors (policy temperature, FastExp
// softmax, 16-bit storage, edges sorted by prior), root noise, contempt's
// rescaling of fresh values, and the NN cache's entries.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include "contempt.h"
#include "search.h"

namespace lc0core {
namespace search {
namespace {

// At least n elements, never fewer: a batch's output buffers keep the size
// of the largest batch, so a larger batch after a smaller one does not
// zero-fill what the network (or a copy) writes anyway.
template <typename T>
void grow_to(std::vector<T>* v, size_t n) {
  if (v->size() < n) v->resize(n);
}

// numpy's pairwise summation (np.add.reduce over float64), which the
// reference's softmax total goes through.
double pairwise_sum(const double* a, int n) {
  if (n < 8) {
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += a[i];
    return s;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) s += a[i];
    return s;
  }
  int n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

// Indices 0..n-1 sorted by code, highest first, ties in their given order.
// Each index rides in the low byte of a key under its code (255 - i, so the
// earlier of two equal codes has the larger key); the keys are distinct, so
// a key's place is the number of keys above it: n^2 comparisons without a
// branch, over whole blocks of 8 (zeros after the last key, below every
// key), which the compiler runs a vector at a time. An insertion sort's
// ~n^2/4 dependent moves were 8 % of a search's host instructions.
void sort_by_code(const uint16_t* codes, int* order, int n) {
  static_assert(kMaxMoves <= 256, "an index must fit the key's low byte");
  constexpr int kBlock = 8;
  int32_t keys[kMaxMoves + kBlock];    // signed: every key is below 2^24, and signed compares vectorize
  const int padded = (n + kBlock - 1) / kBlock * kBlock;
  for (int i = 0; i < n; ++i) keys[i] = int32_t(codes[i]) << 8 | (255 - i);
  for (int i = n; i < padded; ++i) keys[i] = 0;
  for (int i = 0; i < n; ++i) {
    const int32_t key = keys[i];
    int32_t above = 0;
    for (int j = 0; j < padded; ++j) above += keys[j] > key;
    order[above] = i;
  }
}

// Each request's first policy index in batch->indices, and their end: the
// offsets of the wanted-logits call (a batch's moves are in request order).
const int* request_offsets(Batch* batch) {
  const size_t n = batch->requests.size();
  batch->offsets.resize(n + 1);
  for (size_t i = 0; i < n; ++i) batch->offsets[i] = batch->requests[i].first_move;
  batch->offsets[n] = n ? batch->requests[n - 1].first_move + batch->requests[n - 1].num_moves : 0;
  return batch->offsets.data();
}

}  // namespace

void Search::add_request(PickContext& c, uint32_t node, uint64_t key, const MoveList& moves) {
  EncodedPosition encoded;
  encode(*c.history, evaluator_.input_format, &encoded);
  Batch& out = *c.out;
  Request r;
  r.node = node;
  r.key = key;
  r.first_move = int(out.moves.size());
  r.num_moves = moves.count;
  out.moves.insert(out.moves.end(), moves.moves, moves.moves + moves.count);
  out.indices.resize(out.indices.size() + size_t(moves.count));
  policy_indices(c.history->last(), moves.moves, moves.count, encoded.transform,
                 out.indices.data() + r.first_move);
  out.masks.insert(out.masks.end(), encoded.masks, encoded.masks + kNumPlanes);
  out.values.insert(out.values.end(), encoded.values, encoded.values + kNumPlanes);
  out.requests.push_back(r);
}

void Search::evaluate(Batch* batch, const EvaluatorSlot& slot) const {
  if (batch->requests.empty()) return;
  forward(batch, slot);
  prepare_priors(batch);
  // Workers fill the NN cache here, outside the tree lock (the cache has its
  // own); the deterministic modes do it when backing up, in pick order.
  if (worker_mode_) cache_results(*batch);
}

void Search::forward(Batch* batch, const EvaluatorSlot& slot) const {
  const int n = int(batch->requests.size());
  if (n == 0) return;
  const auto started = std::chrono::steady_clock::now();
  grow_to(&batch->policy, size_t(n) * kPolicySize);
  grow_to(&batch->wdl, size_t(n) * 3);
  batch->moves_left.assign(size_t(n), 0.0f);
  if (evaluator_.memo) {
    forward_with_memo(batch, slot);
  } else {
    call_network(slot, n, batch->masks.data(), batch->values.data(), batch->indices.data(),
                 slot.forward_wanted ? request_offsets(batch) : nullptr, batch->policy.data(), batch->wdl.data(),
                 batch->moves_left.data());
  }
  batch->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

void Search::forward_with_memo(Batch* batch, const EvaluatorSlot& slot) const {
  EvalMemo& memo = *evaluator_.memo;
  Batch::MemoScratch& s = batch->memo;
  const int n = int(batch->requests.size());
  s.keys.resize(size_t(n));
  s.misses.clear();
  for (int i = 0; i < n; ++i) {
    const Request& r = batch->requests[size_t(i)];
    s.keys[size_t(i)] = EvalMemo::key(batch->masks.data() + size_t(i) * kNumPlanes,
                                      batch->values.data() + size_t(i) * kNumPlanes);
    if (!memo.lookup(s.keys[size_t(i)], batch->indices.data() + r.first_move, r.num_moves,
                     batch->policy.data() + size_t(i) * kPolicySize, batch->wdl.data() + size_t(i) * 3,
                     batch->moves_left.data() + i)) {
      s.misses.push_back(i);
    }
  }
  const int m = int(s.misses.size());
  memo_hits_.fetch_add(n - m, std::memory_order_relaxed);
  if (m == 0) return;
  if (m == n) {
    call_network(slot, n, batch->masks.data(), batch->values.data(), batch->indices.data(),
                 slot.forward_wanted ? request_offsets(batch) : nullptr, batch->policy.data(), batch->wdl.data(),
                 batch->moves_left.data());
  } else {
    // The network computes the missed rows alone; their answers are copied
    // to the rows of the batch (the logits the priors read, WDL, moves left).
    grow_to(&s.masks, size_t(m) * kNumPlanes);
    grow_to(&s.values, size_t(m) * kNumPlanes);
    s.wanted.clear();
    s.offsets.resize(size_t(m) + 1);
    for (int j = 0; j < m; ++j) {
      const int i = s.misses[size_t(j)];
      const size_t from = size_t(i) * kNumPlanes, to = size_t(j) * kNumPlanes;
      std::copy_n(batch->masks.data() + from, kNumPlanes, s.masks.data() + to);
      std::copy_n(batch->values.data() + from, kNumPlanes, s.values.data() + to);
      if (!slot.forward_wanted) continue;   // whole rows come back: no wanted logits to list
      const Request& r = batch->requests[size_t(i)];
      s.offsets[size_t(j)] = int(s.wanted.size());
      s.wanted.insert(s.wanted.end(), batch->indices.begin() + r.first_move,
                      batch->indices.begin() + r.first_move + r.num_moves);
    }
    s.offsets[size_t(m)] = int(s.wanted.size());
    grow_to(&s.policy, size_t(m) * kPolicySize);
    grow_to(&s.wdl, size_t(m) * 3);
    s.moves_left.assign(size_t(m), 0.0f);
    call_network(slot, m, s.masks.data(), s.values.data(), s.wanted.data(), s.offsets.data(), s.policy.data(),
                 s.wdl.data(), s.moves_left.data());
    for (int j = 0; j < m; ++j) {
      const int i = s.misses[size_t(j)];
      const Request& r = batch->requests[size_t(i)];
      const int* indices = batch->indices.data() + r.first_move;
      const float* from = s.policy.data() + size_t(j) * kPolicySize;
      float* to = batch->policy.data() + size_t(i) * kPolicySize;
      for (int k = 0; k < r.num_moves; ++k) to[indices[k]] = from[indices[k]];
      std::copy_n(s.wdl.data() + size_t(j) * 3, 3, batch->wdl.data() + size_t(i) * 3);
      batch->moves_left[size_t(i)] = s.moves_left[size_t(j)];
    }
  }
  for (int i : s.misses) {
    const Request& r = batch->requests[size_t(i)];
    memo.put(s.keys[size_t(i)], batch->indices.data() + r.first_move, r.num_moves,
             batch->policy.data() + size_t(i) * kPolicySize, batch->wdl.data() + size_t(i) * 3,
             batch->moves_left[size_t(i)]);
  }
}

void Search::call_network(const EvaluatorSlot& slot, int n, const uint64_t* masks, const float* values,
                          const int* wanted, const int* offsets, float* policy, float* wdl,
                          float* moves_left) const {
  const int step = slot.max_batch > 0 ? slot.max_batch : n;
  for (int at = 0; at < n; at += step) {
    const int count = std::min(step, n - at);
    const uint64_t* m = masks + size_t(at) * kNumPlanes;
    const float* v = values + size_t(at) * kNumPlanes;
    float* p = policy + size_t(at) * kPolicySize;
    const int status = slot.forward_wanted
                           ? slot.forward_wanted(slot.ctx, count, m, v, wanted, offsets + at, p, wdl + size_t(at) * 3,
                                                 moves_left + at)
                           : slot.forward(slot.ctx, count, m, v, p, wdl + size_t(at) * 3, moves_left + at);
    if (status != 0) {
      throw std::runtime_error("the network's forward call failed (status " + std::to_string(status) + ")");
    }
  }
}

void Search::cache_results(const Batch& batch) const {
  for (size_t slot = 0; slot < batch.requests.size(); ++slot) cache_request(batch, slot);
}

void Search::cache_request(const Batch& batch, size_t slot) const {
  const Request& r = batch.requests[slot];
  const float* wdl = batch.wdl.data() + slot * 3;
  const Edge* edges = batch.edges.data() + r.first_move;   // sorted by prepare_priors
  Move moves[kMaxMoves];
  uint16_t codes[kMaxMoves];
  for (int i = 0; i < r.num_moves; ++i) moves[i].raw = edges[i].move, codes[i] = edges[i].prior;
  cache_->put(r.key, moves, codes, r.num_moves, double(wdl[0]) - double(wdl[2]), wdl[1],
              batch.moves_left[slot]);
}

void Search::prepare_priors(Batch* batch) const {
  // Outside the tree lock: each request's edges in their final order.
  batch->edges.resize(batch->moves.size());
  uint16_t codes[kMaxMoves];
  int order[kMaxMoves];
  for (size_t slot = 0; slot < batch->requests.size(); ++slot) {
    const Request& r = batch->requests[slot];
    priors_of(*batch, int(slot), codes, order);
    const Move* moves = batch->moves.data() + r.first_move;
    Edge* out = batch->edges.data() + r.first_move;
    for (int i = 0; i < r.num_moves; ++i) out[i] = {moves[order[i]].raw, codes[order[i]]};
  }
}

void Search::priors_of(const Batch& batch, int slot, uint16_t* codes, int* order) const {
  const Request& r = batch.requests[slot];
  const int k = r.num_moves;
  if (k == 0) return;
  const float* logits = batch.policy.data() + size_t(slot) * kPolicySize;
  const int* indices = batch.indices.data() + r.first_move;
  float values[kMaxMoves];
  double widened[kMaxMoves];
  float top = logits[indices[0]];
  for (int i = 0; i < k; ++i) {
    values[i] = logits[indices[i]];
    top = std::max(top, values[i]);
  }
  for (int i = 0; i < k; ++i) {
    values[i] = fast_exp((values[i] - top) * inv_policy_temp_);
    widened[i] = values[i];
  }
  const float total = float(pairwise_sum(widened, k));
  const float scale = total > 0 ? 1.0f / total : 1.0f;
  for (int i = 0; i < k; ++i) codes[i] = compress_prior(values[i] * scale);
  sort_by_code(codes, order, k);
}

void Search::root_noise(uint32_t node) {
  // lc0's ApplyDirichletNoise: p = (1 - eps) p + eps eta, eta ~ Dirichlet(alpha),
  // stored in 16 bits, edges re-sorted.
  Tree& tree = *tree_;
  const Node& n = tree.node(node);
  const int k = n.num_edges;
  if (k == 0) return;
  const double eps = params_.DirichletNoiseEpsilon;
  std::gamma_distribution<double> gamma(params_.DirichletNoiseAlpha, 1.0);
  std::vector<double> eta(k);
  double total = 0.0;
  for (int i = 0; i < k; ++i) total += eta[i] = gamma(rng_);
  if (total < 1.1754943508222875e-38) return;
  uint16_t codes[kMaxMoves];
  Edge edges[kMaxMoves];
  int order[kMaxMoves];
  for (int i = 0; i < k; ++i) {
    edges[i] = tree.edge(n.edges + i);
    const float p = decompress_prior(edges[i].prior) * float(1 - eps) + float(eps * eta[i] / total);
    codes[i] = compress_prior(p);
  }
  sort_by_code(codes, order, k);
  for (int i = 0; i < k; ++i) {
    tree.edge(n.edges + i) = {edges[order[i]].move, codes[order[i]]};
  }
}

void Search::set_priors(uint32_t node, const Request& r) {
  Tree& tree = *tree_;
  const uint32_t first = tree.node(node).edges;
  const Edge* sorted = batch_->edges.data() + r.first_move;
  for (int i = 0; i < r.num_moves; ++i) tree.edge(first + i) = sorted[i];
  if (node == tree.root() && params_.DirichletNoiseEpsilon != 0.0) root_noise(node);
}

void Search::set_priors_from_cache(uint32_t node, const CacheHit& entry) {
  Tree& tree = *tree_;
  const uint32_t first = tree.node(node).edges;
  for (int i = 0; i < entry.count; ++i) {
    tree.edge(first + i) = {uint16_t(entry.edges[i] & 0xFFFF), uint16_t(entry.edges[i] >> 16)};
  }
  if (node == tree.root() && params_.DirichletNoiseEpsilon != 0.0) root_noise(node);
}

void Search::cache_edges(uint32_t node, uint64_t key, double q, float d, float m) {
  const Tree& tree = *tree_;
  const Node& n = tree.node(node);
  Move moves[kMaxMoves];
  uint16_t codes[kMaxMoves];
  for (int i = 0; i < n.num_edges; ++i) {
    moves[i].raw = tree.edge(n.edges + i).move;
    codes[i] = tree.edge(n.edges + i).prior;
  }
  cache_->put(key, moves, codes, n.num_edges, q, d, m);
}

void Search::rescale(Visit* visit) const {
  // lc0's WDLRescale of a fresh NN value, signed by whose side the node's
  // value is from relative to the contempt side.
  const bool root_stm = (limits_.contempt_mode == kContemptBlack) == root_black_;
  const double sign = root_stm != bool(visit->depth & 1) ? 1.0 : -1.0;
  const double diff = limits_.contempt_mode == kContemptNone ? 0.0 : limits_.rescale_diff;
  wdl_rescale(&visit->q, &visit->d, limits_.rescale_ratio, diff, sign, false, params_.WDLMaxS);
}

}  // namespace search
}  // namespace lc0core
