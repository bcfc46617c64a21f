// The CPU backend's Ops against the kernels they dispatch to, bitwise: every dtype, GEMM with
// both transposes, alpha / beta, a bias and strided batches (a loop of 2-D products), the
// squared norm (one running double sum, in order), AdamW writing the rounded parameters, and the
// element-wise ops — all enqueued on a worker-thread stream, read after synchronising.
#include "core/device_context.h"
#include "model/kernels/cpu/adamw.h"
#include "model/kernels/cpu/gemm.h"
#include "model/kernels/cpu/linear.h"
#include "model/kernels/cpu/residual.h"
#include "model/ops_cpu.h"
#include "optim/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace shardlab;

namespace {
struct Fixture {
    std::unique_ptr<DeviceContext> ctx = make_cpu_context();
    CpuOps cpu_ops{ctx->tracker()};
    Ops& ops = cpu_ops; // called through the interface, as the model does
    Stream& s = ctx->compute();
};

// n random values in [-1, 1], stored in dtype t (raw bytes).
std::vector<char> random_bytes(std::size_t n, DType t, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<char> out(n * dtype_size(t));
    for (std::size_t i = 0; i < n; ++i) store_from_f32(out.data(), t, i, u(rng));
    return out;
}

Tensor tensor(std::vector<char>& bytes, DType t, Shape shape) {
    return {bytes.data(), t, shape, Device::cpu()};
}

template <typename T>
void reference_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const void* A,
                    const void* B, float beta, void* C) {
    std::vector<float> ws(cpu::gemm_workspace_floats<T>(M, N, K));
    cpu::gemm<T>(ta, tb, M, N, K, alpha, static_cast<const T*>(A), ta ? M : K,
                 static_cast<const T*>(B), tb ? K : N, beta, static_cast<T*>(C), N, ws.data());
}

void reference_gemm(DType t, bool ta, bool tb, int M, int N, int K, float alpha, const void* A,
                    const void* B, float beta, void* C) {
    if (t == DType::f32) return reference_gemm<float>(ta, tb, M, N, K, alpha, A, B, beta, C);
    if (t == DType::bf16) return reference_gemm<bf16_t>(ta, tb, M, N, K, alpha, A, B, beta, C);
    reference_gemm<f16_t>(ta, tb, M, N, K, alpha, A, B, beta, C);
}
} // namespace

TEST(CpuOps, GemmIsTheKernelInEveryDtypeTransposeAndBatch) {
    Fixture f;
    const int M = 13, N = 7, K = 19, batch = 3;
    for (DType t : {DType::f32, DType::bf16, DType::f16})
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                SCOPED_TRACE(testing::Message() << dtype_name(t) << " ta " << ta << " tb " << tb);
                auto a = random_bytes(std::size_t(batch) * M * K, t, 1);
                auto b = random_bytes(std::size_t(batch) * K * N, t, 2);
                auto c = random_bytes(std::size_t(batch) * M * N, t, 3);
                auto want = c;
                const std::size_t es = dtype_size(t);
                for (int i = 0; i < batch; ++i)
                    reference_gemm(t, ta, tb, M, N, K, 0.75f, a.data() + i * M * K * es,
                                   b.data() + i * K * N * es, 0.5f, want.data() + i * M * N * es);
                f.ops.gemm(f.s, tensor(a, t, {batch, ta ? K : M, ta ? M : K}), ta,
                           tensor(b, t, {batch, tb ? N : K, tb ? K : N}), tb,
                           tensor(c, t, {batch, M, N}), 0.75f, 0.5f);
                f.s.synchronize();
                EXPECT_EQ(c, want);
            }
}

TEST(CpuOps, GemmWithABiasIsTheLinearLayerAndBiasGradItsColumnSums) {
    Fixture f;
    const int N = 9, IC = 11, OC = 6;
    for (DType t : {DType::f32, DType::bf16}) {
        auto x = random_bytes(std::size_t(N) * IC, t, 4),
             w = random_bytes(std::size_t(IC) * OC, t, 5);
        auto bias = random_bytes(OC, t, 6), out = random_bytes(std::size_t(N) * OC, t, 7);
        auto want = out;
        std::vector<float> ws(1 << 12);
        if (t == DType::f32)
            cpu::linear_forward(reinterpret_cast<float*>(want.data()),
                                reinterpret_cast<const float*>(x.data()),
                                reinterpret_cast<const float*>(w.data()),
                                reinterpret_cast<const float*>(bias.data()), N, IC, OC, ws.data());
        else
            cpu::linear_forward(reinterpret_cast<bf16_t*>(want.data()),
                                reinterpret_cast<const bf16_t*>(x.data()),
                                reinterpret_cast<const bf16_t*>(w.data()),
                                reinterpret_cast<const bf16_t*>(bias.data()), N, IC, OC, ws.data());
        const Tensor b = tensor(bias, t, {OC});
        f.ops.gemm(f.s, tensor(x, t, {N, IC}), false, tensor(w, t, {IC, OC}), false,
                   tensor(out, t, {N, OC}), 1.0f, 0.0f, &b);
        f.s.synchronize();
        EXPECT_EQ(out, want) << dtype_name(t);
        if (t == DType::f32) { // and the bias gradient: column sums of the output as dout
            auto dbias = random_bytes(OC, t, 8), want_db = dbias;
            cpu::add_column_sums(reinterpret_cast<float*>(want_db.data()),
                                 reinterpret_cast<const float*>(out.data()), N, OC);
            f.ops.bias_grad(f.s, tensor(dbias, t, {OC}), tensor(out, t, {N, OC}));
            f.s.synchronize();
            EXPECT_EQ(dbias, want_db);
        }
    }
}

