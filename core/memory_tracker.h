// MemoryTracker: every byte shardlab allocates is tagged with a category (what it is for) and an
// arena (device or host), and counted — current and peak, per category and in total — so a run
// can report exactly where its memory went and compare it with the plan model. The bytes counted
// are the bytes requested, at the moment the host allocates and releases them; underneath, each
// arena's caching allocator reuses memory in stream order, and its reserved bytes are reported
// beside the requested ones.
#pragma once

#include "core/caching_allocator.h"
#include "core/device.h"
#include "core/stream.h"

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace shardlab {

enum class Category { params, grads, master, optimizer, activations, comm_buffers, workspace };
constexpr std::size_t kNumCategories = 7;
const char* category_name(Category c); // "params", ..., "comm_buffers", "workspace"

// Device memory is the accelerator's (or, on the CPU backend, the "device" arena); host memory is
// where offload keeps optimizer state. The report's "host" row is the host arena's total.
enum class Arena { device, host };
constexpr std::size_t kNumArenas = 2;
const char* arena_name(Arena a);

struct Usage {
    std::size_t current = 0;
    std::size_t peak = 0;
};

// Usage for every (arena, category), and each arena's total (whose peak is the real high-water
// mark: the sum of per-category peaks overstates it when categories peak at different times).
struct MemoryCounts {
    std::array<std::array<Usage, kNumCategories>, kNumArenas> by_category{};
    std::array<Usage, kNumArenas> total{};
    // Host staging outside both arenas: std::vector copies on the way to and from the device
    // (initial values, consolidation) that the code declares with a HostStaging while it holds
    // them. Not in either total, so the plan comparisons stay the arenas'.
    Usage staging{};
    // The process RAM both explain together: the caching allocators' reserve of the arenas in RAM
    // (the host's; the device's too on the CPU backend) + staging, at each moment. Its peak is
    // less than the two peaks' sum where staging, once freed, is reused by later reserve.
    Usage ram{};
    const Usage& at(Arena a, Category c) const { return by_category[int(a)][int(c)]; }
};

// One phase of a run (init, forward, backward, step, ...) over all its occurrences: the peaks
// reached while it ran, and the current counts at its latest end.
struct PhaseSnapshot {
    std::string name;
    MemoryCounts counts;
};

class MemoryTracker;

// An owned, tracked allocation. Move-only; frees and uncounts itself on destruction. The memory
// is released in the order of one stream — the one it was allocated on, unless set_stream()
// names another: it must be the stream of its last use (which follows every other use).
class Allocation {
  public:
    Allocation() = default;
    Allocation(Allocation&& o) noexcept;
    Allocation& operator=(Allocation&& o) noexcept;
    Allocation(const Allocation&) = delete;
    Allocation& operator=(const Allocation&) = delete;
    ~Allocation() { release(); }

    void* data() const { return ptr_; }
    template <typename T>
    T* as() const {
        return static_cast<T*>(ptr_);
    }
    std::size_t bytes() const { return bytes_; }
    Category category() const { return category_; }
    Arena arena() const { return arena_; }
    Device device() const; // where the memory physically is
    Stream& stream() const { return *stream_; }
    void set_stream(Stream& s) { stream_ = &s; }
    void release(); // uncounted now, reusable once its stream has passed this point (idempotent)
    void release(Stream& s) { // the same, after a last use on s
        if (tracker_) stream_ = &s;
        release();
    }

  private:
    friend class MemoryTracker;
    MemoryTracker* tracker_ = nullptr;
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
    Category category_ = Category::workspace;
    Arena arena_ = Arena::device;
    Stream* stream_ = nullptr;
};

// Declares `bytes` of host staging (a std::vector the caller holds) to the tracker for its
// lifetime.
class HostStaging {
  public:
    HostStaging(MemoryTracker& t, std::size_t bytes);
    ~HostStaging();
    HostStaging(const HostStaging&) = delete;
    HostStaging& operator=(const HostStaging&) = delete;

  private:
    MemoryTracker& tracker_;
    std::size_t bytes_;
};

class MemoryTracker {
  public:
    explicit MemoryTracker(Device device);
    MemoryTracker(const MemoryTracker&) = delete;
    MemoryTracker& operator=(const MemoryTracker&) = delete;

    // Device-arena memory lives on device(); host-arena memory is host RAM, page-locked when the
    // device is a GPU (so copies to and from it can run asynchronously). The memory may be used
    // by work enqueued on `stream` from now on.
    Allocation allocate(std::size_t bytes, Category c, Stream& stream, Arena a = Arena::device);

    const Device& device() const { return device_; }
    // Whether the device arena is this process's RAM: on the CPU backend, and under the CUDA
    // emulator; a GPU's memory is not.
    bool device_in_ram() const;
    Device device_of(Arena a) const { return a == Arena::device ? device_ : Device::cpu(); }
    const MemoryCounts& counts() const { return counts_; }
    std::size_t current(Category c, Arena a = Arena::device) const {
        return counts_.at(a, c).current;
    }
    std::size_t peak(Category c, Arena a = Arena::device) const { return counts_.at(a, c).peak; }

    // Ends a phase: the peaks since the previous snapshot are folded into the named phase's (the
    // larger one stays), its current counts replaced, and the since-snapshot peaks restarted at
    // current. Phases keep the order in which they first ended.
    void snapshot(const std::string& phase_name);
    const std::vector<PhaseSnapshot>& phases() const { return phases_; }

    // The allocator under an arena: reserved bytes and raw allocations.
    CachingAllocator& allocator(Arena a) {
        return a == Arena::device ? device_alloc_ : host_alloc_;
    }
    const CachingAllocator& allocator(Arena a) const {
        return a == Arena::device ? device_alloc_ : host_alloc_;
    }

  private:
    friend class Allocation;
    friend class HostStaging;
    void stage(std::size_t bytes, bool add) noexcept;
    void update_ram() noexcept; // MemoryCounts::ram from the allocators and staging now
    void on_free(const Allocation& a) noexcept;
    void add(Arena a, Category c, std::size_t bytes);

    Device device_;
    CachingAllocator device_alloc_, host_alloc_;
    MemoryCounts counts_;
    MemoryCounts since_snapshot_; // same currents, peaks reset at each snapshot
    std::vector<PhaseSnapshot> phases_;
};

} // namespace shardlab
