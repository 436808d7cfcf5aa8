// gpu_compat.h - the ONLY file of the native library that knows the GPU vendor.
//
// The library is written with HIP's names (hip*, hipblas*). Built by hipcc for
// AMD they are HIP itself; built by nvcc they map to the CUDA runtime and
// cuBLAS through the small table below (HIP's own NVIDIA headers do not build
// with CUDA 13, so we keep our own mapping of just the names we use).
//
// Warp width is never a literal: device code reads the built-in `warpSize`
// (64 on CDNA, 32 on RDNA and NVIDIA) and host code asks the device
// (DeviceInfo::warp_size).
#pragma once

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
// ---------------------------------------------------------------- AMD / HIP
#define LC0ROCM_VENDOR_AMD 1
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#ifndef LC0ROCM_KERNELS_ONLY
// hipBLAS 6.x takes hipDataType / hipblasComputeType_t in *GemmEx only with
// HIPBLAS_V2; 7.x does so by default.
#ifndef HIPBLAS_V2
#define HIPBLAS_V2
#endif
#include <hipblas/hipblas.h>
#endif
#define GPU_VENDOR_NAME "AMD"
#define gpu_shfl_xor(value, mask) __shfl_xor((value), (mask))
#ifndef LC0ROCM_KERNELS_ONLY
// rocBLAS manages its own workspace memory.
inline hipblasStatus_t gpu_blas_set_workspace(hipblasHandle_t, void*, size_t) {
  return HIPBLAS_STATUS_SUCCESS;
}
// LC0ROCM_HAS_BLASLT (timed algorithm choice, tensor/gemm_tuner.h) stays
// undefined: the tuner is written with hipBLASLt's names, so it slots in
// here with <hipblaslt/hipblaslt.h> and -lhipblaslt once a toolchain that
// has them is at hand (Debian's HIP 5.2 has not).
#endif

#else
// ---------------------------------------------------------------- NVIDIA / CUDA
#define LC0ROCM_VENDOR_NVIDIA 1
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#define GPU_VENDOR_NAME "NVIDIA"
#define gpu_shfl_xor(value, mask) __shfl_xor_sync(0xffffffffu, (value), (mask))

// runtime
#define hipError_t cudaError_t
#define hipSuccess cudaSuccess
#define hipErrorMemoryAllocation cudaErrorMemoryAllocation
#define hipGetErrorString cudaGetErrorString
#define hipGetLastError cudaGetLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipDeviceProp_t cudaDeviceProp
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipMemGetInfo cudaMemGetInfo
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc(ptr, size, flags) cudaMallocHost((ptr), (size))
#define hipHostMallocDefault 0
#define hipHostFree cudaFreeHost
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipStream_t cudaStream_t
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipEvent_t cudaEvent_t
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventRecord cudaEventRecord
#define hipEventDestroy cudaEventDestroy
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipGraph_t cudaGraph_t
#define hipGraphExec_t cudaGraphExec_t
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define hipStreamEndCapture cudaStreamEndCapture
#define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphDestroy cudaGraphDestroy
#define hipGraphExecDestroy cudaGraphExecDestroy
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipEventCreate cudaEventCreate
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipStreamIsCapturing cudaStreamIsCapturing
#define hipStreamCaptureStatus cudaStreamCaptureStatus
#define hipStreamCaptureStatusNone cudaStreamCaptureStatusNone

