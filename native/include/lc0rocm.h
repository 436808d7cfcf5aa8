/* lc0rocm.h - the C ABI of the lc0-rocm native GPU library.
 *
 * Rules: opaque handles, integer status codes (never a C++ exception across
 * this boundary), caller-owned buffers, a thread-local message for the last
 * error. One lc0rocm_net holds a network's weights on one device and is
 * read-only after creation; each lc0rocm_stream owns a GPU stream, a BLAS
 * handle and its own buffers, so several threads may run forward passes at
 * once, one stream per thread, with no lock between them.
 *
 * The text between LC0ROCM_CDEF_BEGIN and LC0ROCM_CDEF_END is plain C that
 * lc0_rocm/backends/native.py hands to cffi's cdef() unchanged: keep it free
 * of preprocessor lines and of anything cffi cannot parse.
 */
#ifndef LC0ROCM_H
#define LC0ROCM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LC0ROCM_CDEF_BEGIN */
enum { LC0ROCM_ABI_VERSION = 9 };

typedef enum lc0rocm_status {
  LC0ROCM_OK = 0,
  LC0ROCM_INVALID_ARGUMENT = 1, /* bad pointer, size, name or shape */
  LC0ROCM_UNSUPPORTED = 2,      /* a network kind this build cannot run */
  LC0ROCM_OUT_OF_MEMORY = 3,
  LC0ROCM_DEVICE_ERROR = 4,     /* the GPU runtime or BLAS failed */
  LC0ROCM_INTERNAL_ERROR = 5
} lc0rocm_status;

enum { LC0ROCM_VENDOR_AMD_ID = 1, LC0ROCM_VENDOR_NVIDIA_ID = 2 };
/* LINEAR16: a net file's 16-bit encoding, converted on the host while it is
 * uploaded (value = float(q) / 65535 * (hi - lo) + lo, in float, as the
 * file's reader computes it), so a caller need not decode big layers. */
enum { LC0ROCM_DTYPE_F32 = 0, LC0ROCM_DTYPE_I32 = 1, LC0ROCM_DTYPE_LINEAR16 = 2 };
enum { LC0ROCM_PRECISION_FP32 = 0, LC0ROCM_PRECISION_FP16 = 1 };

typedef struct lc0rocm_device_info {
  char name[256];
  char arch[64];         /* "gfx90a", "sm_90", ... */
  int vendor;            /* LC0ROCM_VENDOR_*_ID */
  int warp_size;         /* from the device: 64 on CDNA, 32 on RDNA/NVIDIA */
  int multiprocessors;
  int fast_fp16;         /* 1 where fp16 matrix math is faster than fp32 */
  int64_t total_memory;  /* bytes */
} lc0rocm_device_info;

/* One named weight tensor, host memory, read during lc0rocm_create only. */
typedef struct lc0rocm_tensor {
  const char* name;
  const void* data;
  int64_t count;         /* elements */
  int dtype;             /* LC0ROCM_DTYPE_* */
  float lo, hi;          /* LINEAR16's range (the Layer's min_val, max_val) */
} lc0rocm_tensor;

/* Kernel paths, as bits of lc0rocm_config's disabled and forced (the GPU
 * backends' options disable= and force=, named by these names in lower
 * case). The plan (native/src/plan/) runs each where it applies and
 * measured faster; disabled: never; forced: at every batch size or width
 * it takes. Forcing is only for paths whose use depends on the batch size
 * or width (LC0ROCM_FORCEABLE_PATHS). */
