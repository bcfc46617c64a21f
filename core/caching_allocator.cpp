// The choice, among cached blocks that fit (smallest first): the requesting stream's own blocks
// (free now, else the one to wait for), then a block another stream owns that is free now, then
// fresh memory.
#include "core/caching_allocator.h"

#include "core/error.h"

#include <algorithm>

namespace shardlab {

CachingAllocator::CachingAllocator(Device device, bool pinned_host)
    : device_(device), pinned_(pinned_host) {}

CachingAllocator::~CachingAllocator() {
    if (leak_) return;
    for (auto& [size, c] : cache_) raw_free(device_, c.ptr, pinned_);
    for (auto& [ptr, b] : in_use_) raw_free(device_, ptr, pinned_); // a leak elsewhere
}

std::size_t CachingAllocator::rounded(std::size_t bytes) {
    return std::max<std::size_t>(512, (bytes + 511) / 512 * 512);
}

bool CachingAllocator::Cached::free_now(const Stream& s) const {
    return freed_on == &s || freed->query();
}

void* CachingAllocator::allocate(std::size_t bytes, Stream& stream) {
    const std::size_t size = rounded(bytes);
    auto own_now = cache_.end(), own_later = cache_.end(), other_now = cache_.end();
    for (auto it = cache_.lower_bound(size); it != cache_.end() && it->first <= 2 * size; ++it) {
        const Cached& c = it->second;
        const bool now = c.free_now(stream);
        if (c.owner == &stream && now) {
            own_now = it;
            break;
        }
        if (c.owner == &stream && own_later == cache_.end()) own_later = it;
        if (c.owner != &stream && now && other_now == cache_.end()) other_now = it;
    }
    auto pick = own_now;
    if (pick == cache_.end() && own_later != cache_.end()) {
        stream.wait(own_later->second.freed); // its last user has not let go yet: wait for it
        pick = own_later;
    }
    if (pick == cache_.end()) pick = other_now; // it becomes this stream's
    void* p = nullptr;
    std::size_t got = size;
    if (pick != cache_.end()) {
        p = pick->second.ptr;
        got = pick->first;
        cache_.erase(pick);
    } else {
        p = raw_allocate(device_, size, pinned_);
        reserved_ += size;
        peak_reserved_ = std::max(peak_reserved_, reserved_);
        ++raw_allocations_;
    }
    in_use_[p] = {got, &stream};
    return p;
}

void CachingAllocator::free(void* p, Stream& stream) {
    auto it = in_use_.find(p);
    check(it != in_use_.end(), "internal: freeing memory the caching allocator did not hand out");
    EventPtr released;
    try {
        released = stream.record_untimed();
    } catch (const std::exception&) {
        // The stream has failed (a sticky CUDA error: every call reports it). Frees run in
        // destructors, often while that error unwinds, so this one must not throw: with no point
        // that says when the block's last use ends, the block is never handed out again.
        in_use_.erase(it);
        return;
    }
    cache_.emplace(it->second.size, Cached{p, it->second.owner, &stream, std::move(released)});
    in_use_.erase(it);
}

} // namespace shardlab
