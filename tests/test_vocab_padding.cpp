// Vocabulary padding under `mpirun -np K`: a model whose vocabulary V = 130 is stored padded to
// Vp = 256 (--vocab-multiple 128) trains as the unpadded one (multiple 1), while wte's padded rows,
// and their AdamW moments, stay exactly zero at every ZeRO stage. The embeddings unit is
// (256 + 16) x 32 = 8704 elements, so at K = 2..5 a shard boundary falls inside the padding rows
// (elements 4160..8191): K = 2, 4352; K = 3, 5804; K = 4, 4352 and 6528; K = 5, 5223 and 6964.
//
// Not bit for bit: the padding adds only exact zeros to every sum (masked logits give dlogits 0;
// wte's padded rows are 0), but the head's backward GEMM dx = dlogits @ wte reduces over the
// vocabulary, K = Vp instead of V, and OpenBLAS and oneDNN both block and vectorise K differently
// for another K: the same terms summed in another grouping. Measured here: gradients differ by at
// most 2.6e-7 of each tensor's largest element (a few float ulps), which AdamW then amplifies where
// a gradient is near zero (its step is about lr times the gradient's sign). So the tests bound:
//  - one backward's gradients: |dg| <= 1e-5 max|g| per tensor. Summing K = 256 terms in any order
//    errs by at most gamma_256 = 256 u / (1 - 256 u) = 1.5e-5 of the sum of their magnitudes
//    (u = 2^-24), one GEMM's worth, and what follows is layer norms and GEMMs of 32..128 terms.
//  - the first loss (a forward only: GEMMs over d = 32, the loss over V): within 64 u relative.
//  - later losses: relative 1e-3 — far below what a masking bug costs (an unmasked padding adds
//    126 logits of 0 to the softmax: ln(256 / 130) = 0.68 nats at init); measured <= 2.5e-5.
//  - final true weights: |dw| <= 2.01 lr per step. AdamW moves an element by lr |m^/(sqrt(v^)+e)|
//    (+ lr wd |w|, equal on both sides up to the same bound), and by Cauchy-Schwarz |m^|/sqrt(v^)
//    <= (1 - b1) / sqrt(1 - b2) sqrt(sum_k<t (b1^2/b2)^k) sqrt(1 - b2^t) / (1 - b1^t) = 1, 1.0003,
//    1.0007 at t = 1, 2, 3 for b1 = 0.9, b2 = 0.95: two runs can differ by at most twice that.
#include "model/backend.h"
#include "model/families.h"
#include "model/gpt2/gpt_init.h"
#include "optim/device_updater.h"
#include "optim/zero_engine.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>

using namespace shardlab;

namespace {
ModelConfig config(int vocab_multiple) {
    ModelConfig c{130, 16, 2, 32, 4, 4}; // V T L d H Hkv
    c.vocab_multiple = vocab_multiple;
    return c;
}

struct Trained {
    std::vector<double> losses;
    std::vector<std::vector<float>> master; // consolidated, padded layout
    ZeroEngine::OwnedState owned;           // this rank's master, m, v
};

// `steps` steps of 2 micro-batches at `stage`, from GPT-2's init (seed 7); the tokens differ per
// rank and step.
Trained train(int vocab_multiple, int stage, Precision p, int steps) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const ModelConfig c = config(vocab_multiple);
    const auto backend = make_cpu_backend(1);
    const auto comm = backend->communicator(MPI_COMM_WORLD);
    DeviceContext& ctx = backend->context();
    const ParamLayout layout(c);
    DeviceUpdater updater(ctx, backend->ops(), AdamWConfig{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f},
                          p != Precision::fp32);
    const auto init = gpt2_init(layout, 7, c.layers);
    ZeroEngine engine(layout, {stage, p, 0, 1.0f, 65536.0f}, *comm, ctx, backend->ops(), updater,
                      init);
    const int B = 2, T = 8;
    const std::unique_ptr<Model> made =
        make_model(c, B, T, {}, param_dtype(p), ctx, backend->ops());
    Model& model = *made;
    std::vector<std::uint16_t> in(B * T), tg(B * T);
    Trained t;
    for (int step = 0; step < steps; ++step) {
        double loss = 0;
        for (int micro = 0; micro < 2; ++micro) {
            for (int i = 0; i < B * T; ++i) {
                const unsigned k = unsigned(i + 31 * micro + 97 * step + 389 * rank);
                in[i] = std::uint16_t(k * 2654435761u % 130u);
                tg[i] = std::uint16_t((k * 40503u + 7) % 130u);
            }
            engine.begin_micro_batch(micro == 1);
            model.forward(engine, in.data(), tg.data(), engine.grad_scale());
            model.backward(engine);
            loss += model.take_losses().front();
        }
        engine.step(1e-2f);
        t.losses.push_back(engine.average(loss / 2));
    }
    t.master = engine.consolidated_master();
    t.owned = engine.save_owned();
    return t;
}

