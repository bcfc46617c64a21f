// CachingAllocator: raw memory for one arena (device, or host), kept and reused instead of being
// returned — and reused in stream order, as CUDA's caching allocator and cudaMallocAsync's pools
// do. A block freed on stream S at some point is
//   - handed again at once to work on S (S runs in order, so it has passed its last use), or
//   - handed to another stream T once S has passed the free point; if S has not yet, T is made to
//     wait for it (a stream-side wait, never the host), so memory never grows just because the
//     host runs ahead of the streams.
// Blocks are rounded up to 512 bytes and never split; a cached block serves a request of at least
// half its size. Called from the host thread only (tasks on worker threads never allocate).
#pragma once

#include "core/device.h"
#include "core/stream.h"

#include <cstddef>
#include <map>
#include <unordered_map>

namespace shardlab {

class CachingAllocator {
  public:
    CachingAllocator(Device device, bool pinned_host);
    ~CachingAllocator();
    CachingAllocator(const CachingAllocator&) = delete;
    CachingAllocator& operator=(const CachingAllocator&) = delete;

    // A block of at least `bytes`, safe to use on `stream` in stream order.
    void* allocate(std::size_t bytes, Stream& stream);
    // Returns p to the cache; its last use was enqueued on `stream`.
    void free(void* p, Stream& stream);

    std::size_t reserved() const { return reserved_; }           // raw bytes held now
    std::size_t peak_reserved() const { return peak_reserved_; } // most ever held
    std::size_t raw_allocations() const { return raw_allocations_; }
    // Memory some stream may still touch is leaked at destruction instead of freed (a stream
    // left running after an error).
    void leak_on_destroy() { leak_ = true; }

    static std::size_t rounded(std::size_t bytes);

  private:
    struct Cached {
        void* ptr;
        Stream* stream; // where its last use was enqueued
        EventPtr freed; // that stream's point of release
    };
    Device device_;
    bool pinned_;
    std::multimap<std::size_t, Cached> cache_;      // by block size
    std::unordered_map<void*, std::size_t> in_use_; // block sizes
    std::size_t reserved_ = 0, peak_reserved_ = 0, raw_allocations_ = 0;
    bool leak_ = false;
};

} // namespace shardlab
