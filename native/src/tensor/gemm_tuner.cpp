#include "gemm_tuner.h"

#include <map>
#include <mutex>
#include <tuple>


namespace lc0rocm {

#if defined(LC0ROCM_HAS_BLASLT)

namespace {
constexpr int kCandidates = 8;      // asked of blasLt's heuristic
constexpr int kLaunchesPerGraph = 5;
constexpr int kTimedReplays = 2;    // after one warm-up replay; the best counts
// Products of fewer multiply-adds keep cublasGemmEx: at t82's batch 1 and 16
// timing found nothing (H100: even), and it costs the first pass at a size
// ~130 ms (graph captures, heuristic queries). t82's Q|K|V product passes
// from batch 32 (64 rows a position).
constexpr double kTuneMinMacs = 2.0e9;

}  // namespace

// One shape: its blasLt description and the algorithm that timed fastest
// (none: hipblasGemmEx did, or no candidate ran).
struct TunedShape {
  hipblasLtMatmulDesc_t desc = nullptr;
  hipblasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  hipblasLtMatmulAlgo_t algo{};
  bool lt = false;
  TunedShape() = default;
  TunedShape(const TunedShape&) = delete;
  TunedShape& operator=(const TunedShape&) = delete;
  ~TunedShape() {
    if (c) hipblasLtMatrixLayoutDestroy(c);
    if (b) hipblasLtMatrixLayoutDestroy(b);
    if (a) hipblasLtMatrixLayoutDestroy(a);
    if (desc) hipblasLtMatmulDescDestroy(desc);
  }
};

// (trans_a, trans_b, m, n, k, lda, ldb, ldc); only beta == 0 is timed.
using ShapeKey = std::tuple<bool, bool, int, int, int, int, int, int>;

namespace {
int ceil_pow2(int x) {
  int p = 1;
  while (p < x && p < (1 << 30)) p <<= 1;
  return p;
}

// The class of a shape: m, n and the leading dimensions (which follow the
// batch where a matrix's rows do) rounded up to powers of two.
ShapeKey class_of(const ShapeKey& key) {
  bool trans_a, trans_b;
  int m, n, k, lda, ldb, ldc;
  std::tie(trans_a, trans_b, m, n, k, lda, ldb, ldc) = key;
  return ShapeKey{trans_a, trans_b, ceil_pow2(m), ceil_pow2(n), k, ceil_pow2(lda), ceil_pow2(ldb), ceil_pow2(ldc)};
}
}  // namespace

// A class's choice: blasLt's algorithm, or none (hipblasGemmEx timed fastest).
struct Choice {
  bool lt = false;
  hipblasLtMatmulAlgo_t algo{};
};

struct GemmChoices::Impl {
  std::mutex mutex;
  std::map<ShapeKey, Choice> classes;

  bool find(const ShapeKey& cls, Choice* out) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = classes.find(cls);
    if (it == classes.end()) return false;
    *out = it->second;
    return true;
  }
  void add(const ShapeKey& cls, const Choice& choice) {   // the first stream to time a class wins
    std::lock_guard<std::mutex> lock(mutex);
    classes.emplace(cls, choice);
  }
};

struct GemmTuner::Impl {
  using Key = ShapeKey;
  std::shared_ptr<GemmChoices> choices;
  hipblasHandle_t blas = nullptr;
  hipStream_t stream = nullptr;
  hipblasLtHandle_t lt = nullptr;
  hipEvent_t start = nullptr, stop = nullptr;
  std::map<Key, std::unique_ptr<TunedShape>> shapes;

  ~Impl() {
    shapes.clear();
    if (stop) hipEventDestroy(stop);
    if (start) hipEventDestroy(start);
    if (lt) hipblasLtDestroy(lt);
  }