#ifndef LC0ROCM_KERNELS_ONLY
#include <cublas_v2.h>
// blas
#define hipblasHandle_t cublasHandle_t
#define hipblasStatus_t cublasStatus_t
#define HIPBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define hipblasCreate cublasCreate
#define hipblasDestroy cublasDestroy
#define hipblasSetStream cublasSetStream
#define hipblasOperation_t cublasOperation_t
#define HIPBLAS_OP_N CUBLAS_OP_N
#define HIPBLAS_OP_T CUBLAS_OP_T
#define hipblasGemmEx cublasGemmEx
#define hipblasGemmStridedBatchedEx cublasGemmStridedBatchedEx
#define hipblasComputeType_t cublasComputeType_t
#define HIPBLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define HIPBLAS_COMPUTE_32F_FAST_TF32 CUBLAS_COMPUTE_32F_FAST_TF32
#define HIPBLAS_GEMM_DEFAULT CUBLAS_GEMM_DEFAULT
#define hipDataType cudaDataType
#define HIP_R_32F CUDA_R_32F
#define HIP_R_16F CUDA_R_16F
// cuBLAS takes a caller-owned workspace (needed to capture GEMMs in graphs).
inline hipblasStatus_t gpu_blas_set_workspace(hipblasHandle_t h, void* ws, size_t bytes) {
  return cublasSetWorkspace(h, ws, bytes);
}
// blasLt (tensor/gemm_tuner.h): hipBLASLt's names for cuBLASLt.
#include <cublasLt.h>
#define LC0ROCM_HAS_BLASLT 1
#define hipblasLtHandle_t cublasLtHandle_t
#define hipblasLtCreate cublasLtCreate
#define hipblasLtDestroy cublasLtDestroy
#define hipblasLtMatmulDesc_t cublasLtMatmulDesc_t
#define hipblasLtMatmulDescCreate cublasLtMatmulDescCreate
#define hipblasLtMatmulDescDestroy cublasLtMatmulDescDestroy
#define hipblasLtMatmulDescSetAttribute cublasLtMatmulDescSetAttribute
#define HIPBLASLT_MATMUL_DESC_TRANSA CUBLASLT_MATMUL_DESC_TRANSA
#define HIPBLASLT_MATMUL_DESC_TRANSB CUBLASLT_MATMUL_DESC_TRANSB
#define hipblasLtMatrixLayout_t cublasLtMatrixLayout_t
#define hipblasLtMatrixLayoutCreate cublasLtMatrixLayoutCreate
#define hipblasLtMatrixLayoutDestroy cublasLtMatrixLayoutDestroy
#define hipblasLtMatmulPreference_t cublasLtMatmulPreference_t
#define hipblasLtMatmulPreferenceCreate cublasLtMatmulPreferenceCreate
#define hipblasLtMatmulPreferenceDestroy cublasLtMatmulPreferenceDestroy
#define hipblasLtMatmulPreferenceSetAttribute cublasLtMatmulPreferenceSetAttribute
#define HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define hipblasLtMatmulAlgo_t cublasLtMatmulAlgo_t
#define hipblasLtMatmulHeuristicResult_t cublasLtMatmulHeuristicResult_t
#define hipblasLtMatmulAlgoGetHeuristic cublasLtMatmulAlgoGetHeuristic
#define hipblasLtMatmulAlgoCheck cublasLtMatmulAlgoCheck
#define hipblasLtMatmul cublasLtMatmul
#endif
#endif

