// A stream's wait on a word of pinned memory, through the driver's cuStreamWaitValue32.
#include "core/cuda/host_signal.h"

#include "core/cuda/cuda_check.h"

#include <cuda.h>

namespace shardlab::cuda {

namespace {
using WaitValue32 = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);

// The driver's function through the runtime (no link against libcuda, which a GPU-less build
// machine lacks); looked up once, constant afterwards. Stream memory operations are always
// available since CUDA 12 (earlier drivers needed a module parameter).
WaitValue32 wait_value32() {
    static const WaitValue32 fn = [] {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult status{};
        check_cuda(cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &p, 12000,
                                                    cudaEnableDefault, &status),
                   "cudaGetDriverEntryPointByVersion(cuStreamWaitValue32)");
        check(status == cudaDriverEntryPointSuccess && p,
              "this CUDA driver has no cuStreamWaitValue32 (stream memory operations): CUDA 12 "
              "or newer is needed");
        return reinterpret_cast<WaitValue32>(p);
    }();
    return fn;
}
} // namespace

HostSignal::HostSignal() {
    void* p = nullptr;
    check_cuda(cudaHostAlloc(&p, sizeof(std::uint32_t), cudaHostAllocMapped), "cudaHostAlloc");
    word_ = static_cast<std::uint32_t*>(p);
    *word_ = 0;
    check_cuda(cudaHostGetDevicePointer(&device_word_, p, 0), "cudaHostGetDevicePointer");
}

HostSignal::~HostSignal() {
    cudaFreeHost(word_);
}

std::uint32_t HostSignal::wait(cudaStream_t s) {
    std::uint32_t ticket = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ticket = ++issued_;
    }
    const CUresult r = wait_value32()(reinterpret_cast<CUstream>(s),
                                      reinterpret_cast<CUdeviceptr>(device_word_), ticket,
                                      CU_STREAM_WAIT_VALUE_GEQ); // cyclic: survives wraparound
    check(r == CUDA_SUCCESS,
          "cuStreamWaitValue32 failed (CUresult " + std::to_string(int(r)) + ")");
    return ticket;
}

void HostSignal::done(std::uint32_t ticket) {
    std::lock_guard<std::mutex> lock(mutex_);
    early_.insert(ticket);
    while (early_.erase(released_ + 1)) ++released_;
    // Release: what the host wrote before (staged bytes, updated parameters) is visible to the
    // device's work after the wait.
    // (A GCC builtin: nvcc compiles this file as C++17, which has no std::atomic_ref.)
    __atomic_store_n(word_, released_, __ATOMIC_RELEASE);
}

} // namespace shardlab::cuda
