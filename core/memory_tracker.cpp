// MemoryTracker bookkeeping: counts move on allocate and on Allocation's destruction.
#include "core/memory_tracker.h"

#include "core/cuda/cuda_runtime_api.h"

#include <algorithm>
#include <utility>

namespace shardlab {

const char* category_name(Category c) {
    static constexpr const char* names[] = {"params",      "grads",        "master",   "optimizer",
                                            "activations", "comm_buffers", "workspace"};
    return names[int(c)];
}

const char* arena_name(Arena a) {
    return a == Arena::device ? "device" : "host";
}

Allocation::Allocation(Allocation&& o) noexcept {
    *this = std::move(o);
}

Allocation& Allocation::operator=(Allocation&& o) noexcept {
    if (this != &o) {
        release();
        tracker_ = std::exchange(o.tracker_, nullptr);
        ptr_ = std::exchange(o.ptr_, nullptr);
        bytes_ = std::exchange(o.bytes_, 0);
        category_ = o.category_;
        arena_ = o.arena_;
        stream_ = o.stream_;
    }
    return *this;
}

Device Allocation::device() const {
    return tracker_ ? tracker_->device_of(arena_) : Device::cpu();
}

void Allocation::release() {
    if (!tracker_) return;
    tracker_->on_free(*this);
    tracker_->allocator(arena_).free(ptr_, *stream_);
    tracker_ = nullptr;
    ptr_ = nullptr;
    bytes_ = 0;
}

MemoryTracker::MemoryTracker(Device device)
    : device_(device), device_alloc_(device, false),
      host_alloc_(Device::cpu(), device.kind == DeviceKind::cuda) {}

Allocation MemoryTracker::allocate(std::size_t bytes, Category c, Stream& stream, Arena a) {
    Allocation out;
    out.ptr_ = allocator(a).allocate(bytes, stream);
    out.stream_ = &stream;
    out.tracker_ = this;
    out.bytes_ = bytes;
    out.category_ = c;
    out.arena_ = a;
    add(a, c, bytes);
    update_ram();
    return out;
}

namespace {
void bump(Usage& u, std::size_t bytes) {
    u.current += bytes;
    u.peak = std::max(u.peak, u.current);
}
void apply(MemoryCounts& m, Arena a, Category c, std::size_t bytes) {
    bump(m.by_category[int(a)][int(c)], bytes);
    bump(m.total[int(a)], bytes);
}
void remove(MemoryCounts& m, Arena a, Category c, std::size_t bytes) {
    m.by_category[int(a)][int(c)].current -= bytes;
    m.total[int(a)].current -= bytes;
}
void reset_peaks(MemoryCounts& m) {
    for (auto& arena : m.by_category)
        for (auto& u : arena) u.peak = u.current;
    for (auto& u : m.total) u.peak = u.current;
    m.staging.peak = m.staging.current;
    m.ram.peak = m.ram.current;
}
} // namespace

void MemoryTracker::add(Arena a, Category c, std::size_t bytes) {
    apply(counts_, a, c, bytes);
    apply(since_snapshot_, a, c, bytes);
}

void MemoryTracker::stage(std::size_t bytes, bool add) noexcept {
    for (MemoryCounts* m : {&counts_, &since_snapshot_}) {
        if (add)
            bump(m->staging, bytes);
        else
            m->staging.current -= bytes;
    }
    update_ram();
}

bool MemoryTracker::device_in_ram() const {
    return device_.kind == DeviceKind::cpu || cuda::device_memory_in_ram();
}

void MemoryTracker::update_ram() noexcept {
    std::size_t held = host_alloc_.reserved() + counts_.staging.current;
    if (device_in_ram()) held += device_alloc_.reserved();
    for (MemoryCounts* m : {&counts_, &since_snapshot_}) {
        m->ram.current = held;
        m->ram.peak = std::max(m->ram.peak, held);
    }
}

HostStaging::HostStaging(MemoryTracker& t, std::size_t bytes) : tracker_(t), bytes_(bytes) {
    tracker_.stage(bytes_, true);
}

HostStaging::~HostStaging() {
    tracker_.stage(bytes_, false);
}

void MemoryTracker::on_free(const Allocation& a) noexcept {
    remove(counts_, a.arena_, a.category_, a.bytes_);
    remove(since_snapshot_, a.arena_, a.category_, a.bytes_);
}

namespace {
void fold(Usage& into, const Usage& u) {
    into.current = u.current;
    into.peak = std::max(into.peak, u.peak);
}
} // namespace

void MemoryTracker::snapshot(const std::string& phase_name) {
    auto it = std::find_if(phases_.begin(), phases_.end(),
                           [&](const PhaseSnapshot& p) { return p.name == phase_name; });
    if (it == phases_.end()) {
        phases_.push_back({phase_name, since_snapshot_});
    } else {
        for (std::size_t a = 0; a < kNumArenas; ++a) {
            for (std::size_t c = 0; c < kNumCategories; ++c)
                fold(it->counts.by_category[a][c], since_snapshot_.by_category[a][c]);
            fold(it->counts.total[a], since_snapshot_.total[a]);
        }
        fold(it->counts.staging, since_snapshot_.staging);
        fold(it->counts.ram, since_snapshot_.ram);
    }
    reset_peaks(since_snapshot_);
}

} // namespace shardlab