// wte's rows V..Vp-1 in the consolidated master, and in this rank's owned master, m and v.
void expect_padding_zero(const Trained& t, const ParamLayout& layout) {
    const ParamInfo& wte = layout.units()[0].params[0];
    ASSERT_GT(wte.stored, wte.numel);
    for (std::size_t e = wte.offset + wte.numel; e < wte.offset + wte.stored; ++e)
        ASSERT_EQ(t.master[0][e], 0.0f) << "consolidated element " << e;
    const std::uint64_t first = t.owned.offset[0];
    std::size_t checked = 0;
    for (std::size_t i = 0; i < t.owned.master[0].size(); ++i) {
        const std::uint64_t e = first + i;
        if (e < wte.offset + wte.numel || e >= wte.offset + wte.stored) continue;
        ASSERT_EQ(t.owned.master[0][i], 0.0f) << "owned master element " << e;
        ASSERT_EQ(t.owned.m[0][i], 0.0f) << "owned m element " << e;
        ASSERT_EQ(t.owned.v[0][i], 0.0f) << "owned v element " << e;
        ++checked;
    }
    int any = checked > 0, ranks = 1;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    EXPECT_GE(any, 1) << "no rank owns a padding element: the test checks nothing there";
}

// The true weights of the padded run (its units without wte's padding) against the unpadded run.
void expect_same_weights(const Trained& padded, const Trained& plain, const ParamLayout& lp,
                         const ParamLayout& l1, double bound) {
    ASSERT_EQ(lp.num_units(), l1.num_units());
    for (std::size_t u = 0; u < lp.num_units(); ++u)
        for (std::size_t k = 0; k < lp.units()[u].params.size(); ++k) {
            const ParamInfo& a = lp.units()[u].params[k];
            const ParamInfo& b = l1.units()[u].params[k];
            ASSERT_EQ(a.numel, b.numel);
            double worst = 0, big = 0;
            for (std::size_t i = 0; i < a.numel; ++i) {
                worst = std::max(worst, double(std::fabs(padded.master[u][a.offset + i] -
                                                         plain.master[u][b.offset + i])));
                big = std::max(big, double(std::fabs(plain.master[u][b.offset + i])));
            }
            EXPECT_LE(worst, bound) << a.name << " (largest |w| " << big << ")";
        }
}
} // namespace

TEST(VocabPadding, TrainsAsTheUnpaddedModelWithThePaddingExactlyZero) {
    const ParamLayout padded_layout(config(128)), plain_layout(config(1));
    ASSERT_EQ(padded_layout.padded_vocab(), 256);
    ASSERT_EQ(plain_layout.padded_vocab(), 130);
    for (Precision p : {Precision::fp32, Precision::bf16})
        for (int stage : {0, 1, 2, 3}) {
            SCOPED_TRACE(testing::Message() << "stage " << stage << " precision " << int(p));
            const Trained padded = train(128, stage, p, 3), plain = train(1, stage, p, 3);
            expect_padding_zero(padded, padded_layout);
            EXPECT_NEAR(padded.losses[0], plain.losses[0], 64 * 0x1p-24 * plain.losses[0]);
            for (std::size_t i = 1; i < padded.losses.size(); ++i)
                EXPECT_NEAR(padded.losses[i], plain.losses[i], 1e-3 * plain.losses[i]) << i;
            expect_same_weights(padded, plain, padded_layout, plain_layout, 2.01 * 1e-2 * 3);
        }
}

// One forward and backward on resident parameters: the gradient of every tensor, padded against
// unpadded.
TEST(VocabPadding, OneBackwardGivesTheSameGradients) {
    std::vector<std::vector<float>> grads[2];
    double losses[2];
    for (int side = 0; side < 2; ++side) {
        const ModelConfig c = config(side ? 1 : 128);
        const auto backend = make_cpu_backend(1);
        DeviceContext& ctx = backend->context();
        const ParamLayout layout(c);
        ResidentParams params(layout, DType::f32, ctx, backend->ops());
        params.load(gpt2_init(layout, 7, c.layers));
        params.zero_grads();
        const std::unique_ptr<Model> made =
            make_model(c, 2, 8, {}, DType::f32, ctx, backend->ops());
        Model& model = *made;
        std::vector<std::uint16_t> in(16), tg(16);
        for (int i = 0; i < 16; ++i)
            in[i] = std::uint16_t(i * 37 % 130), tg[i] = std::uint16_t((i * 11 + 3) % 130);
        model.forward(params, in.data(), tg.data(), 1.0f);
        model.backward(params);
        losses[side] = model.take_losses().front();
        for (std::size_t u = 0; u < layout.num_units(); ++u) {
            const std::vector<float> g = params.grads_to_host(int(u));
            for (const ParamInfo& p : layout.units()[u].params)
                grads[side].emplace_back(g.begin() + std::ptrdiff_t(p.offset),
                                         g.begin() + std::ptrdiff_t(p.offset + p.numel));
        }
    }
    EXPECT_NEAR(losses[0], losses[1], 64 * 0x1p-24 * losses[1]);
    const ParamLayout layout(config(1));
    std::size_t k = 0;
    for (const auto& u : layout.units())
        for (const ParamInfo& p : u.params) {
            std::size_t diff = 0;
            for (std::size_t i = 0; i < p.numel; ++i) diff += grads[0][k][i] != grads[1][k][i];
            double worst = 0, big = 0;
            for (std::size_t i = 0; i < p.numel; ++i) {
                worst = std::max(worst, double(std::fabs(grads[0][k][i] - grads[1][k][i])));
                big = std::max(big, double(std::fabs(grads[1][k][i])));
            }
            EXPECT_LE(worst, 1e-5 * big) << p.name << ": " << diff << " elements differ";
            ++k;
        }
}
