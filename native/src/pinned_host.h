// pinned_host.h - page-locked host memory handed to callers
// (lc0rocm_host_alloc). A forward call whose input or output lies in one of
// these blocks moves it with a single DMA, skipping the stream's staging
// copy (which, for a batch of 256, costs more host time than the copy
// engine does: fresh caller pages fault on first write).
#pragma once
#include <cstddef>

namespace lc0rocm {

// `bytes` (> 0) of pinned host memory, visible to every device (UVA).
void* pinned_alloc(size_t bytes);
// Frees a block from pinned_alloc; false for any other pointer.
bool pinned_free(void* block);
// True when [p, p + bytes) lies inside one live block from pinned_alloc.
bool is_pinned(const void* p, size_t bytes);

}  // namespace lc0rocm
