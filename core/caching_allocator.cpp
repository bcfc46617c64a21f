// Best fit among cached blocks, preferring ones that are free now over ones the requesting stream
// would have to wait for; a fresh raw block only when nothing cached fits.
#include "core/caching_allocator.h"

#include "core/error.h"

#include <algorithm>

namespace shardlab {

CachingAllocator::CachingAllocator(Device device, bool pinned_host)
    : device_(device), pinned_(pinned_host) {}

CachingAllocator::~CachingAllocator() {
    if (leak_) return;
    for (auto& [size, c] : cache_) raw_free(device_, c.ptr, pinned_);
    for (auto& [ptr, size] : in_use_) raw_free(device_, ptr, pinned_); // a leak elsewhere
}

std::size_t CachingAllocator::rounded(std::size_t bytes) {
    return std::max<std::size_t>(512, (bytes + 511) / 512 * 512);
}

void* CachingAllocator::allocate(std::size_t bytes, Stream& stream) {
    const std::size_t size = rounded(bytes);
    auto best = cache_.end(), pending = cache_.end();
    for (auto it = cache_.lower_bound(size); it != cache_.end() && it->first <= 2 * size; ++it) {
        const bool ready = it->second.stream == &stream || it->second.freed->query();
        if (ready) {
            best = it;
            break; // blocks are visited smallest first: the first ready one fits best
        }
        if (pending == cache_.end()) pending = it;
    }
    if (best == cache_.end() && pending != cache_.end()) {
        stream.wait(pending->second.freed); // reuse once the other stream has let go
        best = pending;
    }
    void* p = nullptr;
    std::size_t got = size;
    if (best != cache_.end()) {
        p = best->second.ptr;
        got = best->first;
        cache_.erase(best);
    } else {
        p = raw_allocate(device_, size, pinned_);
        reserved_ += size;
        peak_reserved_ = std::max(peak_reserved_, reserved_);
        ++raw_allocations_;
    }
    in_use_[p] = got;
    return p;
}

void CachingAllocator::free(void* p, Stream& stream) {
    auto it = in_use_.find(p);
    check(it != in_use_.end(), "internal: freeing memory the caching allocator did not hand out");
    cache_.emplace(it->second, Cached{p, &stream, stream.record()});
    in_use_.erase(it);
}

} // namespace shardlab
