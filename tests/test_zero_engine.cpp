// The ZeRO engine under `mpirun -np K`, every stage: a step whose gradient norm is not finite is
// skipped — on every rank alike, counted, with the weights unchanged to the bit — while a finite
// one updates them; and every stage ends a micro-batch with the same weights.
#include "model/backend.h"
#include "model/gpt_init.h"
#include "model/gpt_model.h"
#include "optim/device_updater.h"
#include "optim/zero_engine.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>

using namespace shardlab;

namespace {
const GPTConfig kConfig{64, 16, 2, 32, 4, 4}; // V T L d H Hkv

struct Outcome {
    std::vector<std::vector<float>> before, after;
    StepResult result;
    double loss = 0;
    long skipped = 0;
};

// One training step at `stage` from `init`; tokens alike on every rank.
Outcome one_step(int stage, Precision p, const std::vector<std::vector<float>>& init) {
    const auto backend = make_cpu_backend(1);
    const auto comm = backend->communicator(MPI_COMM_WORLD);
    DeviceContext& ctx = backend->context();
    const ParamLayout layout(kConfig);
    DeviceUpdater updater(ctx, backend->ops(), AdamWConfig{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f},
                          p != Precision::fp32);
    ZeroEngine engine(layout, {stage, p, 0, 1.0f, 65536.0f}, *comm, ctx, backend->ops(), updater,
                      init);
    GPTModel model(kConfig, 2, 8, {}, param_dtype(p), ctx, backend->ops());
    std::vector<std::uint16_t> in(16), tg(16);
    for (int i = 0; i < 16; ++i) in[i] = std::uint16_t(i * 3 % 64), tg[i] = std::uint16_t(i % 64);
    Outcome o;
    o.before = engine.consolidated_master();
    engine.begin_micro_batch(false);
    model.forward(engine, in.data(), tg.data(), engine.grad_scale());
    model.backward(engine);
    o.result = engine.step(1e-2f);
    o.loss = model.take_losses().front();
    o.after = engine.consolidated_master();
    o.skipped = engine.skipped_steps();
    return o;
}

bool same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t u = 0; u < a.size(); ++u)
        if (a[u].size() != b[u].size() ||
            std::memcmp(a[u].data(), b[u].data(), a[u].size() * sizeof(float)) != 0)
            return false;
    return true;
}
} // namespace

TEST(ZeroEngine, ANonFiniteGradientNeverReachesTheWeights) {
    // Token 5's embedding row at 1e38: finite, but its LayerNorm overflows to Inf and NaN, and so
    // does every gradient.
    auto init = gpt2_init(ParamLayout(kConfig), 11, kConfig.layers);
    for (int c = 0; c < kConfig.hidden; ++c) init[0][std::size_t(5) * kConfig.hidden + c] = 1e38f;
    for (Precision p : {Precision::fp32, Precision::bf16})
        for (int stage = 0; stage <= 3; ++stage) {
            SCOPED_TRACE(testing::Message() << "stage " << stage << " " << int(p));
            const Outcome o = one_step(stage, p, init);
            EXPECT_FALSE(std::isfinite(o.result.grad_norm));
            EXPECT_TRUE(o.result.skipped);
            EXPECT_EQ(o.skipped, 1);
            EXPECT_EQ(o.result.loss_scale, 1.0f); // bf16 / fp32 keep their scale
            EXPECT_TRUE(same_bits(o.before, o.after)) << "a skipped step changed a weight";
        }
}

TEST(ZeroEngine, AFiniteStepUpdatesTheSameWayInEveryStage) {
    const auto init = gpt2_init(ParamLayout(kConfig), 11, kConfig.layers);
    const Outcome first = one_step(0, Precision::bf16, init);
    EXPECT_FALSE(first.result.skipped);
    EXPECT_TRUE(std::isfinite(first.result.grad_norm));
    EXPECT_FALSE(same_bits(first.before, first.after));
    for (int stage = 1; stage <= 3; ++stage) {
        const Outcome o = one_step(stage, Precision::bf16, init);
        EXPECT_EQ(o.loss, first.loss) << "stage " << stage;
        EXPECT_EQ(o.result.grad_norm, first.result.grad_norm) << "stage " << stage;
        EXPECT_TRUE(same_bits(o.after, first.after)) << "stage " << stage;
    }
}