// ---------------------------------------------------------------- device features
// What the device code being compiled may use, one name per feature (as
// ggml's *_AVAILABLE): defined only in the device pass for a target that
// has the feature, so kernels test a name, never an architecture number.
// Host code asks DeviceInfo (plan/device.h) what the device it runs on has.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define LC0ROCM_DEVICE_CODE 1                 // the device pass (any GPU target)
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
#define LC0ROCM_WMMA_AVAILABLE 1              // nvcuda::wmma half tiles (tensor cores)
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define LC0ROCM_MMA_AVAILABLE 1               // mma.sync m16n8k16 on half, cp.async, ex2.f16x2
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define LC0ROCM_DEPENDENT_LAUNCH_AVAILABLE 1  // griddepcontrol: programmatic dependent launch
#define LC0ROCM_CLUSTERS_AVAILABLE 1          // thread block clusters, distributed shared memory
#define LC0ROCM_MBARRIER_AVAILABLE 1          // shared-memory transaction barriers (mbarrier)
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LC0ROCM_WGMMA_AVAILABLE 1             // sm_90a's warpgroup products (wgmma) and TMA tile copies
#endif
#if defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define LC0ROCM_MFMA_AVAILABLE 1              // CDNA's v_mfma_f32_16x16x16f16
#endif
#if defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__)
#define LC0ROCM_RDNA_WMMA_AVAILABLE 1         // RDNA 3's v_wmma_f32_16x16x16_f16
#endif
// Host and device: this build compiles the sm_90a kernels (the build's arch
// sm_90 compiles as sm_90a: lc0_rocm/backends/native_build.py), so their
// launchers are real (elsewhere they are stubs that return false).
#if defined(LC0ROCM_VENDOR_NVIDIA) && defined(LC0ROCM_SM90A)
#define LC0ROCM_SM90A_BUILD 1
#endif

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace lc0rocm {

#ifndef LC0ROCM_KERNELS_ONLY
// Whether work issued on `stream` now is captured into a graph (a failed
// question reads as capturing).
inline bool gpu_stream_capturing(hipStream_t stream) {
  hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
  return hipStreamIsCapturing(stream, &status) != hipSuccess || status != hipStreamCaptureStatusNone;
}
#endif

// ---------------------------------------------------------------- dependent launch
// On NVIDIA sm_90+ a kernel launched by gpu_launch may start before the
// kernel ahead of it in its stream has finished (programmatic dependent
// launch): its blocks load what no earlier kernel writes (weights) and then
// wait in gpu_wait_for_prior_grid() until the prior grid has completed and
// its writes are visible. At small batches, where a kernel is mostly launch
// latency and weight loads, that hides them behind the tail of the last one.
// The rule for every kernel launched by gpu_launch: call
// gpu_wait_for_prior_grid() before reading activations or writing global
// memory. gpu_release_next_grid() lets the next kernel's blocks be scheduled
// (they still wait for this grid's completion). Elsewhere (AMD, older
// NVIDIA, a pass that does not want them: see below) both are no-ops and
// gpu_launch is a plain launch.
__device__ __forceinline__ void gpu_wait_for_prior_grid() {
#if defined(LC0ROCM_DEPENDENT_LAUNCH_AVAILABLE)
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void gpu_release_next_grid() {
#if defined(LC0ROCM_DEPENDENT_LAUNCH_AVAILABLE)
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether the pass running on this thread launches dependently: set by
// DependentLaunchScope around a forward pass (network.cpp: the body's choice,
// or the dependent_launch setting, on a device with DeviceInfo::dependent_launch); kernels
// launched outside one (at network creation) launch plainly.
inline bool& gpu_dependent_launch_wanted() {
  static thread_local bool wanted = false;
  return wanted;
}

class DependentLaunchScope {
 public:
  explicit DependentLaunchScope(bool wanted) : saved_(gpu_dependent_launch_wanted()) {
    gpu_dependent_launch_wanted() = wanted;
  }
  ~DependentLaunchScope() { gpu_dependent_launch_wanted() = saved_; }
  DependentLaunchScope(const DependentLaunchScope&) = delete;
  DependentLaunchScope& operator=(const DependentLaunchScope&) = delete;

 private:
  bool saved_;
};


#ifdef LC0ROCM_VENDOR_NVIDIA
// The pieces of a cudaLaunchKernelEx call (gpu_launch, gpu_launch_cluster,
// gpu_max_active_clusters).
namespace gpu_launch_detail {
inline cudaLaunchAttribute dependent_attribute() {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}
inline cudaLaunchAttribute cluster_attribute(unsigned cluster) {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeClusterDimension;
  a.val.clusterDim.x = cluster;
  a.val.clusterDim.y = 1;
  a.val.clusterDim.z = 1;
  return a;
}
inline cudaLaunchConfig_t config(dim3 grid, dim3 block, size_t shared, hipStream_t stream,
                                 cudaLaunchAttribute* attributes, unsigned count) {
  cudaLaunchConfig_t c = {};
  c.gridDim = grid;
  c.blockDim = block;
  c.dynamicSmemBytes = shared;
  c.stream = stream;
  c.attrs = attributes;
  c.numAttrs = count;
  return c;
}
}  // namespace gpu_launch_detail
#endif

// kernel<<<grid, block, shared, stream>>>(args...), as a dependent launch
// inside a DependentLaunchScope that wants them (see above). Errors are read as after any
// launch, by GPU_CHECK_LAUNCH().
template <typename... Params, typename... Args>
inline void gpu_launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, hipStream_t stream,
                       Args&&... args) {
#ifdef LC0ROCM_VENDOR_NVIDIA
  if (gpu_dependent_launch_wanted()) {
    cudaLaunchAttribute attribute[1] = {gpu_launch_detail::dependent_attribute()};
    const cudaLaunchConfig_t config = gpu_launch_detail::config(grid, block, shared, stream, attribute, 1);
    (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
    return;
  }
  kernel<<<grid, block, shared, stream>>>(std::forward<Args>(args)...);
#else
  hipLaunchKernelGGL(kernel, grid, block, shared, stream, std::forward<Args>(args)...);
#endif
}

// ---------------------------------------------------------------- thread block clusters
// NVIDIA sm_90 on: a launch's blocks grouped in clusters that are scheduled
// together and reach each other's shared memory (distributed shared
// memory). AMD has none: DeviceInfo::clusters says no there, and the callers
// keep their other paths (the device helpers below are NVIDIA-only).
#ifdef LC0ROCM_VENDOR_NVIDIA
// This block's rank in its cluster, and its cluster's index in the grid (x).
__device__ __forceinline__ unsigned gpu_cluster_rank() {
#if defined(LC0ROCM_CLUSTERS_AVAILABLE)
  return __clusterRelativeBlockRank();
#else
  return 0;
#endif
}
__device__ __forceinline__ unsigned gpu_cluster_index() {
#if defined(LC0ROCM_CLUSTERS_AVAILABLE)
  return __clusterIdx().x;
#else
  return blockIdx.x;
#endif
}
// The address of `p` (this block's shared memory) in block `rank`'s.
template <typename T>
__device__ __forceinline__ T* gpu_cluster_map(T* p, unsigned rank) {
#if defined(LC0ROCM_CLUSTERS_AVAILABLE)
  return static_cast<T*>(__cluster_map_shared_rank(static_cast<void*>(p), rank));
#else
  (void)rank;
  return p;
#endif
}
// The cluster barrier in two halves, for work between them that touches
// only this block: arrive (release) once done with the other blocks' shared
// memory, wait (acquire) before reading theirs again or leaving (a block's
// shared memory must outlive the others' reads).
__device__ __forceinline__ void gpu_cluster_arrive() {
#if defined(LC0ROCM_CLUSTERS_AVAILABLE)
  __cluster_barrier_arrive();
#endif
}
__device__ __forceinline__ void gpu_cluster_wait() {
#if defined(LC0ROCM_CLUSTERS_AVAILABLE)
  __cluster_barrier_wait();
#endif
}
// Every thread of every block of the cluster: the writes before (to any
// block's shared memory) are seen by all after.
__device__ __forceinline__ void gpu_cluster_sync() {
  gpu_cluster_arrive();
  gpu_cluster_wait();
}

// gpu_launch with the grid's blocks in clusters of `cluster` (grid.x a
// multiple of it), dependent inside a DependentLaunchScope that wants it.
template <typename... Params, typename... Args>
inline void gpu_launch_cluster(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, hipStream_t stream,
                               unsigned cluster, Args&&... args) {
  cudaLaunchAttribute attributes[2] = {gpu_launch_detail::cluster_attribute(cluster),
                                       gpu_launch_detail::dependent_attribute()};
  const cudaLaunchConfig_t config =
      gpu_launch_detail::config(grid, block, shared, stream, attributes, gpu_dependent_launch_wanted() ? 2 : 1);
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// gpu_launch with every block of the grid resident at once (a cooperative
// launch), for kernels whose blocks wait for each other; never a dependent
// launch (a later kernel's blocks could then take the multiprocessors some
// of this grid's blocks wait for). The grid must fit the device at once.
template <typename... Params, typename... Args>
inline void gpu_launch_cooperative(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
                                   hipStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute[1] = {};
  attribute[0].id = cudaLaunchAttributeCooperative;
  attribute[0].val.cooperative = 1;
  const cudaLaunchConfig_t config = gpu_launch_detail::config(grid, block, shared, stream, attribute, 1);
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// Lets `kernel` run in clusters of more than 8 blocks (an H100 runs up to
// 16, beyond the portable 8); false where the device refuses. At network
// creation, not inside a capture.
template <typename... Params>
inline bool gpu_allow_nonportable_clusters(void (*kernel)(Params...)) {
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

// How many clusters of `cluster` blocks of this kernel (block threads,
// `shared` bytes each) the device runs at once; 0 where it runs none or
// the kernel's machine code predates clusters (built for below sm_90).
template <typename... Params>
inline int gpu_max_active_clusters(void (*kernel)(Params...), dim3 block, size_t shared, unsigned cluster) {
  cudaFuncAttributes attributes;
  if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess || attributes.binaryVersion < 90) {
    (void)cudaGetLastError();
    return 0;
  }
  cudaLaunchAttribute attribute[1] = {gpu_launch_detail::cluster_attribute(cluster)};
  const cudaLaunchConfig_t config = gpu_launch_detail::config(dim3(cluster), block, shared, nullptr, attribute, 1);
  int count = 0;
  if (cudaOccupancyMaxActiveClusters(&count, kernel, &config) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}
#endif

// Architecture name of a device ("gfx90a", "sm_90"); what it can run
// follows from it in plan/device.cpp.
inline void gpu_arch_name(const hipDeviceProp_t& prop, char* out, size_t size) {
#ifdef LC0ROCM_VENDOR_AMD
  std::snprintf(out, size, "%s", prop.gcnArchName);
  char* colon = std::strchr(out, ':');  // drop feature flags: "gfx90a:sramecc+:xnack-"
  if (colon) *colon = 0;
#else
  std::snprintf(out, size, "sm_%d%d", prop.major, prop.minor);
#endif
}

// Whether this build's NVIDIA device code is sm_90a's (LC0ROCM_SM90A: the
// build's arch sm_90 compiles as sm_90a, whose wgmma later chips lack):
// plan/device.h's DeviceInfo::wgmma. kernels/wgmma_tile.h.
#if defined(LC0ROCM_SM90A_BUILD)
constexpr bool kGpuSm90aBuild = true;
#else
constexpr bool kGpuSm90aBuild = false;
#endif

// The most shared memory (LDS) one block may use, where NVIDIA lets a
// kernel opt in to more than the 48 KB default (hipFuncSetAttribute).
inline size_t gpu_shared_per_block(const hipDeviceProp_t& prop) {
#ifdef LC0ROCM_VENDOR_AMD
  return prop.sharedMemPerBlock;
#else
  return prop.sharedMemPerBlockOptin > prop.sharedMemPerBlock ? prop.sharedMemPerBlockOptin
                                                               : prop.sharedMemPerBlock;
#endif
}

inline int gpu_vendor_id() {
#ifdef LC0ROCM_VENDOR_AMD
  return 1;
#else
  return 2;
#endif
}

// Threads per block for elementwise kernels: a multiple of every warp width.
constexpr int kBlockThreads = 256;
inline int blocks_for(long long count, int threads = kBlockThreads) {
  return static_cast<int>((count + threads - 1) / threads);
}
}  // namespace lc0rocm
