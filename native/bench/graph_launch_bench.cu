// graph_launch_bench: the host time of one cudaGraphLaunch, and of a launch
// and its wait, for captured graphs of N trivial kernels, by the kinds of
// node a forward pass's graph holds: plain kernels, kernels with 512 bytes
// of parameters (four tensor maps), a few memsets, thread block cluster
// launches, cooperative launches, dependent launches, and kernels that
// alternate between large and small dynamic shared memory. Built and run
// by scripts/graph_launch_bench.py (NVIDIA sm_90: H100, H200).
//
// Why: a profiler's trace (CUPTI) put a launch of the forward pass's
// ~200-node graph at 230-495 us of host time; without a profiler such
// graphs launch in a few microseconds (BENCHMARKS.md, "The graph launch").
#include <cuda_runtime.h>

#include "check_cuda.cuh"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

struct Params512 {
  unsigned char bytes[512];
};

// Kernels that do nothing (the stores never happen), so a graph's time is
// its launches'.
__global__ void plain_kernel(float* p) {
  if (p && threadIdx.x > 1024) p[0] = 1.0f;
}
__global__ void params_kernel(const __grid_constant__ Params512 params, float* p) {
  if (p && threadIdx.x > 1024) p[0] = params.bytes[3];
}
__global__ void dependent_kernel(float* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  if (p && threadIdx.x > 1024) p[0] = 1.0f;
}
__global__ void shared_kernel(float* p) {
  extern __shared__ float shared[];
  if (threadIdx.x > 1024) {
    shared[0] = 1.0f;
    p[0] = shared[5];
  }
}

constexpr int kBlocks = 132, kThreads = 128, kLargeShared = 200 * 1024;

enum Kind { kPlain, kParams, kMemsets, kClusters, kCooperative, kDependent, kSharedSizes, kKinds };
const char* const kNames[kKinds] = {"plain kernels",
                                    "512-byte parameters",
                                    "a memset every 100th",
                                    "a cluster launch every 10th",
                                    "a cooperative launch every 15th",
                                    "dependent launches",
                                    "shared memory 200 KB / 1 KB in turns"};

// Node i of a graph of `kind`, launched on `stream` (which captures it).
void launch_node(Kind kind, int i, cudaStream_t stream, float* scratch) {
  cudaLaunchAttribute attribute = {};
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kBlocks);
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  switch (kind) {
    case kPlain: plain_kernel<<<kBlocks, kThreads, 0, stream>>>(nullptr); break;
    case kParams: params_kernel<<<kBlocks, kThreads, 0, stream>>>(Params512{}, nullptr); break;
    case kMemsets:
      if (i % 100 == 5) CHECK_CUDA(cudaMemsetAsync(scratch, 0, 256, stream));
      else plain_kernel<<<kBlocks, kThreads, 0, stream>>>(nullptr);
      break;
    case kClusters:
      if (i % 10 != 3) {
        plain_kernel<<<kBlocks, kThreads, 0, stream>>>(nullptr);
        break;
      }
      attribute.id = cudaLaunchAttributeClusterDimension;
      attribute.val.clusterDim.x = 2;
      attribute.val.clusterDim.y = 1;
      attribute.val.clusterDim.z = 1;
      CHECK_CUDA(cudaLaunchKernelEx(&config, plain_kernel, static_cast<float*>(nullptr)));
      break;
    case kCooperative:
      if (i % 15 != 3) {
        plain_kernel<<<kBlocks, kThreads, 0, stream>>>(nullptr);
        break;
      }
      attribute.id = cudaLaunchAttributeCooperative;
      attribute.val.cooperative = 1;
      CHECK_CUDA(cudaLaunchKernelEx(&config, plain_kernel, static_cast<float*>(nullptr)));
      break;
    case kDependent:
      attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attribute.val.programmaticStreamSerializationAllowed = 1;
      CHECK_CUDA(cudaLaunchKernelEx(&config, dependent_kernel, static_cast<float*>(nullptr)));
      break;
    case kSharedSizes:
      shared_kernel<<<kBlocks, kThreads, i % 2 ? kLargeShared : 1024, stream>>>(scratch);
      break;
    default: break;
  }
  CHECK_CUDA(cudaGetLastError());
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 200;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  if (nodes < 1 || reps < 1) {
    std::fprintf(stderr, "usage: graph_launch_bench [nodes > 0] [reps > 0]\n");
    return 2;
  }
  cudaStream_t stream;
  float* scratch;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc(&scratch, 4096));
  CHECK_CUDA(cudaFuncSetAttribute(shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kLargeShared));
  for (int k = 0; k < kKinds; ++k) {
    const Kind kind = static_cast<Kind>(k);
    cudaGraph_t graph;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nodes; ++i) launch_node(kind, i, stream, scratch);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiateWithFlags(&exec, graph, 0));
    for (int w = 0; w < 5; ++w) CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    double launch_us = 0.0, total_us = 0.0;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      CHECK_CUDA(cudaGraphLaunch(exec, stream));
      const auto t1 = std::chrono::steady_clock::now();
      CHECK_CUDA(cudaStreamSynchronize(stream));
      const auto t2 = std::chrono::steady_clock::now();
      launch_us += std::chrono::duration<double, std::micro>(t1 - t0).count();
      total_us += std::chrono::duration<double, std::micro>(t2 - t0).count();
    }
    std::printf("%-38s %4d nodes: launch %7.1f us, launch + wait %7.1f us\n", kNames[k], nodes, launch_us / reps,
                total_us / reps);
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
  }
  CHECK_CUDA(cudaFree(scratch));
  CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