  // GPU time of kLaunchesPerGraph runs of `launch` captured in a graph (as
  // a pass runs them: no host launch cost, memset nodes included), best of
  // kTimedReplays replays; negative when any step fails.
  template <typename Launch>
  float graph_ms(Launch&& launch) {
    hipGraph_t graph = nullptr;
    hipGraphExec_t exec = nullptr;
    float best = -1.0f;
    if (hipStreamBeginCapture(stream, hipStreamCaptureModeThreadLocal) != hipSuccess) return best;
    bool ok = true;
    for (int i = 0; i < kLaunchesPerGraph; ++i) ok = launch() && ok;
    const hipError_t end = hipStreamEndCapture(stream, &graph);
    if (ok && end == hipSuccess && graph != nullptr && hipGraphInstantiateWithFlags(&exec, graph, 0) == hipSuccess &&
        hipGraphLaunch(exec, stream) == hipSuccess) {
      for (int r = 0; r < kTimedReplays; ++r) {
        float ms = 0.0f;
        if (hipEventRecord(start, stream) != hipSuccess || hipGraphLaunch(exec, stream) != hipSuccess ||
            hipEventRecord(stop, stream) != hipSuccess || hipEventSynchronize(stop) != hipSuccess ||
            hipEventElapsedTime(&ms, start, stop) != hipSuccess) {
          best = -1.0f;
          break;
        }
        if (best < 0.0f || ms < best) best = ms;
      }
    }
    if (exec) hipGraphExecDestroy(exec);
    if (graph) hipGraphDestroy(graph);
    (void)hipGetLastError();  // a failed candidate leaves no error behind
    return best;
  }

  // The shape's blasLt description; false when blasLt refuses it.
  static bool describe(const Key& key, TunedShape* shape) {
    bool trans_a, trans_b;
    int m, n, k, lda, ldb, ldc;
    std::tie(trans_a, trans_b, m, n, k, lda, ldb, ldc) = key;
    const hipblasOperation_t op_a = trans_a ? HIPBLAS_OP_T : HIPBLAS_OP_N;
    const hipblasOperation_t op_b = trans_b ? HIPBLAS_OP_T : HIPBLAS_OP_N;
    return hipblasLtMatmulDescCreate(&shape->desc, HIPBLAS_COMPUTE_32F, HIP_R_32F) == HIPBLAS_STATUS_SUCCESS &&
           hipblasLtMatmulDescSetAttribute(shape->desc, HIPBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a) ==
               HIPBLAS_STATUS_SUCCESS &&
           hipblasLtMatmulDescSetAttribute(shape->desc, HIPBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b) ==
               HIPBLAS_STATUS_SUCCESS &&
           hipblasLtMatrixLayoutCreate(&shape->a, HIP_R_16F, trans_a ? k : m, trans_a ? m : k, lda) ==
               HIPBLAS_STATUS_SUCCESS &&
           hipblasLtMatrixLayoutCreate(&shape->b, HIP_R_16F, trans_b ? n : k, trans_b ? k : n, ldb) ==
               HIPBLAS_STATUS_SUCCESS &&
           hipblasLtMatrixLayoutCreate(&shape->c, HIP_R_16F, m, n, ldc) == HIPBLAS_STATUS_SUCCESS;
  }

  // A shape of a class already timed: the class's choice where blasLt
  // accepts it for this shape with no workspace.
  std::unique_ptr<TunedShape> adopt(const Key& key, const Choice& choice) {
    auto shape = std::make_unique<TunedShape>();
    if (!choice.lt || !describe(key, shape.get())) return shape;
    hipblasLtMatmulHeuristicResult_t check{};
    if (hipblasLtMatmulAlgoCheck(lt, shape->desc, shape->a, shape->b, shape->c, shape->c, &choice.algo, &check) ==
            HIPBLAS_STATUS_SUCCESS &&
        check.workspaceSize == 0) {
      shape->algo = choice.algo;
      shape->lt = true;
    }
    return shape;
  }

