// gemm_tuner.h - half-precision products whose algorithm is chosen by
// timing, once per shape class and network (native/docs/GEMM_TUNER.md).
//
// cublasGemmEx picks an algorithm by heuristic and, given a workspace, often
// a cooperative kernel that needs its counters zeroed first: a memset node
// before the kernel in every graph (78 per t82 pass at batch 256, ~5 us of
// gap each). The tuner asks blasLt for its candidates that need no
// workspace, times each on the real operands the first time a shape runs
// outside a graph capture, and runs the fastest from then on. A shape first
// met inside a capture, or with beta != 0 (timing would overwrite C), is left
// to the caller (false). Vendor names through gpu_compat.h: cuBLASLt on
// NVIDIA; on AMD (hipBLASLt) it is not built yet and never engages.
#pragma once
#include <memory>

#include "errors.h"

namespace lc0rocm {

// The algorithms chosen so far, per shape class, shared by every stream of
// one network (thread-safe). A class is a shape with its m, n and leading
// dimensions rounded up to powers of two: a search's batch sizes vary pass
// by pass, and timing each size (~100 ms a pass on t82) cost the first
// searches of a process more than the tuning gains. A class is timed once,
// at the first of its shapes met outside a capture; its other shapes take
// that choice where blasLt accepts it for them (cublasLtMatmulAlgoCheck,
// no workspace), else hipblasGemmEx's.
class GemmChoices {
 public:
  GemmChoices();
  ~GemmChoices();
  GemmChoices(const GemmChoices&) = delete;
  GemmChoices& operator=(const GemmChoices&) = delete;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

class GemmTuner {
 public:
  // For the products of `blas` (bound to `stream`, whose own choice,
  // cublasGemmEx, is one of the candidates), with the network's `choices`.
  // Null where blasLt is not built in.
  static std::unique_ptr<GemmTuner> create(hipblasHandle_t blas, hipStream_t stream,
                                           std::shared_ptr<GemmChoices> choices);
  ~GemmTuner();
  GemmTuner(const GemmTuner&) = delete;
  GemmTuner& operator=(const GemmTuner&) = delete;

  // C = alpha op_a(A) op_b(B) + beta C on half storage with float
  // accumulation, in BLAS's column-major terms (as hipblasGemmEx takes
  // them). True: done on the shape's chosen blasLt algorithm. False:
  // nothing was launched; the caller runs hipblasGemmEx (the chosen
  // candidate, or the shape is not timed).
  bool product(bool trans_a, bool trans_b, int m, int n, int k, const void* a, int lda, const void* b,
               int ldb, void* c, int ldc, float alpha, float beta);

 private:
  struct Impl;
  explicit GemmTuner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lc0rocm
