// CPU side of Device: aligned host allocation. CUDA allocation lives in core/cuda/.
#include "core/device.h"

#include "core/cuda/cuda_runtime_api.h"
#include "core/error.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace shardlab {

std::string Device::name() const {
    return kind == DeviceKind::cpu ? "cpu" : "cuda:" + std::to_string(index);
}

namespace {
// 64-byte alignment: one cache line, and what AVX-512 loads like.
constexpr std::size_t kAlign = 64;

void* host_allocate(std::size_t bytes) {
    std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
    if (!p)
        throw Error("out of host memory allocating " + std::to_string(bytes) +
                    " bytes; make the job smaller: a smaller batch (train's --micro-batch, eval's "
                    "--batch), fewer ranks per node, a smaller model or ZeRO-3, or for "
                    "collectives bench and calibrate a smaller largest size (-e)");
    return p;
}
} // namespace

void* raw_allocate(const Device& d, std::size_t bytes, bool pinned_host) {
    if (d.kind == DeviceKind::cuda) return cuda::device_malloc(d.index, bytes);
    if (pinned_host && cuda::runtime_built()) return cuda::host_malloc_pinned(bytes);
    return host_allocate(bytes);
}

void raw_free(const Device& d, void* p, bool pinned_host) noexcept {
    if (!p) return;
    if (d.kind == DeviceKind::cuda) return cuda::device_free(d.index, p);
    if (pinned_host && cuda::runtime_built()) return cuda::host_free_pinned(p);
    std::free(p);
}

void copy_bytes(void* dst, const Device& dst_device, const void* src, const Device& src_device,
                std::size_t bytes) {
    if (bytes == 0) return;
    if (dst_device.kind == DeviceKind::cpu && src_device.kind == DeviceKind::cpu)
        return void(std::memcpy(dst, src, bytes));
    cuda::copy(dst, src, bytes);
}

GpuQuery query_gpus(bool measure_free) {
    return cuda::query(measure_free);
}

std::string cuda_libraries() {
    return cuda::blas_libraries();
}

} // namespace shardlab