  // Times hipblasGemmEx and blasLt's candidates that need no workspace on
  // the caller's operands (beta == 0, so each run rewrites C whole).
  std::unique_ptr<TunedShape> tune(const Key& key, const void* a, const void* b, void* c) {
    auto shape = std::make_unique<TunedShape>();
    bool trans_a, trans_b;
    int m, n, k, lda, ldb, ldc;
    std::tie(trans_a, trans_b, m, n, k, lda, ldb, ldc) = key;
    const hipblasOperation_t op_a = trans_a ? HIPBLAS_OP_T : HIPBLAS_OP_N;
    const hipblasOperation_t op_b = trans_b ? HIPBLAS_OP_T : HIPBLAS_OP_N;
    const float alpha = 1.0f, beta = 0.0f;
    const float gemm_ex = graph_ms([&] {
      return hipblasGemmEx(blas, op_a, op_b, m, n, k, &alpha, a, HIP_R_16F, lda, b, HIP_R_16F, ldb, &beta, c,
                           HIP_R_16F, ldc, HIPBLAS_COMPUTE_32F, HIPBLAS_GEMM_DEFAULT) == HIPBLAS_STATUS_SUCCESS;
    });
    if (!describe(key, shape.get())) return shape;
    hipblasLtMatmulPreference_t preference = nullptr;
    if (hipblasLtMatmulPreferenceCreate(&preference) != HIPBLAS_STATUS_SUCCESS) return shape;
    // No workspace: no split products, so no counters to zero in the graph.
    const size_t workspace = 0;
    hipblasLtMatmulHeuristicResult_t found[kCandidates] = {};
    int count = 0;
    if (hipblasLtMatmulPreferenceSetAttribute(preference, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                              sizeof workspace) != HIPBLAS_STATUS_SUCCESS ||
        hipblasLtMatmulAlgoGetHeuristic(lt, shape->desc, shape->a, shape->b, shape->c, shape->c, preference,
                                        kCandidates, found, &count) != HIPBLAS_STATUS_SUCCESS)
      count = 0;
    hipblasLtMatmulPreferenceDestroy(preference);
    float best = gemm_ex;
    for (int i = 0; i < count; ++i) {
      if (found[i].state != HIPBLAS_STATUS_SUCCESS) continue;
      const float ms = graph_ms([&] {
        return hipblasLtMatmul(lt, shape->desc, &alpha, a, shape->a, b, shape->b, &beta, c, shape->c, c,
                               shape->c, &found[i].algo, nullptr, 0, stream) == HIPBLAS_STATUS_SUCCESS;
      });
      if (ms >= 0.0f && (best < 0.0f || ms < best)) {
        best = ms;
        shape->algo = found[i].algo;
        shape->lt = true;
      }
    }
    return shape;
  }
};

GemmChoices::GemmChoices() : impl(new Impl()) {}
GemmChoices::~GemmChoices() = default;

std::unique_ptr<GemmTuner> GemmTuner::create(hipblasHandle_t blas, hipStream_t stream,
                                             std::shared_ptr<GemmChoices> choices) {
  if (!choices) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->choices = std::move(choices);
  impl->blas = blas;
  impl->stream = stream;
  if (hipblasLtCreate(&impl->lt) != HIPBLAS_STATUS_SUCCESS || hipEventCreate(&impl->start) != hipSuccess ||
      hipEventCreate(&impl->stop) != hipSuccess)
    return nullptr;  // the products run on hipblasGemmEx alone
  return std::unique_ptr<GemmTuner>(new GemmTuner(std::move(impl)));
}

bool GemmTuner::product(bool trans_a, bool trans_b, int m, int n, int k, const void* a, int lda, const void* b,
                        int ldb, void* c, int ldc, float alpha, float beta) {
  if (beta != 0.0f) return false;  // blasLt's kernels may specialise beta == 0 ("bz")
  if (static_cast<double>(m) * n * k < kTuneMinMacs) return false;
  Impl& t = *impl_;
  const Impl::Key key{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  auto it = t.shapes.find(key);
  if (it == t.shapes.end()) {
    const ShapeKey cls = class_of(key);
    Choice choice;
    if (t.choices->impl->find(cls, &choice)) {
      it = t.shapes.emplace(key, t.adopt(key, choice)).first;   // no timing: allowed inside a capture
    } else {
      if (gpu_stream_capturing(t.stream)) return false;  // timed at the plain pass that precedes every capture
      std::unique_ptr<TunedShape> tuned = t.tune(key, a, b, c);
      choice.lt = tuned->lt, choice.algo = tuned->algo;
      t.choices->impl->add(cls, choice);
      it = t.shapes.emplace(key, std::move(tuned)).first;
    }
  }
  const TunedShape& s = *it->second;
  if (!s.lt) return false;
  return hipblasLtMatmul(t.lt, s.desc, &alpha, a, s.a, b, s.b, &beta, c, s.c, c, s.c, &s.algo, nullptr, 0,
                         t.stream) == HIPBLAS_STATUS_SUCCESS;
}

#else  // no blasLt in this build (AMD until hipBLASLt is at hand): never engages

struct GemmChoices::Impl {};
GemmChoices::GemmChoices() : impl(new Impl()) {}
GemmChoices::~GemmChoices() = default;

struct GemmTuner::Impl {};

std::unique_ptr<GemmTuner> GemmTuner::create(hipblasHandle_t, hipStream_t, std::shared_ptr<GemmChoices>) {
  return nullptr;
}

bool GemmTuner::product(bool, bool, int, int, int, const void*, int, const void*, int, void*, int, float, float) {
  return false;
}

#endif

GemmTuner::GemmTuner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GemmTuner::~GemmTuner() = default;

}  // namespace lc0rocm
