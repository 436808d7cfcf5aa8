/* The batch sizes of another program's lc0-style forward passes, for
 * issue 70's "batches at least as large as lc0 forms": an LD_PRELOAD
 * library for a program linked to the shared CUDA runtime (lc0 master's
 * `cuda` backends), built and read by scripts/lc0_batches.py.
 *
 * A pass is told by its input upload: lc0's packed input is 112 planes of a
 * 64-bit mask each, copied host to device as rows x 896 bytes, then the
 * planes' values (rows x 448 or x 224 bytes); host to device means so named,
 * or cudaMemcpyDefault between host and device addresses. So:
 *  - a CUDA graph whose largest host-to-device copy node (its child graphs'
 *    included) holds rows x 896 bytes is a pass of `rows`, counted at each
 *    cudaGraphLaunch;
 *  - an asynchronous copy of rows x 896 bytes made outside stream capture,
 *    not the values copy that follows a masks copy, is the upload of a pass
 *    run without such a graph (kernels launched one by one, or a graph that
 *    holds no upload), counted at the next launch of a graph without rows,
 *    the thread's next masks upload, or the end of the program.
 * At exit the counts go to $LC0_BATCHES_OUT as lines "rows passes" (rows 0:
 * graph launches with no upload of their own or before them), written only
 * by a process that made one of these calls: a launcher script's helpers,
 * which inherit the preload, write nothing over them.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <unordered_map>
#include <vector>


enum { MASK_BYTES_PER_ROW = 112 * 8, MAX_ROWS = 8192 };

static unsigned long long passes_by_rows[MAX_ROWS + 1];
static std::unordered_map<cudaGraphExec_t, int> graph_rows_of;   /* under `lock` */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int used;                  /* this process made a call the probe watches */
static __thread int pending_rows;          /* this thread's upload whose pass is not counted yet */
static __thread size_t last_mask_bytes;    /* to tell the values copy after it */

/* The CUDA runtime's own `name` (nullptr, said once on stderr, where it has none). */
template <typename F>
static F next(const char *name) {
    used = 1;
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) fprintf(stderr, "lc0_batches: no %s in the CUDA runtime\n", name);
    return (F)f;
}

static void count_pass(int rows) {
    if (rows < 0 || rows > MAX_ROWS) rows = 0;
    pthread_mutex_lock(&lock);
    passes_by_rows[rows]++;
    pthread_mutex_unlock(&lock);
}

/* Host to device: so named, or cudaMemcpyDefault with a host source and a device destination. */
static int is_upload(enum cudaMemcpyKind kind, const void *dst, const void *src) {
    if (kind == cudaMemcpyHostToDevice) return 1;
    if (kind != cudaMemcpyDefault) return 0;
    using attributes_fn = cudaError_t (*)(cudaPointerAttributes *, const void *);
    static attributes_fn attributes = next<attributes_fn>("cudaPointerGetAttributes");
    cudaPointerAttributes from, to;
    if (!attributes || attributes(&from, src) != cudaSuccess || attributes(&to, dst) != cudaSuccess) return 0;
    return (from.type == cudaMemoryTypeHost || from.type == cudaMemoryTypeUnregistered) &&
           to.type == cudaMemoryTypeDevice;
}

static int rows_of_upload(size_t bytes) {
    return bytes > 0 && bytes % MASK_BYTES_PER_ROW == 0 ? (int)(bytes / MASK_BYTES_PER_ROW) : 0;
}

/* The largest host-to-device copy node's bytes in a graph and the graphs it holds as child nodes. */
static size_t largest_upload(cudaGraph_t graph, int depth) {
    static auto get_nodes = next<cudaError_t (*)(cudaGraph_t, cudaGraphNode_t *, size_t *)>("cudaGraphGetNodes");
    static auto get_type = next<cudaError_t (*)(cudaGraphNode_t, cudaGraphNodeType *)>("cudaGraphNodeGetType");
    static auto get_copy =
        next<cudaError_t (*)(cudaGraphNode_t, cudaMemcpy3DParms *)>("cudaGraphMemcpyNodeGetParams");
    static auto get_child = next<cudaError_t (*)(cudaGraphNode_t, cudaGraph_t *)>("cudaGraphChildGraphNodeGetGraph");
    size_t count = 0, largest = 0;
    if (!get_nodes || !get_type || !get_copy || depth > 8) return 0;
    if (get_nodes(graph, nullptr, &count) != cudaSuccess) return 0;
    std::vector<cudaGraphNode_t> nodes(count);
    if (count == 0 || get_nodes(graph, nodes.data(), &count) != cudaSuccess) return 0;
    for (size_t i = 0; i < count && i < nodes.size(); i++) {
        cudaGraphNodeType type;
        cudaMemcpy3DParms copy;
        cudaGraph_t child;
        size_t bytes = 0;
        if (get_type(nodes[i], &type) != cudaSuccess) continue;
        if (type == cudaGraphNodeTypeGraph && get_child && get_child(nodes[i], &child) == cudaSuccess)
            bytes = largest_upload(child, depth + 1);
        else if (type == cudaGraphNodeTypeMemcpy && get_copy(nodes[i], &copy) == cudaSuccess &&
                 is_upload(copy.kind, copy.dstPtr.ptr, copy.srcPtr.ptr))
            bytes = copy.extent.width * copy.extent.height * copy.extent.depth;
        if (bytes > largest) largest = bytes;
    }
    return largest;
}

