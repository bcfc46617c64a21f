// The training session (train/train_session.h) under `mpirun -np K`: its step is the engine's
// step over the run's token windows — micro-batch a of step s on rank r is window
// ((s·A + a)·N + r)·B, each forward scaled by 1/A — checked bitwise against the same step written
// out by hand over a second engine; validation and the stop agreement change no weight and leave
// the communication statistics as they were, and the stop agreement gives every rank one signal.
#include "launch/final_weights.h"
#include "launch/sha256.h"
#include "model/backend.h"
#include "model/families.h"
#include "model/gpt2/gpt_init.h"
#include "optim/device_updater.h"
#include "optim/zero_engine.h"
#include "train/train_session.h"

#include "tests/same_bits.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <csignal>
#include <cstring>

using namespace shardlab;

namespace {
const ModelConfig kConfig{64, 16, 2, 32, 4, 4}; // V T L d H Hkv
const int kBatch = 2, kSeq = 8, kAccum = 2, kSteps = 2;
const AdamWConfig kAdam{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};

std::vector<std::uint16_t> tokens() {
    std::vector<std::uint16_t> t(2000);
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::uint16_t((i * 7 + i / 13) % 64);
    return t;
}

SessionSpec spec(int stage) {
    SessionSpec s;
    s.config = kConfig, s.micro_batch = kBatch, s.seq = kSeq, s.grad_accum = kAccum;
    s.precision = Precision::fp32;
    s.zero = ZeroOptions{stage, Precision::fp32, 0, 1.0f, 65536.0f};
    s.adam = kAdam;
    return s;
}

class TrainSessionTest : public ::testing::TestWithParam<int> {};

TEST_P(TrainSessionTest, StepIsTheEnginesStepOverTheRunsWindows) {
    const int stage = GetParam();
    const std::vector<std::uint16_t> data = tokens();
    const TokenWindows train(data, kSeq);
    const std::vector<std::vector<float>> init = gpt2_init(ParamLayout(kConfig), 7, 2);

    const auto backend = make_cpu_backend(1);
    const auto comm = backend->communicator(MPI_COMM_WORLD);
    TrainSession session(spec(stage), *backend, *comm, backend->ops(), initial_values_from(init),
                         nullptr);
    std::vector<double> losses;
    for (int s = 0; s < kSteps; ++s) losses.push_back(session.step(s, train, 1e-2f).loss);

    // The same steps by hand, on a backend of their own.
    const auto backend2 = make_cpu_backend(1);
    const auto comm2 = backend2->communicator(MPI_COMM_WORLD);
    DeviceContext& ctx = backend2->context();
    const ParamLayout layout(kConfig);
    DeviceUpdater updater(ctx, backend2->ops(), kAdam, false);
    ZeroEngine engine(layout, {stage, Precision::fp32, 0, 1.0f, 65536.0f}, *comm2, ctx,
                      backend2->ops(), updater, init);
    const std::unique_ptr<Model> made =
        make_model(kConfig, kBatch, kSeq, {}, DType::f32, ctx, backend2->ops());
    Model& model = *made;
    const int N = comm2->size(), rank = comm2->rank();
    std::vector<std::uint16_t> in(kBatch * kSeq), tg(in.size());
    for (int s = 0; s < kSteps; ++s) {
        for (int a = 0; a < kAccum; ++a) {
            train.fill_wrapped((std::size_t(s * kAccum + a) * N + rank) * kBatch, kBatch, in.data(),
                               tg.data());
            engine.begin_micro_batch(a > 0);
            model.forward(engine, in.data(), tg.data(), engine.grad_scale() / float(kAccum));
            model.backward(engine);
        }
        engine.step(1e-2f);
        double sum = 0;
        for (double l : model.take_losses()) sum += l;
        const double loss = engine.average(sum / kAccum);
        EXPECT_EQ(std::memcmp(&loss, &losses[std::size_t(s)], sizeof loss), 0)
            << "step " << s + 1 << ": " << loss << " by hand, " << losses[std::size_t(s)];
    }
    EXPECT_TRUE(same_bits(session.engine().consolidated_master(), engine.consolidated_master()));
}

TEST_P(TrainSessionTest, ValidationAndTheStopAgreementLeaveNoTrace) {
    const std::vector<std::uint16_t> data = tokens();
    const TokenWindows train(data, kSeq);
    const std::vector<std::vector<float>> init = gpt2_init(ParamLayout(kConfig), 7, 2);
    const auto backend = make_cpu_backend(1);
    const auto comm = backend->communicator(MPI_COMM_WORLD);
    TrainSession session(spec(GetParam()), *backend, *comm, backend->ops(),
                         initial_values_from(init), nullptr);
    session.step(0, train, 1e-2f);
    const std::map<std::string, OpStats> stats = comm->stats().ops();
    const std::vector<std::vector<float>> weights = session.engine().consolidated_master();
    const std::map<std::string, OpStats> after_consolidating = comm->stats().ops();

    const double first = session.validate(train, 3), second = session.validate(train, 3);
    EXPECT_EQ(std::memcmp(&first, &second, sizeof first), 0); // no state changed between them
    EXPECT_TRUE(std::isfinite(first));
    WatchedComm outside(MPI_COMM_WORLD, 60);
    EXPECT_EQ(session.agree_on_stop(0, outside), 0);
    // Open MPI forwards a signal rank by rank: rank 0 may hold SIGUSR1, rank 1 a Ctrl-C and the
    // others nothing yet. Every rank stops for the highest, and so exits with the same code.
    const int rank = comm->rank();
    const int mine = rank == 0 ? SIGUSR1 : rank == 1 ? SIGINT : 0;
    EXPECT_EQ(session.agree_on_stop(mine, outside), SIGUSR1);
    EXPECT_EQ(session.agree_on_stop(rank == comm->size() - 1 ? SIGINT : 0, outside), SIGINT);
    const auto& now = comm->stats().ops();
    ASSERT_EQ(now.size(), after_consolidating.size());
    for (const auto& [op, s] : after_consolidating) {
        ASSERT_TRUE(now.count(op)) << op;
        EXPECT_EQ(now.at(op).calls, s.calls) << op;
        EXPECT_EQ(now.at(op).bytes_sent, s.bytes_sent) << op;
    }
    EXPECT_TRUE(same_bits(session.engine().consolidated_master(), weights));
    EXPECT_FALSE(stats.empty()); // the step itself was counted
}

// The final weights come out in pieces that cut tensors anywhere (7 and 1000 elements): every
// unit the same bits as whole, and the run's SHA-256 that of the tensors' true elements in order,
// hashed here independently from the whole units.
TEST_P(TrainSessionTest, FinalWeightsAreTheSameInPiecesOfAnySize) {
    const std::vector<std::uint16_t> data = tokens();
    const TokenWindows train(data, kSeq);
    const ParamLayout layout(kConfig);
    const auto backend = make_cpu_backend(1);
    const auto comm = backend->communicator(MPI_COMM_WORLD);
    TrainSession session(spec(GetParam()), *backend, *comm, backend->ops(),
                         initial_values_from(gpt2_init(layout, 7, 2)), nullptr);
    session.step(0, train, 1e-2f);
    const std::vector<std::vector<float>> whole = session.engine().consolidated_master();
    Sha256 reference;
    for (std::size_t u = 0; u < layout.num_units(); ++u)
        for (const ParamInfo& p : layout.units()[u].params)
            reference.update(whole[u].data() + p.offset, p.numel * sizeof(float));
    const std::string expected = reference.hex();
    for (const std::size_t piece : {std::size_t(7), std::size_t(1000)}) {
        SCOPED_TRACE(testing::Message() << "pieces of " << piece);
        for (std::size_t u = 0; u < layout.num_units(); ++u) {
            std::vector<float> joined;
            std::uint64_t next = 0;
            session.engine().for_each_consolidated_piece(
                int(u),
                [&](std::uint64_t first, const float* values, std::size_t n) {
                    EXPECT_EQ(first, next);
                    EXPECT_LE(n, piece);
                    joined.insert(joined.end(), values, values + n);
                    next = first + n;
                },
                piece);
            EXPECT_TRUE(same_bits(std::vector<std::vector<float>>{joined},
                                  std::vector<std::vector<float>>{whole[u]}))
                << "unit " << u;
        }
        EXPECT_EQ(hash_and_save_weights(session.engine(), kConfig, "", comm->rank() == 0,
                                        kDefaultShardBytes, piece)
                      .hash,
                  expected);
    }
}

INSTANTIATE_TEST_SUITE_P(Stages, TrainSessionTest, ::testing::Values(0, 1, 2, 3));
} // namespace
