// A run that diverges stops, and keeps a checkpoint it can be resumed from. A step is bad when its
// loss is not finite, or (bf16, fp32) its gradient norm is not finite — fp16's overflow skips are
// the loss scaler's business, not divergence. After --max-bad-steps consecutive bad steps the run
// stops (exit 3). A checkpoint is trusted once the step after it had a finite loss: until then the
// one it replaced is kept beside it, no checkpoint is saved during bad steps, and on a diverged
// stop the untrusted one is set aside (checkpoint.diverged) and the trusted one put back.
#pragma once

#include "optim/zero_engine.h"

#include <string>

namespace shardlab {

class DivergenceGuard {
  public:
    // max_bad_steps 0: never stop. `lead`: this rank moves the checkpoint directories.
    DivergenceGuard(std::string out, int max_bad_steps, bool fp16, bool lead)
        : out_(std::move(out)), max_(max_bad_steps), fp16_(fp16), lead_(lead) {}

    // After step `step` (1-based), before its checkpoint: counts it, and trusts the latest
    // checkpoint (dropping the one it replaced) when the step was finite.
    void after_step(int step, double loss, const StepResult& r);
    void saved() { latest_trusted_ = false; } // a checkpoint was just saved
    bool in_bad_streak() const { return streak_ > 0; }
    bool diverged() const { return max_ > 0 && streak_ >= max_; }
    // On a diverged stop, every rank: the message (rank 0 also moves the directories).
    std::string stop_message(int step);

  private:
    std::string restart_hint() const; // how to go on from the kept checkpoint

    std::string out_;
    int max_;
    bool fp16_, lead_;
    int streak_ = 0, first_bad_ = 0;
    bool latest_trusted_ = false; // the checkpoint in out_/checkpoint had a finite next step
};

} // namespace shardlab
