// The CUDA runtime as the SIMT emulator provides it (test infrastructure: never in a real CUDA
// build). With -DSHARDLAB_CUDA=EMU the backend's .cu sources are compiled by the host compiler with
// emu/include first on the include path, so `#include <cuda_runtime.h>` lands here: the kernel
// language (emu/simt.h) and the subset of the runtime API shardlab calls, with CUDA's semantics —
// device memory, pinned host memory, streams (in-order worker threads), events with timing, async
// copies, host functions, kernel launches checked against the device's limits, sticky errors.
#pragma once

#include "emu/simt.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>

// --- errors -------------------------------------------------------------------------------------

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorMisalignedAddress = 716,
    cudaErrorLaunchFailure = 719,
};
using cudaError_t = cudaError;
const char* cudaGetErrorString(cudaError_t e);
const char* cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

// --- devices ------------------------------------------------------------------------------------

struct cudaDeviceProp {
    char name[256];
    std::size_t totalGlobalMem;
    std::size_t sharedMemPerBlock;
    std::size_t sharedMemPerBlockOptin;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int multiProcessorCount;
    int major, minor;
};
cudaError_t cudaGetDeviceCount(int* count);
// The emulated device d's PCI bus id, "0000:XX:00.0": XX is the first CUDA_VISIBLE_DEVICES entry
// (default 0) plus d, so processes given different devices see different ids, as on a real node.
cudaError_t cudaDeviceGetPCIBusId(char* id, int len, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
enum cudaDeviceAttr { cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 }; // CUDA's value
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total);
cudaError_t cudaDeviceSynchronize();

// --- memory -------------------------------------------------------------------------------------

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};
enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0,
    cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2,
};
struct cudaPointerAttributes {
    cudaMemoryType type;
    int device;
    void* devicePointer;
    void* hostPointer;
};
constexpr unsigned cudaHostAllocDefault = 0;
constexpr unsigned cudaHostAllocMapped = 2;

cudaError_t cudaMalloc(void** p, std::size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaHostAlloc(void** p, std::size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p);
// Pinned memory is the device's address space too (unified addressing): the same pointer.
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned flags);

// The driver API's entry points (emu/include/cuda.h): only "cuStreamWaitValue32" is there.
enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess = 0,
    cudaDriverEntryPointSymbolNotFound = 1,
    cudaDriverEntryPointVersionNotSufficent = 2,
};
constexpr unsigned long long cudaEnableDefault = 0;
cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned version,
                                             unsigned long long flags,
                                             cudaDriverEntryPointQueryResult* status = nullptr);

// --- streams, events, copies --------------------------------------------------------------------

struct EmuStream;
struct EmuEvent;
using cudaStream_t = EmuStream*;
using cudaEvent_t = EmuEvent*;
using cudaHostFn_t = void (*)(void*);
constexpr unsigned cudaStreamDefault = 0;
constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDefault = 0;
constexpr unsigned cudaEventDisableTiming = 2;

cudaError_t cudaStreamCreate(cudaStream_t* s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags = 0);
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* user);

cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
// From pageable host memory the data is taken when the call is made (as CUDA stages it); to
// pageable host memory the call returns once the copy is done; otherwise it runs in stream order.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s = nullptr);
cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t s = nullptr);

// --- kernels ------------------------------------------------------------------------------------

enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attr, int value);

namespace shardlab::emu {
// Checks a launch against the device's limits (recording cudaErrorInvalidConfiguration for
// cudaGetLastError when it breaks one), then enqueues the grid on the stream.
bool check_launch(const char* name, const void* kernel, dim3 grid, dim3 block, std::size_t smem);
void enqueue_grid(cudaStream_t s, const char* name, dim3 grid, dim3 block, std::size_t smem,
                  std::function<void()> body);
// Runs fn on the host in s's order: how the cuBLAS and NCCL stand-ins do their work.
void enqueue(cudaStream_t s, std::function<void()> fn);
// Test support: forget a sticky fault and start over with fresh streams (the old ones must be
// gone), so one process can test several faults.
void reset_device();
// Test support: the shared memory a block may opt in to from now on (SHARDLAB_EMU_SHARED_OPTIN's
// value), so a test can run kernels as on a GPU with less; returns the previous value.
std::size_t set_shared_optin(std::size_t bytes);
// What the program asked of the device: evidence for tests that a training step launches its
// kernels and never stops the whole device (cudaDeviceSynchronize, blocking cudaMemcpy).
// mallocs: cudaMalloc and cudaHostAlloc; frees: cudaFree (which waits for the device) and
// cudaFreeHost.
struct Stats {
    std::uint64_t kernel_launches = 0, device_synchronizations = 0, blocking_copies = 0,
                  mallocs = 0, frees = 0;
    // cudaMemcpyAsync from pageable host memory: CUDA may synchronise the host with the stream to
    // stage it, so the training path makes none once warm.
    std::uint64_t pageable_uploads = 0;
    // cudaEventCreate(WithFlags): events are pooled (core/cuda/event_pool.h), so once the pool
    // holds as many as are alive at once, steps make none; event_records: cudaEventRecord calls.
    std::uint64_t event_creates = 0, event_records = 0;
};
Stats stats();
// How many devices have a context: those a cudaSetDevice or cudaMemGetInfo was made on (for the
// test that a device query creates none).
int contexts_created();
// The message of the last fault a kernel or copy reported (empty when none): what
// cudaGetErrorString cannot say — the kernel, block, threads and source line.
const char* last_fault();

template <typename... KArgs, typename... Args>
void launch(const char* name, void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem,
            cudaStream_t s, Args&&... args) {
    if (!check_launch(name, reinterpret_cast<const void*>(kernel), grid, block, smem)) return;
    // Kernel arguments are copied at launch, as CUDA does.
    auto a = std::make_tuple(KArgs(std::forward<Args>(args))...);
    enqueue_grid(s, name, grid, block, smem, [kernel, a] { std::apply(kernel, a); });
}
} // namespace shardlab::emu

// --- device math as the host has it --------------------------------------------------------------

inline float __fadd_rn(float a, float b) {
    return a + b;
}
inline float __fsub_rn(float a, float b) {
    return a - b;
}
inline float __fmul_rn(float a, float b) {
    return a * b;
}
inline float __fdiv_rn(float a, float b) {
    return a / b;
}
inline float __fsqrt_rn(float a) {
    return std::sqrt(a);
}
inline float __expf(float a) {
    return std::exp(a);
}
inline float rsqrtf(float a) {
    return 1.0f / std::sqrt(a);
}
template <typename T>
T __ldg(const T* p) {
    return *p;
}
using std::max;
using std::min;

struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
    return {x, y, z, w};
}