enum {
  LC0ROCM_PATH_WINOGRAD = 1 << 0,          /* Winograd F(4x4, 3x3) convolutions */
  LC0ROCM_PATH_IMPLICIT_CONV = 1 << 1,     /* implicit-GEMM tensor-core convolutions (NVIDIA) */
  LC0ROCM_PATH_FUSED_SE = 1 << 2,          /* the SE unit in one launch */
  LC0ROCM_PATH_WINOGRAD_CHAIN = 1 << 3,    /* a residual tower as one Winograd chain */
  LC0ROCM_PATH_RESNET_TOWER = 1 << 4,      /* a 64-channel residual tower in one launch (NVIDIA, half) */
  LC0ROCM_PATH_TOWER_CLUSTER = 1 << 5,     /* that tower a position per cluster of blocks (small batches) */
  LC0ROCM_PATH_TOWER_SPLIT = 1 << 6,       /* that tower with K split over two warp groups */
  LC0ROCM_PATH_TOWER_PAIRS = 1 << 7,       /* that tower two positions per block */
  LC0ROCM_PATH_TOWER_POLICY = 1 << 8,      /* the convolution policy's first layer inside that tower */
  LC0ROCM_PATH_VALUE_TAIL = 1 << 9,        /* the value head's last layer and output in one launch */
  LC0ROCM_PATH_FUSED_ATTENTION = 1 << 10,  /* an attention head's whole attention in one kernel */
  LC0ROCM_PATH_MATRIX_ATTENTION = 1 << 11, /* that kernel on matrix cores (tensor cores, MFMA, WMMA) */
  LC0ROCM_PATH_MMA_ATTENTION = 1 << 12,    /* on NVIDIA, on mma.sync fragments rather than wmma */
  LC0ROCM_PATH_QKV_ATTENTION = 1 << 13,    /* the Q|K|V product and the attention in one launch (sm_90) */
  LC0ROCM_PATH_QKV_COMPRESS = 1 << 14,     /* smolgen's compress inside the Q|K|V product */
  LC0ROCM_PATH_SMOLGEN_BESIDE = 1 << 15,   /* Q|K|V on a second stream beside smolgen */
  LC0ROCM_PATH_SMOLGEN_FIRST = 1 << 16,    /* smolgen before Q|K|V */
  LC0ROCM_PATH_SMOLGEN_GENERATE = 1 << 17, /* smolgen's second layer norm inside its generator */
  LC0ROCM_PATH_WIDE_NORM = 1 << 18,        /* smolgen's second layer norm on 256-thread blocks */
  LC0ROCM_PATH_GEMV = 1 << 19,             /* dense layers of a few rows on gemv_rows */
  LC0ROCM_PATH_SM90_GEMM = 1 << 20,        /* products with bias and activation on our sm_90 GEMM */
  LC0ROCM_PATH_SM90_LAYER_NORM = 1 << 21,  /* products with their layer norm on our sm_90 GEMM */
  LC0ROCM_PATH_TF32_SPLIT = 1 << 22        /* float products as split tf32 (3 passes, float precision) */
};
enum {
  LC0ROCM_FORCEABLE_PATHS = LC0ROCM_PATH_WINOGRAD | LC0ROCM_PATH_IMPLICIT_CONV | LC0ROCM_PATH_FUSED_SE |
                            LC0ROCM_PATH_TOWER_PAIRS | LC0ROCM_PATH_QKV_ATTENTION | LC0ROCM_PATH_SMOLGEN_BESIDE |
                            LC0ROCM_PATH_SMOLGEN_FIRST | LC0ROCM_PATH_SMOLGEN_GENERATE | LC0ROCM_PATH_WIDE_NORM |
                            LC0ROCM_PATH_GEMV | LC0ROCM_PATH_SM90_GEMM | LC0ROCM_PATH_SM90_LAYER_NORM |
                            LC0ROCM_PATH_TF32_SPLIT
};
enum { LC0ROCM_DEPENDENT_LAUNCH_AUTO = -1 };

/* A network and how to run it. Format facts: enumerations carry net.proto's
 * NetworkFormat values; activations are ActivationFunction values already
 * resolved (no ACTIVATION_DEFAULT). Settings: the GPU backends' options
 * (lc0_rocm/backends/native.py's OPTIONS gives each one's meaning and
 * default); every field must be set. */
