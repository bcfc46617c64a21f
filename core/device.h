// Device: where tensors live and compute runs — the CPU, or one CUDA GPU. A small value type;
// raw allocation goes through it, but callers allocate through MemoryTracker so every byte is
// counted.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace shardlab {

enum class DeviceKind { cpu, cuda };

struct Device {
    DeviceKind kind = DeviceKind::cpu;
    int index = 0;

    static Device cpu() { return {DeviceKind::cpu, 0}; }
    static Device cuda(int i) { return {DeviceKind::cuda, i}; }
    std::string name() const; // "cpu" or "cuda:0"
    bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
};

// Raw memory. `pinned_host` asks for page-locked host memory (cudaHostAlloc); it is ignored for
// GPU memory and falls back to plain host memory in a build without CUDA.
void* raw_allocate(const Device& d, std::size_t bytes, bool pinned_host);
void raw_free(const Device& d, void* p, bool pinned_host) noexcept;
// Copies bytes between any two places, synchronously. Host-to-host never touches CUDA.
void copy_bytes(void* dst, const Device& dst_device, const void* src, const Device& src_device,
                std::size_t bytes);

// What the CUDA runtime reports, for `shardlab device` and the GPU memory report.
struct GpuInfo {
    int index = 0;
    std::string name;
    std::size_t total_bytes = 0;
    std::size_t free_bytes = 0; // measured only when asked (0 otherwise): it needs a context
    int multiprocessors = 0;
    int cc_major = 0, cc_minor = 0;
};

struct GpuQuery {
    bool cuda_built = false; // compiled with nvcc
    std::string status;      // "ok" or why no GPU is usable, from the CUDA runtime
    std::vector<GpuInfo> gpus;
};

// Properties only, unless measure_free: free memory is known only to a context, which the query
// then creates on every GPU (the caller's current device is restored either way).
GpuQuery query_gpus(bool measure_free = false);

// The libraries the CUDA backend opens when it is made (cuBLAS, cuBLASLt), as the loader finds them
// now: their files, or why they do not load; "" in a build without CUDA. Loading takes 0.4-0.9 s
// the first time in a process, so only `shardlab device` asks.
std::string cuda_libraries();

} // namespace shardlab
