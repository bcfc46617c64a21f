// Tracer: what ran when, on every stream of one rank, as Chrome/Perfetto trace events (--trace).
// Work is enqueued and runs later, so a span is two events recorded on its stream around the work
// (the stream's own clock says when it got there); host work (the offloaded optimizer) is timed on
// the host. Both are put on one time line: zero is an event recorded on the compute stream once it
// has drained, at the host moment the trace starts. Memory counters are sampled as spans
// begin. Nothing is recorded while disabled; the caller turns it on for the steps it wants.
#pragma once

#include "core/memory_tracker.h"
#include "core/stream.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

namespace shardlab {

class Tracer {
  public:
    using SpanId = std::size_t;
    static constexpr SpanId kNone = ~SpanId(0);

    // `clock` gives time zero (it is synchronized first); memory is sampled from `tracker`.
    Tracer(int rank, Stream& clock, const MemoryTracker& tracker);

    void enable(bool on) { enabled_ = on; }
    bool enabled() const { return enabled_; }

    // A span of the work enqueued on `s` between begin() and end() (kNone while disabled).
    // `cat`: "op", "model", "collective", "copy", "step".
    SpanId begin(Stream& s, std::string name, const char* cat, nlohmann::json args = {});
    void end(Stream& s, SpanId id, const nlohmann::json& more_args = {});
    // A span of work the host itself does, between the two calls, on the "host" track.
    SpanId host_begin(std::string name, const char* cat, nlohmann::json args = {});
    void host_end(SpanId id);

    // Turns the recorded events into times; call after the streams have passed them.
    void resolve();
    // This rank's trace events: process and track names, spans ("X"), memory counters ("C").
    nlohmann::json events();

  private:
    struct Span {
        std::string name;
        const char* cat;
        int track;
        nlohmann::json args;
        EventPtr begin, end;                  // stream spans
        double host_begin = 0, host_end = -1; // host spans (seconds since zero)
    };
    struct Counter {
        int track;
        EventPtr at;
        std::array<std::size_t, kNumCategories> device{}, host{};
    };
    int track_named(const std::string& name);
    void sample_memory(Stream& s, int track);
    double host_now() const;

    int rank_;
    const MemoryTracker& tracker_;
    EventPtr zero_;
    double host_zero_ = 0;
    bool enabled_ = false;
    std::vector<std::string> tracks_{"compute", "comm", "copy", "host"}; // track id - 1 -> name
    std::vector<bool> used_ = std::vector<bool>(4, false);
    std::vector<Span> spans_;
    std::vector<Counter> counters_;
    nlohmann::json done_ = nlohmann::json::array(); // resolved events
    std::size_t resolved_spans_ = 0, resolved_counters_ = 0;
    std::array<std::size_t, kNumCategories> last_device_{}, last_host_{};
    bool sampled_ = false;
};

// Begin here, end at the end of the scope; nothing when `t` is null or disabled.
class TraceScope {
  public:
    TraceScope(Tracer* t, Stream& s, std::string name, const char* cat, nlohmann::json args = {})
        : t_(t && t->enabled() ? t : nullptr), s_(s),
          id_(t_ ? t_->begin(s, std::move(name), cat, std::move(args)) : Tracer::kNone) {}
    // Never throws: while unwinding (or if recording fails, e.g. a CUDA error) the span stays open
    // and is left out of the trace; the error that matters is reported elsewhere.
    ~TraceScope() {
        if (!t_ || std::uncaught_exceptions() > 0) return;
        try {
            t_->end(s_, id_);
        } catch (const std::exception&) {
        }
    }
    TraceScope(const TraceScope&) = delete;
    TraceScope& operator=(const TraceScope&) = delete;

  private:
    Tracer* t_;
    Stream& s_;
    Tracer::SpanId id_;
};

} // namespace shardlab
