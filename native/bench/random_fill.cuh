// fill_random: deterministic values in [-scale / 2, scale / 2] for the
// benchmark programs' inputs (random data, not zeros: products on zeros run
// faster than on real data).
#pragma once
#include <cuda_fp16.h>

__global__ void fill_random(__half* p, long long n, unsigned seed, float scale) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2half(((h & 0xFFFF) / 65535.0f - 0.5f) * scale);
  }
}
