// Layer norm (attn_layer_norm.h) in float storage.
#include "attn_layer_norm.h"

namespace lc0rocm {
namespace attn {

template void layer_norm<float>(float*, const float*, const float*, const float*, const float*, const float*, int,
                                int, float, float, Activation, int, hipStream_t, int);

}  // namespace attn
}  // namespace lc0rocm
