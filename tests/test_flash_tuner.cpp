// The flash kernels' tuner (model/flash_tuner.h) on a CPU stream, with stand-in "kernels" that
// sleep for a time set by their form: it keeps each kernel's fastest form (the backward's two
// kernels one at a time), times a shape once, and names what it chose. A sleep lasts at least its
// duration, so a form is never timed under its cost; the costs are 6 ms or more apart and each form
// is timed twice, so delays on a loaded machine would have to hit both timed runs of the cheaper
// form, by more than the gap, to mislead it.
// That the real kernels' forms give the same bits, and the tuner's run on CUDA streams:
// tests/test_cuda_ops.cpp (FlashAttentionAutoIsTheMmaKernelsBitForBit).
#include "core/cpu_stream.h"
#include "model/flash_tuner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

using namespace shardlab;
using cuda::FlashKernels;
using cuda::MmaForm;

namespace {
// Milliseconds a stand-in kernel takes in each form (plain, regs, wide).
using Costs = std::array<int, 3>;

// A run enqueues one task sleeping for the sum of its kernels' costs and logs the kernels it ran.
struct StandIn {
    CpuStream& s;
    Costs forward, kv, q;
    std::vector<FlashKernels> ran;

    FlashTuner::Run forward_run() {
        return [this](const FlashKernels& k) {
            ran.push_back(k);
            sleep(forward[std::size_t(k.forward)]);
        };
    }
    FlashTuner::Run backward_run() {
        return [this](const FlashKernels& k) {
            ran.push_back(k);
            sleep(kv[std::size_t(k.kv)] + q[std::size_t(k.q)]);
        };
    }
    void sleep(int ms) {
        s.enqueue([ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); });
    }
};

const FlashShape kGpt2{DType::bf16, 16, 1024, 768, 12, 12};
} // namespace

TEST(FlashTuner, KeepsEachKernelsFastestForm) {
    CpuStream s("compute", std::make_shared<StreamGroupState>());
    StandIn k{s, {20, 8, 14}, {30, 24, 4}, {12, 26, 6}, {}};
    FlashTuner tuner(2);
    tuner.forward(s, kGpt2, k.forward_run());
    // Each of the 3 forms once untimed and twice timed, in order.
    ASSERT_EQ(k.ran.size(), 9u);
    for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(k.ran[i].forward, cuda::kMmaForms[i / 3]);
    EXPECT_FALSE(k.ran[0].wmma);

    k.ran.clear();
    tuner.backward(s, kGpt2, k.backward_run());
    // dK/dV's three forms with dQ plain, then dQ's three with dK/dV's fastest (wide).
    ASSERT_EQ(k.ran.size(), 18u);
    for (std::size_t i = 0; i < 9; ++i) {
        EXPECT_EQ(k.ran[i].kv, cuda::kMmaForms[i / 3]);
        EXPECT_EQ(k.ran[i].q, MmaForm::plain);
    }
    for (std::size_t i = 9; i < 18; ++i) {
        EXPECT_EQ(k.ran[i].kv, MmaForm::wide);
        EXPECT_EQ(k.ran[i].q, cuda::kMmaForms[(i - 9) / 3]);
    }

    // Then every call runs the chosen forms, once, untimed.
    k.ran.clear();
    tuner.forward(s, kGpt2, k.forward_run());
    tuner.backward(s, kGpt2, k.backward_run());
    ASSERT_EQ(k.ran.size(), 2u);
    for (const FlashKernels& r : k.ran) {
        EXPECT_FALSE(r.wmma);
        EXPECT_EQ(r.forward, MmaForm::regs);
        EXPECT_EQ(r.kv, MmaForm::wide);
        EXPECT_EQ(r.q, MmaForm::wide);
    }
    s.synchronize();

    const std::string said = tuner.describe(DType::bf16, 64);
    EXPECT_EQ(
        said.rfind("auto: forward mma_regs, dK/dV mma_wide, dQ mma_wide (forward ms: mma ", 0), 0u)
        << said;
    EXPECT_EQ(tuner.describe(DType::f16, 64), "auto"); // nothing timed in fp16
}

// Each shape is timed on its own first call: another sequence length, where another form wins,
// times again and keeps its own choice; the first shape's stands.
TEST(FlashTuner, TimesEachShapeOnce) {
    CpuStream s("compute", std::make_shared<StreamGroupState>());
    StandIn k{s, {4, 16, 28}, {}, {}, {}};
    FlashTuner tuner(2);
    tuner.forward(s, kGpt2, k.forward_run());
    FlashShape shorter = kGpt2;
    shorter.T = 256;
    k.forward = {28, 16, 4};
    k.ran.clear();
    tuner.forward(s, shorter, k.forward_run());
    EXPECT_EQ(k.ran.size(), 9u); // timed: a new shape
    k.ran.clear();
    tuner.forward(s, kGpt2, k.forward_run());
    tuner.forward(s, shorter, k.forward_run());
    ASSERT_EQ(k.ran.size(), 2u);
    EXPECT_EQ(k.ran[0].forward, MmaForm::plain);
    EXPECT_EQ(k.ran[1].forward, MmaForm::wide);
    s.synchronize();
    // describe names the shape of that storage and head dim timed last.
    EXPECT_EQ(tuner.describe(DType::bf16, 64).rfind("auto: forward mma_wide (forward ms:", 0), 0u);
}
