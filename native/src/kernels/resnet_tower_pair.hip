// resnet_tower (resnet_tower.h): the layout of two positions per block, its
// kernels compiled here beside resnet_tower.hip's.
#include "resnet_tower.h"

namespace lc0rocm {

#if defined(LC0ROCM_VENDOR_NVIDIA)
namespace tower_detail {

template void allow_shared<2, 1, 1>(size_t bytes);
template void launch<2, 1, 1>(hipStream_t stream, const DeviceInfo& device, const ResnetTower& tower, int n,
                              const half* x, half* y, half* head_y, Activation act);

}  // namespace tower_detail
#endif

}  // namespace lc0rocm