static void remember_graph(cudaGraphExec_t exec, cudaGraph_t graph) {
    int rows = rows_of_upload(largest_upload(graph, 0));
    pthread_mutex_lock(&lock);
    graph_rows_of[exec] = rows;   /* a freed handle that comes back gets its new graph's */
    pthread_mutex_unlock(&lock);
}

static int graph_rows(cudaGraphExec_t exec) {
    pthread_mutex_lock(&lock);
    auto found = graph_rows_of.find(exec);
    int rows = found == graph_rows_of.end() ? 0 : found->second;
    pthread_mutex_unlock(&lock);
    return rows;
}

/* Each watched entry point (extern "C": the CUDA runtime's names): the runtime's own function,
 * found once, then the probe's count. */
typedef cudaError_t (*instantiate_fn)(cudaGraphExec_t *, cudaGraph_t, unsigned long long);
typedef cudaError_t (*launch_fn)(cudaGraphExec_t, cudaStream_t);
typedef cudaError_t (*copy_fn)(void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t);

static cudaError_t instantiate(const char *name, instantiate_fn *real, cudaGraphExec_t *exec, cudaGraph_t graph,
                               unsigned long long flags) {
    if (!*real && !(*real = next<instantiate_fn>(name))) return cudaErrorNotSupported;
    cudaError_t status = (*real)(exec, graph, flags);
    if (status == cudaSuccess) remember_graph(*exec, graph);
    return status;
}

static cudaError_t launch(const char *name, launch_fn *real, cudaGraphExec_t exec, cudaStream_t stream) {
    if (!*real && !(*real = next<launch_fn>(name))) return cudaErrorNotSupported;
    int rows = graph_rows(exec);
    if (rows == 0) {           /* its upload, if any, was made before it */
        rows = pending_rows;
        pending_rows = 0;
    }
    count_pass(rows);
    return (*real)(exec, stream);
}

static void on_copy(const void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t stream) {
    static auto capturing = next<cudaError_t (*)(cudaStream_t, cudaStreamCaptureStatus *)>("cudaStreamIsCapturing");
    if (!is_upload(kind, dst, src)) return;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (!capturing || capturing(stream, &status) != cudaSuccess || status != cudaStreamCaptureStatusNone) return;
    if (last_mask_bytes && (bytes == last_mask_bytes / 2 || bytes == last_mask_bytes / 4)) {
        last_mask_bytes = 0;   /* the planes' values after their masks */
        return;
    }
    int rows = rows_of_upload(bytes);
    if (rows == 0) return;
    if (pending_rows) count_pass(pending_rows);   /* the last upload's pass ran without a graph */
    pending_rows = rows;
    last_mask_bytes = bytes;
}

static cudaError_t copy(const char *name, copy_fn *real, void *dst, const void *src, size_t bytes,
                        enum cudaMemcpyKind kind, cudaStream_t stream) {
    if (!*real && !(*real = next<copy_fn>(name))) return cudaErrorNotSupported;
    on_copy(dst, src, bytes, kind, stream);
    return (*real)(dst, src, bytes, kind, stream);
}

extern "C" cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) {
    static instantiate_fn real;
    return instantiate("cudaGraphInstantiate", &real, exec, graph, flags);
}

extern "C" cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph,
                                                     unsigned long long flags) {
    static instantiate_fn real;
    return instantiate("cudaGraphInstantiateWithFlags", &real, exec, graph, flags);
}

extern "C" cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
    static launch_fn real;
    return launch("cudaGraphLaunch", &real, exec, stream);
}

extern "C" cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
    static launch_fn real;
    return launch("cudaGraphLaunch_ptsz", &real, exec, stream);
}

extern "C" cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                                       cudaStream_t stream) {
    static copy_fn real;
    return copy("cudaMemcpyAsync", &real, dst, src, bytes, kind, stream);
}

extern "C" cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                                 cudaStream_t stream) {
    static copy_fn real;
    return copy("cudaMemcpyAsync_ptsz", &real, dst, src, bytes, kind, stream);
}

__attribute__((destructor)) static void write_counts(void) {
    if (!used) return;
    if (pending_rows) count_pass(pending_rows);   /* the exiting thread's last pass */
    const char *path = getenv("LC0_BATCHES_OUT");
    FILE *out = path ? fopen(path, "w") : NULL;
    if (!out) {
        if (path) fprintf(stderr, "lc0_batches: cannot write %s\n", path);
        return;
    }
    for (int rows = 0; rows <= MAX_ROWS; rows++)
        if (passes_by_rows[rows]) fprintf(out, "%d %llu\n", rows, passes_by_rows[rows]);
    fclose(out);
}

