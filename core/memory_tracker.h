// MemoryTracker: every byte shardlab allocates is tagged with a category (what it is for) and an
// arena (device or host), and counted — current and peak, per category and in total — so a run
// can report exactly where its memory went and compare it with the plan model.
#pragma once

#include "core/device.h"

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
    const Usage& at(Arena a, Category c) const { return by_category[int(a)][int(c)]; }
};

struct PhaseSnapshot {
    std::string name;
    MemoryCounts counts; // current at the snapshot; peaks since the previous snapshot
};

class MemoryTracker;

// An owned, tracked allocation. Move-only; frees and uncounts itself on destruction.
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
    void release();        // frees now (idempotent)

  private:
    friend class MemoryTracker;
    MemoryTracker* tracker_ = nullptr;
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
    Category category_ = Category::workspace;
    Arena arena_ = Arena::device;
    bool pinned_ = false; // page-locked host memory from CUDA
};

class MemoryTracker {
  public:
    explicit MemoryTracker(Device device) : device_(device) {}
    MemoryTracker(const MemoryTracker&) = delete;
    MemoryTracker& operator=(const MemoryTracker&) = delete;

    // Device-arena memory lives on device(); host-arena memory is host RAM, page-locked when the
    // device is a GPU (so copies to and from it can run asynchronously).
    Allocation allocate(std::size_t bytes, Category c, Arena a = Arena::device);

    const Device& device() const { return device_; }
    Device device_of(Arena a) const { return a == Arena::device ? device_ : Device::cpu(); }
    const MemoryCounts& counts() const { return counts_; }
    std::size_t current(Category c, Arena a = Arena::device) const {
        return counts_.at(a, c).current;
    }
    std::size_t peak(Category c, Arena a = Arena::device) const { return counts_.at(a, c).peak; }

    // Records the current counts and the peaks since the last snapshot under a name
    // ("forward", "backward", "step"), then restarts the since-snapshot peaks at current.
    void snapshot(const std::string& phase_name);
    const std::vector<PhaseSnapshot>& snapshots() const { return snapshots_; }

  private:
    friend class Allocation;
    void on_free(const Allocation& a) noexcept;
    void add(Arena a, Category c, std::size_t bytes);

    Device device_;
    MemoryCounts counts_;
    MemoryCounts since_snapshot_; // same currents, peaks reset at each snapshot
    std::vector<PhaseSnapshot> snapshots_;
};

} // namespace shardlab
