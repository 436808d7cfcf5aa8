#!/usr/bin/env bash
# Compile checks of the native GPU library (and the chess core) on a machine without a GPU.
#
# AMD:    every kernel file (native/src/**/*.hip) with Debian's hipcc for a
#         wave32 (gfx1030) and two wave64 targets (gfx90a, and gfx940 for the
#         MI300 family: Debian's HIP 5.2 knows no gfx942), device code and the
#         HIP runtime only (-DLC0ROCM_KERNELS_ONLY). Debian 12 ships no
#         rocBLAS/hipBLAS/MIOpen, so host code that needs hipBLAS is NOT
#         compiled for AMD here; it is checked through the same vendor header
#         (native/src/gpu_compat.h) by the nvcc pass below.
#         Also RDNA3 (gfx1100, wave32), device code only: Debian ships no
#         device library for it, so the kernels are compiled to assembly
#         with their calls into that library (exp, fmax, ...) left unresolved.
# NVIDIA: the whole library (every .cpp and .hip) with nvcc for sm_90a (as
#         the build compiles sm_90: lc0_rocm/backends/native_build.py) and a
#         shared-library link. cuBLAS headers come from the CUDA install, a pip
#         nvidia-cublas package, or are fetched once into ~/.cache (pip).
#         Also the benchmarks in native/bench (compiled, not linked). ptxas
#         remarks that wgmma is serialized or waited for fail the check.
# Either compiler missing: that half is skipped with a message; both missing
# fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=native/src
JOBS=${JOBS:-$(nproc)}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
ran=0

if command -v hipcc >/dev/null; then
  echo "-- AMD: hipcc $(hipcc --version 2>/dev/null | grep -m1 -o 'HIP version: [0-9.]*' || true), gfx1030 + gfx90a + gfx940, kernels"
  find "$SRC" -name '*.hip' -print0 | sort -z | xargs -0 -P "$JOBS" -I{} sh -c '
    f="$1"; o="$2/amd_$(echo "$f" | tr / _).o"
    HIP_PLATFORM=amd hipcc --offload-arch=gfx1030 --offload-arch=gfx90a --offload-arch=gfx940 -std=c++17 -O2 -fPIC \
      -DLC0ROCM_KERNELS_ONLY -c "$f" -o "$o" || { echo "FAILED (amd): $f"; exit 255; }' _ {} "$OUT"
  echo "   $(find "$SRC" -name '*.hip' | wc -l) kernel files OK"
  echo "-- AMD: gfx1100 (RDNA3), device code only (no device library for it here)"
  find "$SRC" -name '*.hip' -print0 | sort -z | xargs -0 -P "$JOBS" -I{} sh -c '
    f="$1"; o="$2/amd_gfx1100_$(echo "$f" | tr / _).s"
    HIP_PLATFORM=amd hipcc --offload-arch=gfx1100 -nogpulib --cuda-device-only -S -std=c++17 -O2 \
      -DLC0ROCM_KERNELS_ONLY "$f" -o "$o" 2>"$o.log" || { cat "$o.log"; echo "FAILED (amd gfx1100): $f"; exit 255; }' _ {} "$OUT"
  echo "   $(find "$SRC" -name '*.hip' | wc -l) kernel files OK"
  ran=1
else
  echo "-- AMD: hipcc not found, skipped (apt-get install hipcc libamdhip64-dev rocm-device-libs)"
fi

find_cublas_include() {
  for d in "${CUDA_HOME:-/usr/local/cuda}/include" /usr/local/cuda/include \
           "$HOME/.cache/lc0-rocm/cublas-headers/nvidia/cu13/include"; do
    [ -f "$d/cublas_v2.h" ] && { echo "$d"; return 0; }
  done
  python3 - <<'PY' 2>/dev/null && return 0
import pathlib, nvidia, sys
for base in nvidia.__path__:
    for inc in pathlib.Path(base).glob("*/include"):
        if (inc / "cublas_v2.h").is_file():
            print(inc); sys.exit(0)
sys.exit(1)
PY
  local cache="$HOME/.cache/lc0-rocm/cublas-headers"
  echo "   fetching cuBLAS headers (pip nvidia-cublas) into $cache" >&2
  mkdir -p "$cache"
  python3 -m pip download -q --no-deps 'nvidia-cublas>=13.0,<13.1' -d "$cache/whl" >&2
  # headers only (the wheel also holds ~600 MB of libraries we do not need here)
  python3 - "$cache" <<'PY' >&2
import glob, sys, zipfile
cache = sys.argv[1]
with zipfile.ZipFile(glob.glob(f"{cache}/whl/nvidia_cublas-*.whl")[0]) as whl:
    whl.extractall(cache, [m for m in whl.namelist() if m.startswith("nvidia/cu13/include/")])
PY
  rm -rf "$cache/whl"
  echo "$cache/nvidia/cu13/include"
}

