// The ZeRO engine under `mpirun -np K`, every stage: a step whose gradient norm is not finite is
// skipped — on every rank alike, counted, with the weights unchanged to the bit — while a finite
// one updates them; every stage ends a micro-batch with the same weights; and a unit's backward
// does not wait for the reduce-scatter of the unit before it.
#include "model/backend.h"
#include "model/families.h"
#include "model/gpt2/gpt_init.h"
#include "optim/device_updater.h"
#include "optim/zero_engine.h"

#include "tests/same_bits.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

using namespace shardlab;

namespace {
const ModelConfig kConfig{64, 16, 2, 32, 4, 4}; // V T L d H Hkv

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
    const std::unique_ptr<Model> made =
        make_model(kConfig, 2, 8, {}, param_dtype(p), ctx, backend->ops());
    Model& model = *made;
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

TEST(ZeroEngine, ABlocksBackwardNeverWaitsForTheReduceScatterOfTheBlockBefore) {
    // Stage 2 at N >= 2, driven unit by unit as backward would: rank 1 holds back block 3's
    // reduce-scatter for a second; meanwhile rank 0 must get block 2's gradient buffer and run
    // compute-stream work at once — its reduce-scatter of block 3 waits for rank 1, its backward
    // must not.
    int n = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (n < 2) GTEST_SKIP() << "needs a peer to hold a reduce-scatter back";
    const ModelConfig c{64, 16, 4, 32, 4, 4}; // units: 0 embeddings, 1..4 blocks, 5 ln_f
    const auto backend = make_cpu_backend(1);
    const auto comm = backend->communicator(MPI_COMM_WORLD);
    DeviceContext& ctx = backend->context();
    const ParamLayout layout(c);
    DeviceUpdater updater(ctx, backend->ops(), AdamWConfig{}, true);
    ZeroEngine engine(layout, {2, Precision::bf16, 0, 1.0f, 65536.0f}, *comm, ctx, backend->ops(),
                      updater, gpt2_init(layout, 3, c.layers));
    engine.begin_micro_batch(false);
    engine.grads(0);
    engine.grads(5);
    engine.grads_done(5);
    engine.grads(4);
    engine.grads_done(4);
    comm->synchronize(); // both ranks' earlier reduce-scatters are done
    MPI_Barrier(MPI_COMM_WORLD);
    engine.grads(3);
    if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(1));
    engine.grads_done(3);
    const auto t0 = std::chrono::steady_clock::now();
    engine.grads(2);
    const EventPtr next_backward = ctx.compute().record();
    while (!next_backward->query() &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0) {
        EXPECT_LT(waited, 0.5) << "block 2's backward waited for block 3's reduce-scatter";
    }
    engine.grads_done(2);
    engine.grads(1);
    engine.grads_done(1);
    engine.grads_done(0);
    engine.step(1e-3f);
}