typedef struct lc0rocm_config {
  int device;
  int precision;         /* LC0ROCM_PRECISION_* */
  int max_batch;         /* positions per GPU pass; larger calls are split */
  int network;
  int policy;
  int value;
  int moves_left;
  int input_embedding;
  int default_activation;
  int ffn_activation;
  int smolgen_activation;
  int graphs;            /* 1: passes captured into graphs and replayed; 0: never */
  int gemm_tune;         /* 1: large half products on the algorithm that timed fastest */
  int half_sums;         /* 1: the sm_90 products sum in half (as lc0's cuda backend); 0: in float */
  int side_stream;       /* 1: independent branches of a pass on a second stream */
  int dependent_launch;  /* 1 / 0: kernels as dependent launches always / never; AUTO: where they gain */
  int mapped_io;         /* passes of up to this many positions read and write pinned host memory in place */
  unsigned disabled;     /* LC0ROCM_PATH_* bits */
  unsigned forced;       /* LC0ROCM_PATH_* bits, within LC0ROCM_FORCEABLE_PATHS */
} lc0rocm_config;

typedef struct lc0rocm_net lc0rocm_net;
typedef struct lc0rocm_stream lc0rocm_stream;

int lc0rocm_abi_version(void);
const char* lc0rocm_build_info(void);
const char* lc0rocm_last_error(void);

int lc0rocm_get_device_count(int* count);
int lc0rocm_get_device_info(int device, lc0rocm_device_info* info);

int lc0rocm_create(const lc0rocm_config* config, const lc0rocm_tensor* tensors,
                   int n_tensors, lc0rocm_net** net);
void lc0rocm_destroy(lc0rocm_net* net);

int lc0rocm_stream_create(lc0rocm_net* net, lc0rocm_stream** stream);
void lc0rocm_stream_destroy(lc0rocm_stream* stream);

/* n positions in lc0's packed input: masks (n x 112, bit i = square i) and
 * values (n x 112). Outputs, float32, caller-owned: policy n x 1858 logits,
 * wdl n x 3 probabilities, moves_left n (may be NULL). */
int lc0rocm_forward(lc0rocm_stream* stream, int n, const uint64_t* masks,
                    const float* values, float* policy, float* wdl,
                    float* moves_left);
/* Same with full planes, n x 112 x 64 float32. */
int lc0rocm_forward_planes(lc0rocm_stream* stream, int n, const float* planes,
                           float* policy, float* wdl, float* moves_left);

/* How a forward of n positions on this stream runs, in words: the paths
 * the network's kernels take at the batch size the pass runs at (n padded
 * for graphs, at most max_batch). NUL-terminated, cut to size bytes. For
 * tests and diagnostics; the wording is not a stable interface. */
int lc0rocm_stream_describe(lc0rocm_stream* stream, int n, char* text, size_t size);

/* Page-locked host memory for forward inputs and outputs: an input or
 * output that lies inside such a block (anywhere in it) moves with one DMA
 * and no staging copy. Any device may use it. Free with lc0rocm_host_free
 * (INVALID_ARGUMENT for a pointer that did not come from host_alloc). */
int lc0rocm_host_alloc(size_t bytes, void** block);
int lc0rocm_host_free(void* block);

/* Pass timing, for measuring how busy a caller keeps the GPU: while a net's
 * log is on, each pass of each of its streams is timed by device events
 * from its first device operation to its last output copy, in milliseconds
 * on one timeline (since the log started); `stream` numbers the net's
 * streams in creation order. Starting clears the log. */
typedef struct lc0rocm_pass {
  float begin_ms;
  float end_ms;
  int32_t positions;
  int32_t stream;
} lc0rocm_pass;
int lc0rocm_pass_log_start(lc0rocm_net* net);
int lc0rocm_pass_log_stop(lc0rocm_net* net);
/* Copies up to capacity passes, oldest first; *count = how many there are. */
int lc0rocm_pass_log_read(lc0rocm_net* net, lc0rocm_pass* out, int capacity, int* count);
/* LC0ROCM_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* LC0ROCM_H */
