// CUDA runtime behind cuda_runtime_api.h: device and pinned-host allocation, copies, and the
// device query. Every CUDA error becomes a shardlab::Error that names the call and the fix.
#include "core/cuda/cuda_runtime_api.h"
#include "core/error.h"

#include <cuda_runtime.h>
#include <string>

namespace shardlab::cuda {

namespace {
void check_cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
        throw Error(std::string(what) + " failed: " + cudaGetErrorString(e) +
                    " (check that a GPU is present: `shardlab device`)");
}
} // namespace

bool runtime_built() {
    return true;
}

bool device_memory_in_ram() {
#ifdef SHARDLAB_CUDA_EMU
    return true;
#else
    return false;
#endif
}

void* device_malloc(int device, std::size_t bytes) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
    if (e == cudaErrorMemoryAllocation)
        throw Error("out of GPU memory allocating " + std::to_string(bytes) +
                    " bytes on cuda:" + std::to_string(device) +
                    "; use a higher ZeRO stage, offload, checkpointing or a smaller micro-batch");
    check_cuda(e, "cudaMalloc");
    return p;
}

void device_free(int device, void* p) noexcept {
    cudaSetDevice(device);
    cudaFree(p);
}

void* host_malloc_pinned(std::size_t bytes) {
    void* p = nullptr;
    check_cuda(cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocDefault), "cudaHostAlloc");
    return p;
}

void host_free_pinned(void* p) noexcept {
    cudaFreeHost(p);
}

void copy(void* dst, const void* src, std::size_t bytes) {
    check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
}

// Properties need no context; cudaSetDevice and cudaMemGetInfo create one (CUDA 12+), so they run
// only when free memory is asked for, and the caller's current device is put back after.
GpuQuery query(bool measure_free) {
    GpuQuery q;
    q.cuda_built = true;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        q.status = cudaGetErrorString(e);
        cudaGetLastError(); // clear the sticky error so later calls report their own
        return q;
    }
    q.status = n > 0 ? "ok" : "no CUDA device found";
    int caller = 0;
    cudaGetDevice(&caller);
    for (int i = 0; i < n; ++i) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        GpuInfo g;
        g.index = i;
        g.name = p.name;
        g.multiprocessors = p.multiProcessorCount;
        g.cc_major = p.major;
        g.cc_minor = p.minor;
        g.total_bytes = p.totalGlobalMem;
        if (measure_free && cudaSetDevice(i) == cudaSuccess)
            cudaMemGetInfo(&g.free_bytes, &g.total_bytes);
        q.gpus.push_back(g);
    }
    if (measure_free) cudaSetDevice(caller);
    cudaGetLastError(); // a failed query leaves no error for the caller's next call
    return q;
}

} // namespace shardlab::cuda
