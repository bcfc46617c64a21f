// Built when nvcc was not found: every CUDA kernel says so instead of linking.
#include "core/error.h"
#include "model/kernels/cuda/cuda_kernels.h"

namespace shardlab::cuda {

namespace {
[[noreturn]] void not_built() {
    throw Error(
        "no GPU support: shardlab was built without CUDA (nvcc not found at configure time); "
        "install the CUDA toolkit and reconfigure with -DSHARDLAB_CUDA=ON");
}
} // namespace

void gelu_forward(void*, const void*, std::size_t, DType) {
    not_built();
}
void gelu_backward(void*, const void*, const void*, std::size_t, DType) {
    not_built();
}
void adamw_update_fused(float*, float*, float*, const void*, DType, void*, DType, std::size_t,
                        const AdamWConfig&, float, int, bool, float) {
    not_built();
}

} // namespace shardlab::cuda
