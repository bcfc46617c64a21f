// The learning-rate schedule at every step of a short run, worked out by hand: linear warmup from
// 0, then cosine, linear or no decay to min_ratio x peak at the last step. Each value is computed
// in double and rounded to float once, so EXPECT_FLOAT_EQ (4 ulps) has room to spare.
#include "optim/lr_schedule.h"

#include <gtest/gtest.h>

using shardlab::LrSchedule;

namespace {
// peak 1, 2 warmup steps, 6 steps, floor 0.2: the decay runs over steps 2..5 (progress 0, 1/3,
// 2/3, 1).
LrSchedule six_steps(LrSchedule::Decay decay) {
    return {1.0f, 2, 6, 0.2f, decay};
}
} // namespace

TEST(LrSchedule, WarmupIsLinearFromZeroToThePeak) {
    for (auto decay :
         {LrSchedule::Decay::cosine, LrSchedule::Decay::linear, LrSchedule::Decay::constant}) {
        EXPECT_FLOAT_EQ(six_steps(decay).at(0), 0.5f);
        EXPECT_FLOAT_EQ(six_steps(decay).at(1), 1.0f);
    }
}

TEST(LrSchedule, LinearDecayReachesTheFloorAtTheLastStep) {
    const LrSchedule s = six_steps(LrSchedule::Decay::linear);
    EXPECT_FLOAT_EQ(s.at(2), 1.0f);
    EXPECT_FLOAT_EQ(s.at(3), float(0.2 + 0.8 * (2.0 / 3.0))); // 0.7333
    EXPECT_FLOAT_EQ(s.at(4), float(0.2 + 0.8 * (1.0 / 3.0))); // 0.4667
    EXPECT_FLOAT_EQ(s.at(5), 0.2f);
    EXPECT_FLOAT_EQ(s.at(9), 0.2f); // past the end (a longer resumed run): stays at the floor
}

TEST(LrSchedule, CosineDecayReachesTheFloorAtTheLastStep) {
    const LrSchedule s = six_steps(LrSchedule::Decay::cosine);
    EXPECT_FLOAT_EQ(s.at(2), 1.0f);
    EXPECT_FLOAT_EQ(s.at(3), 0.8f); // cos(pi/3) = 1/2: 0.2 + 0.8 x 0.75
    EXPECT_FLOAT_EQ(s.at(4), 0.4f); // cos(2pi/3) = -1/2: 0.2 + 0.8 x 0.25
    EXPECT_FLOAT_EQ(s.at(5), 0.2f);
}

TEST(LrSchedule, ConstantStaysAtThePeak) {
    const LrSchedule s = six_steps(LrSchedule::Decay::constant);
    for (int step = 2; step < 6; ++step) EXPECT_FLOAT_EQ(s.at(step), 1.0f);
}
