// CachingAllocator: raw memory for one arena (device, or host), kept and reused instead of being
// returned — in stream order, as CUDA's caching allocator and cudaMallocAsync's pools do. Every
// block belongs to the stream that allocated it, and comes back to that stream:
//   - at once when that stream also released it (it runs in order, so it has passed the release);
//   - when another stream released it (its last user), after that stream's release point: the
//     allocating stream is made to wait for it — a stream-side wait, never the host — so memory
//     does not grow just because the host runs ahead of the streams.
// Another stream gets the block only once it is free, and then keeps it. Streams never take each
// other's blocks that are still in use: that is what would make one stream wait for another's
// work it does not depend on. Blocks are rounded up to 512 bytes and never split; a cached block
// serves a request of at least half its size. Called from the host thread only (tasks on worker
// threads never allocate). The waits it inserts are not timed as anyone's exposed communication.
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

    // A block of at least `bytes`, safe to use on `stream` in stream order; it belongs to `stream`.
    void* allocate(std::size_t bytes, Stream& stream);
    // Returns p to the cache; its last use was enqueued on `stream`. Throws only for a pointer it
    // did not hand out: on a failed stream (recording its release point throws) the block is
    // dropped, never reused, so a destructor may free while an error unwinds.
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
        Stream* owner;                        // the stream it belongs to (allocated it)
        Stream* freed_on;                     // where its last use was enqueued
        EventPtr freed;                       // that stream's point of release
        bool free_now(const Stream& s) const; // may s use it without waiting?
    };
    struct InUse {
        std::size_t size;
        Stream* owner;
    };
    Device device_;
    bool pinned_;
    std::multimap<std::size_t, Cached> cache_; // by block size
    std::unordered_map<void*, InUse> in_use_;
    std::size_t reserved_ = 0, peak_reserved_ = 0, raw_allocations_ = 0;
    bool leak_ = false;
};

} // namespace shardlab
