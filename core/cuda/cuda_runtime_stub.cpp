// Built when the CUDA backend is not (no nvcc or no NCCL found, or -DSHARDLAB_CUDA=OFF): every
// CUDA entry point says so, clearly, instead of linking.
#include "core/cuda/cuda_runtime_api.h"
#include "core/device_context.h"
#include "core/error.h"

namespace shardlab::cuda {

void not_built() {
    throw Error(
        "no GPU support: shardlab was built without CUDA (nvcc not found at configure time); "
        "install the CUDA toolkit and reconfigure with -DSHARDLAB_CUDA=ON");
}

bool runtime_built() {
    return false;
}
bool device_memory_in_ram() {
    return false;
}
void* device_malloc(int, std::size_t) {
    not_built();
}
void device_free(int, void*) noexcept {}
void* host_malloc_pinned(std::size_t) {
    not_built();
}
void host_free_pinned(void*) noexcept {}
void copy(void*, const void*, std::size_t) {
    not_built();
}

GpuQuery query(bool) {
    GpuQuery q;
    q.status = "built without CUDA";
    return q;
}

std::string blas_libraries() {
    return "";
}

} // namespace shardlab::cuda

namespace shardlab {
std::unique_ptr<DeviceContext> make_cuda_context(int) {
    cuda::not_built();
}
} // namespace shardlab
