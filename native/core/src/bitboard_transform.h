// bitboard_transform.h - lc0's canonical board transforms on one bitboard
// and on one square (bit i = square i, a1 = 0): FLIP files, MIRROR ranks,
// TRANSPOSE across the a8-h1 diagonal, applied in that order (as
// lc0_rocm.encoder.transform_bits / transform_square).
#pragma once
#include <cstdint>

#include "encoder.h"

namespace lc0core {

// a <-> h: reverses the bits of every byte (rank).
inline uint64_t flip_files(uint64_t x) {
  x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
  x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
  x = ((x >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((x & 0x0F0F0F0F0F0F0F0FULL) << 4);
  return x;
}

// rank 1 <-> rank 8: the bytes in reverse order.
inline uint64_t mirror_ranks(uint64_t x) { return __builtin_bswap64(x); }

// Across the a1-h8 diagonal: (rank, file) -> (file, rank). Three delta swaps
// (blocks of 4x4, then 2x2, then single squares).
inline uint64_t swap_rank_file(uint64_t x) {
  uint64_t t = 0x0F0F0F0F00000000ULL & (x ^ (x << 28));
  x ^= t ^ (t >> 28);
  t = 0x3333000033330000ULL & (x ^ (x << 14));
  x ^= t ^ (t >> 14);
  t = 0x5500550055005500ULL & (x ^ (x << 7));
  x ^= t ^ (t >> 7);
  return x;
}

// Across the a8-h1 diagonal: (rank, file) -> (7 - file, 7 - rank), which is
// the a1-h8 swap followed by a half turn (both flips).
inline uint64_t transpose_anti_diagonal(uint64_t x) {
  return flip_files(mirror_ranks(swap_rank_file(x)));
}

inline uint64_t transform_bitboard(uint64_t x, int transform) {
  if (transform & kFlip) x = flip_files(x);
  if (transform & kMirror) x = mirror_ranks(x);
  if (transform & kTranspose) x = transpose_anti_diagonal(x);
  return x;
}

inline int transform_square(int square, int transform) {
  int rank = square >> 3, file = square & 7;
  if (transform & kFlip) file = 7 - file;
  if (transform & kMirror) rank = 7 - rank;
  if (transform & kTranspose) {
    const int new_rank = 7 - file;
    file = 7 - rank;
    rank = new_rank;
  }
  return rank * 8 + file;
}

}  // namespace lc0core
