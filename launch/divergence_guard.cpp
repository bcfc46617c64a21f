// Implementation of launch/divergence_guard.h.
#include "launch/divergence_guard.h"

#include "optim/checkpoint.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

namespace shardlab {

std::string DivergenceGuard::restart_hint() const {
    return fmt::format("A resume keeps the run's settings, so to go on with a lower --lr start "
                       "from its weights: shardlab checkpoint export {} --out W.safetensors, then "
                       "train --init W.safetensors",
                       out_);
}

void DivergenceGuard::after_step(int step, double loss, const StepResult& r) {
    const bool bad = !std::isfinite(loss) || (!fp16_ && !std::isfinite(r.grad_norm));
    if (!bad) {
        streak_ = 0;
        latest_trusted_ = true;
        if (lead_) drop_previous_checkpoint(out_); // the latest one's next step was finite
        return;
    }
    if (streak_++ == 0) first_bad_ = step;
}

std::string DivergenceGuard::stop_message(int step) {
    std::string kept;
    const std::filesystem::path latest = std::filesystem::path(out_) / "checkpoint";
    if (lead_ && latest_trusted_ && std::filesystem::exists(latest / "meta.json")) {
        kept = fmt::format("the checkpoint of step {} (its next loss was finite) is kept in {}. {}",
                           read_checkpoint_meta(latest.string()).value("iteration", 0),
                           latest.string(), restart_hint());
    } else if (lead_) {
        const bool had = std::filesystem::exists(latest);
        const int at = set_aside_latest_checkpoint(out_);
        kept = at > 0 ? fmt::format("the checkpoint of step {} (the last whose next loss was "
                                    "finite) is in {}/checkpoint. {}",
                                    at, out_, restart_hint())
               : had  ? fmt::format("no checkpoint had a finite next loss; the last one is kept "
                                     "in {}/checkpoint.diverged for inspection",
                                    out_)
                      : "no checkpoint was saved";
    }
    return fmt::format("shardlab: the run diverged: steps {}-{} ({} in a row) had a non-finite "
                       "loss or gradient norm, so it stops (--max-bad-steps {}); {}",
                       first_bad_, step, streak_, max_, kept);
}

} // namespace shardlab
