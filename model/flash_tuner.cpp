// Times each mma flash kernel's forms on a shape's first call and keeps the fastest
// (flash_tuner.h).
#include "model/flash_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace shardlab {

namespace {
using cuda::FlashKernels;
using cuda::MmaForm;

// The form of the smallest time (the first of equals).
MmaForm fastest(const std::array<double, 3>& ms) {
    return cuda::kMmaForms[std::min_element(ms.begin(), ms.end()) - ms.begin()];
}

std::string times(const char* what, const std::array<double, 3>& ms) {
    std::string out = fmt::format("{} ms:", what);
    for (const MmaForm f : cuda::kMmaForms)
        out += fmt::format(" {} {:.3f}", cuda::mma_form_name(f), ms[std::size_t(f)]);
    return out;
}
} // namespace

double FlashTuner::best_ms(Stream& s, const Run& run, const FlashKernels& k) const {
    run(k); // untimed: a kernel's first launch loads it
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < timed_runs_; ++i) {
        const EventPtr start = s.record();
        run(k);
        const EventPtr end = s.record();
        end->synchronize();
        best = std::min(best, end->seconds_since(*start) * 1e3);
    }
    return best;
}

void FlashTuner::forward(Stream& s, const FlashShape& shape, const Run& run) {
    Choice& c = choices_[shape];
    if (c.forward_timed) return run(c.kernels);
    for (const MmaForm f : cuda::kMmaForms)
        c.forward_ms[std::size_t(f)] = best_ms(s, run, {false, f, c.kernels.kv, c.kernels.q});
    c.kernels.forward = fastest(c.forward_ms);
    c.forward_timed = true;
    last_.insert_or_assign({shape.dtype, shape.head_dim()}, shape);
}

void FlashTuner::backward(Stream& s, const FlashShape& shape, const Run& run) {
    Choice& c = choices_[shape];
    if (c.backward_timed) return run(c.kernels);
    FlashKernels k = c.kernels;
    k.q = MmaForm::plain;
    for (const MmaForm f : cuda::kMmaForms) {
        k.kv = f;
        c.kv_ms[std::size_t(f)] = best_ms(s, run, k);
    }
    k.kv = fastest(c.kv_ms);
    // dQ plain again, not the time that chose the dK/dV form: the smallest of three is biased low.
    for (const MmaForm f : cuda::kMmaForms) {
        k.q = f;
        c.q_ms[std::size_t(f)] = best_ms(s, run, k);
    }
    k.q = fastest(c.q_ms);
    c.kernels.kv = k.kv, c.kernels.q = k.q;
    c.backward_timed = true;
    last_.insert_or_assign({shape.dtype, shape.head_dim()}, shape);
}

std::string FlashTuner::describe(DType t, int head_dim) const {
    const auto last = last_.find({t, head_dim});
    if (last == last_.end()) return "auto";
    const Choice& c = choices_.at(last->second);
    std::string out = "auto:";
    std::string detail;
    if (c.forward_timed) {
        out += fmt::format(" forward {}", cuda::mma_form_name(c.kernels.forward));
        detail += times("forward", c.forward_ms);
    }
    if (c.backward_timed) {
        out += fmt::format("{} dK/dV {}, dQ {}", c.forward_timed ? "," : "",
                           cuda::mma_form_name(c.kernels.kv), cuda::mma_form_name(c.kernels.q));
        detail +=
            fmt::format("{}{} (dQ mma); {} (dK/dV {})", detail.empty() ? "" : "; ",
                        times("backward by dK/dV form", c.kv_ms),
                        times("backward by dQ form", c.q_ms), cuda::mma_form_name(c.kernels.kv));
    }
    return out + " (" + detail + ")";
}

} // namespace shardlab
