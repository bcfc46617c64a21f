// Spans as event pairs, resolved into Chrome trace events once the streams have run them.
#include "core/tracer.h"

#include "core/error.h"
#include "core/timer.h"

#include <algorithm>

namespace shardlab {

namespace {
// Chrome's trace format counts microseconds.
double micros(double seconds) {
    return seconds * 1e6;
}

nlohmann::json counter_event(const char* name, int rank, double ts,
                             const std::array<std::size_t, kNumCategories>& bytes) {
    nlohmann::json args;
    for (std::size_t c = 0; c < kNumCategories; ++c)
        args[category_name(Category(c))] = double(bytes[c]) / 1e6;
    return {{"name", name}, {"ph", "C"}, {"ts", ts}, {"pid", rank}, {"args", args}};
}
} // namespace

Tracer::Tracer(int rank, Stream& clock, const MemoryTracker& tracker)
    : rank_(rank), tracker_(tracker) {
    clock.synchronize();
    const double before = now_seconds();
    zero_ = clock.record();
    zero_->synchronize();
    host_zero_ = (before + now_seconds()) / 2; // the idle stream reached the mark in between
}

double Tracer::host_now() const {
    return now_seconds() - host_zero_;
}

// Tracks in a fixed order whatever is used first; another stream's name gets a track of its own.
int Tracer::track_named(const std::string& name) {
    std::size_t i = 0;
    while (i < tracks_.size() && tracks_[i] != name) ++i;
    if (i == tracks_.size()) tracks_.push_back(name), used_.push_back(false);
    used_[i] = true;
    return int(i) + 1;
}

// A counter sample at this point of `s`, when the tracked bytes changed since the last one.
void Tracer::sample_memory(Stream& s, int track) {
    Counter c{track, nullptr, {}, {}};
    for (std::size_t k = 0; k < kNumCategories; ++k) {
        c.device[k] = tracker_.current(Category(k), Arena::device);
        c.host[k] = tracker_.current(Category(k), Arena::host);
    }
    if (sampled_ && c.device == last_device_ && c.host == last_host_) return;
    sampled_ = true, last_device_ = c.device, last_host_ = c.host;
    c.at = s.record();
    counters_.push_back(std::move(c));
}

Tracer::SpanId Tracer::begin(Stream& s, std::string name, const char* cat, nlohmann::json args) {
    if (!enabled_) return kNone;
    const int track = track_named(s.name());
    sample_memory(s, track);
    spans_.push_back({std::move(name), cat, track, std::move(args), s.record(), nullptr});
    return spans_.size() - 1;
}

void Tracer::end(Stream& s, SpanId id, const nlohmann::json& more_args) {
    if (id == kNone) return;
    check(id < spans_.size() && !spans_[id].end, "internal: ending a trace span twice");
    spans_[id].end = s.record();
    if (more_args.is_object()) spans_[id].args.update(more_args);
}

Tracer::SpanId Tracer::host_begin(std::string name, const char* cat, nlohmann::json args) {
    if (!enabled_) return kNone;
    spans_.push_back({std::move(name), cat, track_named("host"), std::move(args), nullptr, nullptr,
                      host_now(), -1});
    return spans_.size() - 1;
}

void Tracer::host_end(SpanId id) {
    if (id == kNone) return;
    spans_[id].host_end = host_now();
}

void Tracer::resolve() {
    for (; resolved_spans_ < spans_.size(); ++resolved_spans_) {
        Span& sp = spans_[resolved_spans_];
        double t0 = sp.host_begin, t1 = sp.host_end;
        if (sp.begin) {
            if (!sp.end || !sp.end->query() || !sp.begin->query()) break; // not run yet
            t0 = sp.begin->seconds_since(*zero_);
            t1 = sp.end->seconds_since(*zero_);
        } else if (t1 < 0) {
            break; // a host span still open
        }
        nlohmann::json e = {{"name", sp.name},  {"cat", sp.cat},          {"ph", "X"},
                            {"ts", micros(t0)}, {"dur", micros(t1 - t0)}, {"pid", rank_},
                            {"tid", sp.track}};
        if (!sp.args.is_null()) e["args"] = std::move(sp.args);
        done_.push_back(std::move(e));
        sp.begin.reset(), sp.end.reset(); // events are device resources on a GPU
    }
    for (; resolved_counters_ < counters_.size(); ++resolved_counters_) {
        Counter& c = counters_[resolved_counters_];
        if (!c.at->query()) break;
        const double ts = micros(c.at->seconds_since(*zero_));
        done_.push_back(counter_event("device memory (MB)", rank_, ts, c.device));
        if (std::any_of(c.host.begin(), c.host.end(), [](std::size_t b) { return b > 0; }))
            done_.push_back(counter_event("host memory (MB)", rank_, ts, c.host));
        c.at.reset();
    }
}

nlohmann::json Tracer::events() {
    resolve();
    nlohmann::json out = nlohmann::json::array();
    out.push_back({{"name", "process_name"},
                   {"ph", "M"},
                   {"pid", rank_},
                   {"args", {{"name", "rank " + std::to_string(rank_)}}}});
    out.push_back({{"name", "process_sort_index"},
                   {"ph", "M"},
                   {"pid", rank_},
                   {"args", {{"sort_index", rank_}}}});
    for (std::size_t i = 0; i < tracks_.size(); ++i) {
        if (!used_[i]) continue;
        const int tid = int(i) + 1;
        out.push_back({{"name", "thread_name"},
                       {"ph", "M"},
                       {"pid", rank_},
                       {"tid", tid},
                       {"args", {{"name", tracks_[i]}}}});
        out.push_back({{"name", "thread_sort_index"},
                       {"ph", "M"},
                       {"pid", rank_},
                       {"tid", tid},
                       {"args", {{"sort_index", tid}}}});
    }
    for (const auto& e : done_) out.push_back(e);
    return out;
}

} // namespace shardlab
