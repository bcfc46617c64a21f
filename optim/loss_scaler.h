// Loss scaling, and the rule that a non-finite gradient never reaches the weights. The loss — and
// so every gradient — is multiplied by scale(). When any gradient is Inf or NaN the step is
// skipped (and counted). Dynamic scaling (fp16, whose range is narrow) also halves the scale on
// such a step, never below 1, and doubles it after `growth_interval` good steps in a row (while it
// stays finite); a static scaler (fp32, bf16) keeps its scale. (With several ranks, overflow is
// read from the all-reduced gradient norm, so every rank skips alike.)
#pragma once

namespace shardlab {

class LossScaler {
  public:
    explicit LossScaler(float initial_scale = 65536.0f, int growth_interval = 1000,
                        bool dynamic = true)
        : scale_(initial_scale), growth_interval_(growth_interval), dynamic_(dynamic) {}
    static LossScaler fixed() { return LossScaler(1.0f, 1, false); } // scale 1, never changes

    float scale() const { return scale_; }
    // Records a step's outcome; returns true when the update should be applied.
    bool update(bool found_overflow);
    long skipped() const { return skipped_; }
    int good_steps() const { return good_steps_; }
    // Resume: continue exactly where a saved run stopped.
    void restore(float scale, int good_steps, long skipped) {
        scale_ = scale;
        good_steps_ = good_steps;
        skipped_ = skipped;
    }

  private:
    float scale_;
    int growth_interval_;
    bool dynamic_;
    int good_steps_ = 0;
    long skipped_ = 0;
};

} // namespace shardlab
