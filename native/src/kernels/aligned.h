// aligned.h - the launchers' pointer-alignment checks (16-byte vector loads,
// TMA operands), in one place for every kernel file.
#pragma once
#include <cstdint>

namespace lc0rocm {

// Whether p is a multiple of `bytes` (a power of two).
inline bool aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }
inline bool aligned16(const void* p) { return aligned(p, 16); }

}  // namespace lc0rocm
