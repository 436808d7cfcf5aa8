// resnet_tower: a convolution net's whole residual tower in one launch
// (resnet_tower.h has the kernel and its design): preparing it for a net on
// a device, and running it on the layout the plan chose.
#include <cstdint>

#include "resnet_tower.h"

namespace lc0rocm {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace tower_detail {
// Two positions per block: resnet_tower_pair.hip's.
extern template void allow_shared<2, 1, 1>(size_t bytes);
extern template void launch<2, 1, 1>(hipStream_t stream, const DeviceInfo& device, const ResnetTower& tower, int n,
                                     const half* x, half* y, half* head_y, Activation act);
}  // namespace tower_detail

TowerFacts resnet_tower_prepare(const DeviceInfo& device, int blocks, int se_hidden, ResnetTower* tower) {
  using namespace tower_detail;
  TowerFacts facts;
  if (!limits::resnet_tower_fits(device, true, kC, blocks, se_hidden)) return facts;
  tower->blocks = blocks;
  tower->se_hidden = se_hidden;
  if (device.shared_per_block < variant_bytes(kSingle, *tower)) return facts;
  facts.ready = true;
  facts.split_fits = device.shared_per_block >= variant_bytes(kSplit, *tower);
  facts.pairs_fit = device.shared_per_block >= variant_bytes(kPair, *tower);
  allow_shared<1, 1, 1>(variant_bytes(kSingle, *tower));
  if (facts.split_fits) allow_shared<1, 2, 2>(variant_bytes(kSplit, *tower));
  if (facts.pairs_fit) allow_shared<2, 1, 1>(variant_bytes(kPair, *tower));
  facts.cluster_positions = tower->cluster_positions = resnet_tower_cluster_prepare(device, *tower);
  return facts;
}

void resnet_tower(hipStream_t stream, const DeviceInfo& device, const ResnetTower& tower, TowerLayout layout, int n,
                  const void* x, void* y, Activation act, void* head_y) {
  using namespace tower_detail;
  if ((reinterpret_cast<uintptr_t>(x) & 15) || (reinterpret_cast<uintptr_t>(y) & 15) ||
      (reinterpret_cast<uintptr_t>(head_y) & 15) || (reinterpret_cast<uintptr_t>(tower.layers) & 15))
    fail(LC0ROCM_INTERNAL_ERROR, "resnet_tower: misaligned buffers");
  if (head_y && (layout != TowerLayout::Pair || tower.head_w == nullptr))
    fail(LC0ROCM_INTERNAL_ERROR, "resnet_tower: no head convolution on this layout");
  if (n == 0) return;
  const half* xh = static_cast<const half*>(x);
  half* yh = static_cast<half*>(y);
  half* head = static_cast<half*>(head_y);
  switch (layout) {
    case TowerLayout::Cluster: resnet_tower_cluster(stream, tower, n, x, y, act); return;
    case TowerLayout::Pair: launch<2, 1, 1>(stream, device, tower, n, xh, yh, head, act); return;
    case TowerLayout::Split: launch<1, 2, 2>(stream, device, tower, n, xh, yh, head, act); return;
    case TowerLayout::Single: launch<1, 1, 1>(stream, device, tower, n, xh, yh, head, act); return;
    default: fail(LC0ROCM_INTERNAL_ERROR, "resnet_tower: no layout planned");
  }
}

#else  // AMD: no mma.sync; the caller keeps the per-layer path.

TowerFacts resnet_tower_prepare(const DeviceInfo&, int, int, ResnetTower*) { return TowerFacts{}; }

void resnet_tower(hipStream_t, const DeviceInfo&, const ResnetTower&, TowerLayout, int, const void*, void*, Activation,
                  void*) {
  fail(LC0ROCM_INTERNAL_ERROR, "resnet_tower: no tensor-core tower in this build");
}

#endif

}  // namespace lc0rocm