if command -v nvcc >/dev/null; then
  CUBLAS_INC=$(find_cublas_include)
  echo "-- NVIDIA: $(nvcc --version | tail -1), sm_90a, whole library (cuBLAS headers: $CUBLAS_INC)"
  find "$SRC" \( -name '*.hip' -o -name '*.cpp' \) -print0 | sort -z | xargs -0 -P "$JOBS" -I{} sh -c '
    f="$1"; o="$2/nv_$(echo "$f" | tr / _).o"
    nvcc -x cu -gencode arch=compute_90a,code=sm_90a -DLC0ROCM_SM90A -std=c++17 -O2 -Xcompiler -fPIC -Xptxas -v -I"$3" -c "$f" -o "$o" \
      2>"$o.log" || { cat "$o.log"; echo "FAILED (nvidia): $f"; exit 255; }' _ {} "$OUT" "$CUBLAS_INC"
  # ptxas's remarks that wgmma runs serialized, or that it had to wait for
  # one, cost a whole kernel silently (run 91: +26 % from one loop count it
  # could not prove uniform): they fail here, not on a GPU.
  remarks=$(grep -H -E 'C75[0-9]{2}|Potential Performance Loss|warpgroup\.wait is injected' "$OUT"/nv_*.o.log || true)
  if [ -n "$remarks" ]; then echo "$remarks"; echo "FAILED (nvidia): ptxas serializes or waits for wgmma (above)"; exit 1; fi
  # Link without cuBLAS's library (headers only here): undefined cuBLAS symbols
  # are allowed in a shared library; everything of ours must resolve.
  nvcc -shared -o "$OUT/liblc0rocm.so" "$OUT"/nv_*.o
  undefined=$(nm -D --undefined-only "$OUT/liblc0rocm.so" | awk '{print $2}' | grep -E 'lc0rocm' || true)
  if [ -n "$undefined" ]; then echo "FAILED: unresolved library symbols: $undefined"; exit 1; fi
  echo "   $(ls "$OUT"/nv_*.o | wc -l) files OK, liblc0rocm.so linked"
  # The product benchmark (scripts/gemm_sm90_bench.py) compiles the library's
  # gemm_sm90 source into a program of its own: compiled here too, not linked.
  nvcc -x cu -gencode arch=compute_90a,code=sm_90a -DLC0ROCM_SM90A -std=c++17 -O2 -I"$SRC" -Inative/include -I"$CUBLAS_INC" \
    -c native/bench/gemm_sm90_bench.cu -o "$OUT/gemm_sm90_bench.o" || { echo "FAILED (nvidia): native/bench"; exit 1; }
  # The program links the library's sources it includes, not the library:
  # every symbol of ours must be defined in it (490cb8e moved the tensor
  # maps to a file of their own, and the program stopped linking unseen).
  undefined=$(nm -C --undefined-only "$OUT/gemm_sm90_bench.o" | grep -E 'lc0rocm' || true)
  if [ -n "$undefined" ]; then echo "FAILED: native/bench/gemm_sm90_bench.cu leaves undefined: $undefined"; exit 1; fi
  echo "   native/bench/gemm_sm90_bench.cu OK"
  nvcc -x cu -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 -c native/bench/graph_launch_bench.cu -o "$OUT/graph_launch_bench.o" \
    || { echo "FAILED (nvidia): native/bench/graph_launch_bench.cu"; exit 1; }
  echo "   native/bench/graph_launch_bench.cu OK"
  nvcc -x cu -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 -I"$CUBLAS_INC" -c native/bench/energy_floor_bench.cu -o "$OUT/energy_floor_bench.o" \
    || { echo "FAILED (nvidia): native/bench/energy_floor_bench.cu"; exit 1; }
  echo "   native/bench/energy_floor_bench.cu OK"
  nvcc -x cu -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 -I"$CUBLAS_INC" -c native/bench/matrix_rate_bench.cu -o "$OUT/matrix_rate_bench.o" \
    || { echo "FAILED (nvidia): native/bench/matrix_rate_bench.cu"; exit 1; }
  echo "   native/bench/matrix_rate_bench.cu OK"
  ran=1
else
  echo "-- NVIDIA: nvcc not found, skipped"
fi

[ "$ran" = 1 ] || { echo "FAILED: neither hipcc nor nvcc is installed"; exit 1; }

# The chess core (native/core) needs only a C++ compiler; the tests build and
# run it. Here: warnings are errors, so a new warning fails CI, not a user.
CXX=${CXX:-c++}
echo "-- core: $CXX -std=c++17 -Wall -Wextra -Wshadow -Werror"
find native/core/src -name '*.cpp' -print0 | sort -z | xargs -0 -P "$JOBS" -I{} sh -c '
  "$1" -std=c++17 -Wall -Wextra -Wshadow -Werror -fsyntax-only -Inative/core/include "$2" \
    || { echo "FAILED (core): $2"; exit 255; }' _ "$CXX" {}
echo "   $(find native/core/src -name '*.cpp' | wc -l) core files OK"
echo "native compile checks passed"