TEST(CpuOps, SquaredNormIsOneRunningDoubleSumOverThePartsInOrder) {
    Fixture f;
    auto p1 = random_bytes(1001, DType::bf16, 9), p2 = random_bytes(77, DType::bf16, 10);
    double sum = 0;
    for (auto* p : {&p1, &p2})
        for (std::size_t i = 0; i < p->size() / 2; ++i) {
            const double v = load_as_f32(p->data(), DType::bf16, i);
            sum += v * v;
        }
    float got = -1;
    f.ops.squared_norm(f.s, {tensor(p1, DType::bf16, {1001}), tensor(p2, DType::bf16, {77})}, &got);
    f.s.synchronize();
    EXPECT_EQ(got, float(sum));
}

TEST(CpuOps, AdamWUpdatesThenWritesTheRoundedParameters) {
    Fixture f;
    const std::size_t n = 5000;
    auto master = random_bytes(n, DType::f32, 11), m = random_bytes(n, DType::f32, 12);
    auto v = random_bytes(n, DType::f32, 13), g = random_bytes(n, DType::bf16, 14);
    for (std::size_t i = 0; i < n; ++i) // v >= 0
        store_from_f32(v.data(), DType::f32, i, std::fabs(load_as_f32(v.data(), DType::f32, i)));
    std::vector<char> params(n * 2, 0);
    auto w_master = master, w_m = m, w_v = v;
    std::vector<char> w_params(n * 2);
    const AdamWStep k = adamw_step(AdamWConfig{}, 1e-3f, 3, true, 0.5f);
    cpu::adamw(reinterpret_cast<float*>(w_master.data()), reinterpret_cast<float*>(w_m.data()),
               reinterpret_cast<float*>(w_v.data()), g.data(), DType::bf16, n, k);
    convert(w_master.data(), DType::f32, w_params.data(), DType::bf16, n);
    const Tensor p = tensor(params, DType::bf16, {std::int64_t(n)});
    f.ops.adamw(f.s, tensor(master, DType::f32, {std::int64_t(n)}),
                tensor(m, DType::f32, {std::int64_t(n)}), tensor(v, DType::f32, {std::int64_t(n)}),
                tensor(g, DType::bf16, {std::int64_t(n)}), &p, k);
    f.s.synchronize();
    EXPECT_EQ(master, w_master);
    EXPECT_EQ(m, w_m);
    EXPECT_EQ(v, w_v);
    EXPECT_EQ(params, w_params);
}

TEST(CpuOps, ElementwiseOpsConvertFillAndAccumulate) {
    Fixture f;
    const std::int64_t n = 333;
    auto a = random_bytes(n, DType::bf16, 15), b = random_bytes(n, DType::bf16, 16);
    auto want = a;
    cpu::accumulate(reinterpret_cast<bf16_t*>(want.data()),
                    reinterpret_cast<const bf16_t*>(b.data()), std::size_t(n));
    f.ops.accumulate(f.s, tensor(a, DType::bf16, {n}), tensor(b, DType::bf16, {n}));
    std::vector<char> wide(n * 4), want_wide(n * 4);
    f.ops.convert(f.s, tensor(wide, DType::f32, {n}), tensor(b, DType::bf16, {n}));
    convert(b.data(), DType::bf16, want_wide.data(), DType::f32, std::size_t(n));
    auto filled = random_bytes(n, DType::f16, 17);
    f.ops.fill(f.s, tensor(filled, DType::f16, {n}), 0.0f);
    f.s.synchronize();
    EXPECT_EQ(a, want);
    EXPECT_EQ(wide, want_wide);
    EXPECT_EQ(filled, std::vector<char>(n * 2, 0));
}
