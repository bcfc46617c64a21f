// The CPU backend's Ops against the kernels they dispatch to, bitwise (GEMMs on the library
// $SHARDLAB_GEMM or auto picks; test_ops_cpu_onednn forces oneDNN): every dtype, GEMM with
// both transposes, alpha / beta, a bias and strided batches (a loop of 2-D products), the
// squared norm (eight interleaved double sums in a fixed order, whatever the split into parts),
// AdamW writing the rounded parameters (one tensor, and several in one team against a scalar loop),
// and the element-wise ops — all enqueued on a worker-thread stream, read after synchronising. Then
// the GEMM's two libraries (oneDNN, OpenBLAS) against a float64 product, within bounds argued from
// fp32 / bf16 precision, and oneDNN's product repeatable bit for bit.
#include "core/device_context.h"
#include "core/error.h"
#include "model/kernels/cpu/adamw.h"
#include "model/kernels/cpu/cpu_gemm.h"
#include "model/kernels/cpu/gemm.h"
#include "model/kernels/cpu/linear.h"
#include "model/kernels/cpu/residual.h"
#include "model/ops_cpu.h"
#include "optim/adamw.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace shardlab;

namespace {
struct Fixture {
    std::unique_ptr<DeviceContext> ctx = make_cpu_context();
    // $SHARDLAB_GEMM or auto (test_ops_cpu_onednn forces oneDNN): GEMMs bitwise against a
    // CpuGemm of the same request, run on the matrices one by one.
    CpuOps cpu_ops{ctx->tracker(), ""};
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

// One 2-D product (row-major, packed) through CpuGemm on the library the request picks.
void reference_gemm(DType t, bool ta, bool tb, int M, int N, int K, float alpha, const void* A,
                    const void* B, float beta, void* C, const void* bias = nullptr) {
    cpu::CpuGemm gemm(cpu::default_gemm_request());
    cpu::MatmulShape m;
    m.dtype = t, m.trans_a = ta, m.trans_b = tb, m.M = M, m.N = N, m.K = K;
    m.lda = ta ? M : K, m.ldb = tb ? K : N, m.ldc = N;
    m.alpha = alpha, m.beta = beta, m.bias = bias != nullptr;
    std::vector<char> ws(gemm.workspace_bytes(m) + 1);
    gemm.run(m, A, B, bias, C, ws.data());
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
        reference_gemm(t, false, false, N, OC, IC, 1.0f, x.data(), w.data(), 0.0f, want.data(),
                       bias.data());
        if (f.cpu_ops.gemm_paths().of(t) == cpu::GemmLibrary::openblas) {
            // On OpenBLAS that is the linear layer's kernel, bit for bit.
            auto linear = out;
            std::vector<float> ws(1 << 12);
            if (t == DType::f32)
                cpu::linear_forward(reinterpret_cast<float*>(linear.data()),
                                    reinterpret_cast<const float*>(x.data()),
                                    reinterpret_cast<const float*>(w.data()),
                                    reinterpret_cast<const float*>(bias.data()), N, IC, OC,
                                    ws.data());
            else
                cpu::linear_forward(reinterpret_cast<bf16_t*>(linear.data()),
                                    reinterpret_cast<const bf16_t*>(x.data()),
                                    reinterpret_cast<const bf16_t*>(w.data()),
                                    reinterpret_cast<const bf16_t*>(bias.data()), N, IC, OC,
                                    ws.data());
            EXPECT_EQ(linear, want) << dtype_name(t);
        }
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

TEST(CpuOps, SquaredNormIsEightInterleavedDoubleSumsOverThePartsInOrder) {
    Fixture f;
    auto p1 = random_bytes(1001, DType::bf16, 9), p2 = random_bytes(77, DType::bf16, 10);
    double lane[8] = {}; // element k of the concatenation into lane k % 8
    std::size_t k = 0;
    for (auto* p : {&p1, &p2})
        for (std::size_t i = 0; i < p->size() / 2; ++i, ++k) {
            const double v = load_as_f32(p->data(), DType::bf16, i);
            lane[k % 8] += v * v;
        }
    const double sum =
        ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    float got = -1;
    f.ops.squared_norm(f.s, {tensor(p1, DType::bf16, {1001}), tensor(p2, DType::bf16, {77})}, &got);
    f.s.synchronize();
    EXPECT_EQ(got, float(sum));
    // The same sequence split differently (as the ZeRO stages split it) gives the same bits.
    std::vector<char> all(p1);
    all.insert(all.end(), p2.begin(), p2.end());
    std::vector<char> a(all.begin(), all.begin() + 2 * 13), b(all.begin() + 2 * 13, all.end());
    float split = -2;
    f.ops.squared_norm(f.s, {tensor(a, DType::bf16, {13}), tensor(b, DType::bf16, {1065})}, &split);
    f.s.synchronize();
    EXPECT_EQ(split, got);
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
    f.ops.adamw(
        f.s, {{tensor(master, DType::f32, {std::int64_t(n)}),
               tensor(m, DType::f32, {std::int64_t(n)}), tensor(v, DType::f32, {std::int64_t(n)}),
               tensor(g, DType::bf16, {std::int64_t(n)}), p, k}});
    f.s.synchronize();
    EXPECT_EQ(master, w_master);
    EXPECT_EQ(m, w_m);
    EXPECT_EQ(v, w_v);
    EXPECT_EQ(params, w_params);
}

// One AdamW element as model/kernels/adamw_step.h writes it, in the kernel's order of operations
// (the build has no fused multiply-adds, so the same expression rounds the same).
void adamw_element(float& p, float& m, float& v, float g, const AdamWStep& k) {
    const float gi = g * k.grad_scale;
    m = k.b1 * m + (1.0f - k.b1) * gi;
    v = k.b2 * v + (1.0f - k.b2) * gi * gi;
    p = p * k.keep - k.step_size * m / (std::sqrt(v) * k.inv_bc2_sqrt + k.eps);
}

// The tensors of an update in one team: sizes below, at and across the kernel's 4096-element
// tiles, 1 element, gradients in fp32, bf16 and fp16, with and without rounded parameters and
// weight decay; against a scalar loop per element, at 1, 2 and 3 threads.
TEST(CpuOps, AdamWOverSeveralTensorsIsEachElementsUpdateAtAnyThreadCount) {
    struct Case {
        std::size_t n;
        DType grad, params; // params f32 here: no rounded copy
        bool decay;
    };
    const std::vector<Case> cases = {{3, DType::bf16, DType::bf16, true},
                                     {5000, DType::f32, DType::bf16, false},
                                     {4097, DType::bf16, DType::f32, true},
                                     {1, DType::f16, DType::f16, true},
                                     {8193, DType::f16, DType::bf16, false}};
    for (int threads : {1, 2, 3}) {
        std::vector<std::vector<char>> master, m, v, g, params;
        std::vector<cpu::AdamWSegment> segments;
        for (std::size_t c = 0; c < cases.size(); ++c) {
            const Case& x = cases[c];
            master.push_back(random_bytes(x.n, DType::f32, 100 + c));
            m.push_back(random_bytes(x.n, DType::f32, 200 + c));
            v.push_back(random_bytes(x.n, DType::f32, 300 + c));
            g.push_back(random_bytes(x.n, x.grad, 400 + c));
            params.push_back(std::vector<char>(x.n * dtype_size(x.params), 0));
        }
        for (std::size_t c = 0; c < cases.size(); ++c) {
            const Case& x = cases[c];
            for (std::size_t i = 0; i < x.n; ++i) // v >= 0
                store_from_f32(v[c].data(), DType::f32, i,
                               std::fabs(load_as_f32(v[c].data(), DType::f32, i)));
            const bool rounded = x.params != DType::f32;
            segments.push_back({reinterpret_cast<float*>(master[c].data()),
                                reinterpret_cast<float*>(m[c].data()),
                                reinterpret_cast<float*>(v[c].data()), g[c].data(), x.grad,
                                rounded ? params[c].data() : nullptr, x.params, x.n,
                                adamw_step(AdamWConfig{}, 1e-3f, 7, x.decay, 0.25f)});
        }
        auto want_master = master, want_m = m, want_v = v, want_params = params;
        for (std::size_t c = 0; c < cases.size(); ++c)
            for (std::size_t i = 0; i < cases[c].n; ++i) {
                float* p = reinterpret_cast<float*>(want_master[c].data()) + i;
                adamw_element(*p, reinterpret_cast<float*>(want_m[c].data())[i],
                              reinterpret_cast<float*>(want_v[c].data())[i],
                              load_as_f32(g[c].data(), cases[c].grad, i), segments[c].k);
                if (cases[c].params != DType::f32)
                    store_from_f32(want_params[c].data(), cases[c].params, i, *p);
            }
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        cpu::adamw(segments);
        omp_set_num_threads(before);
        for (std::size_t c = 0; c < cases.size(); ++c) {
            SCOPED_TRACE("threads " + std::to_string(threads) + ", tensor " + std::to_string(c));
            EXPECT_EQ(master[c], want_master[c]);
            EXPECT_EQ(m[c], want_m[c]);
            EXPECT_EQ(v[c], want_v[c]);
            EXPECT_EQ(params[c], want_params[c]);
        }
    }
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

namespace {
// alpha * op(A) op(B) + bias + beta * C in float64 from the stored values; also the sum of the
// magnitudes of every term, which bounds the rounding error of any summation order.
void float64_gemm(const cpu::MatmulShape& m, const std::vector<char>& A, const std::vector<char>& B,
                  const std::vector<char>& bias, const std::vector<char>& C,
                  std::vector<double>& out, std::vector<double>& magnitude) {
    for (int i = 0; i < m.M; ++i)
        for (int j = 0; j < m.N; ++j) {
            double sum = 0, mag = 0;
            for (int k = 0; k < m.K; ++k) {
                const std::size_t ia =
                    m.trans_a ? std::size_t(k) * m.lda + i : std::size_t(i) * m.lda + k;
                const std::size_t ib =
                    m.trans_b ? std::size_t(j) * m.ldb + k : std::size_t(k) * m.ldb + j;
                const double p =
                    double(load_as_f32(A.data(), m.dtype, ia)) * load_as_f32(B.data(), m.dtype, ib);
                sum += p, mag += std::fabs(p);
            }
            const double c = load_as_f32(C.data(), m.dtype, std::size_t(i) * m.ldc + j);
            const double b = m.bias ? load_as_f32(bias.data(), m.dtype, j) : 0.0;
            out[std::size_t(i) * m.N + j] = m.alpha * sum + b + m.beta * c;
            magnitude[std::size_t(i) * m.N + j] =
                std::fabs(m.alpha) * mag + std::fabs(b) + std::fabs(m.beta * c);
        }
}
} // namespace

// Both libraries, every transpose, alpha / beta, a bias, leading dimensions wider than the rows.
// Bound per element: fp32 accumulation of K terms errs by at most about K * 2^-24 of the sum of
// their magnitudes (taken as 2K * 2^-24 for slack); a 16-bit result adds one rounding of the
// result, 2^-8 relative for bf16 (half an ulp of an 8-bit significand). oneDNN without a bf16
// kernel on this CPU (no AVX-512) keeps bf16 on OpenBLAS, which CpuGemm reports and this test then
// checks.
TEST(CpuGemm, BothLibrariesMatchFloat64WithinPrecision) {
    auto ctx = make_cpu_context();
    for (const char* library : {"openblas", "onednn"}) {
        cpu::CpuGemm gemm(library);
        for (DType t : {DType::f32, DType::bf16})
            for (int variant = 0; variant < 8; ++variant) {
                cpu::MatmulShape m;
                m.dtype = t;
                m.trans_a = variant & 1, m.trans_b = variant & 2;
                const bool with_bias = variant & 4;
                m.M = 37, m.N = 29, m.K = 53;
                m.lda = (m.trans_a ? m.M : m.K) + 3, m.ldb = (m.trans_b ? m.K : m.N) + 5;
                m.ldc = m.N;
                m.alpha = with_bias ? 1.0f : 0.5f, m.beta = with_bias ? 0.0f : 1.0f;
                m.bias = with_bias;
                SCOPED_TRACE(testing::Message()
                             << library << " " << dtype_name(t) << " variant " << variant);
                auto A = random_bytes(std::size_t(m.trans_a ? m.K : m.M) * m.lda, t, 11);
                auto B = random_bytes(std::size_t(m.trans_b ? m.N : m.K) * m.ldb, t, 12);
                auto C = random_bytes(std::size_t(m.M) * m.N, t, 13);
                auto bias = random_bytes(m.N, t, 14);
                std::vector<double> want(C.size() / dtype_size(t)), mag(want.size());
                float64_gemm(m, A, B, bias, C, want, mag);
                auto C2 = C;
                std::vector<char> ws(gemm.workspace_bytes(m) + 1);
                gemm.run(m, A.data(), B.data(), bias.data(), C.data(), ws.data());
                gemm.run(m, A.data(), B.data(), bias.data(), C2.data(), ws.data());
                EXPECT_EQ(C, C2) << "the same product twice gave different bits";
                const double round = t == DType::f32 ? 0.0 : std::ldexp(1.0, -8);
                for (std::size_t i = 0; i < want.size(); ++i) {
                    const double got = load_as_f32(C.data(), t, i);
                    const double bound =
                        2 * m.K * std::ldexp(1.0, -24) * mag[i] + round * std::fabs(want[i]);
                    ASSERT_LE(std::fabs(got - want[i]), bound) << "element " << i;
                }
            }
        const bool onednn = std::string(library) == "onednn";
        EXPECT_EQ(gemm.paths().f32 == cpu::GemmLibrary::onednn, onednn);
        if (onednn && gemm.paths().bf16 != cpu::GemmLibrary::onednn)
            std::printf("note: oneDNN has no bf16 matmul on this CPU (%s); bf16 stayed on "
                        "OpenBLAS\n",
                        cpu::cpu_isa().c_str());
    }
}

TEST(CpuGemm, UnknownLibraryIsAUsageErrorNamingTheChoices) {
    try {
        cpu::CpuGemm gemm("mkl");
        FAIL() << "accepted --gemm mkl";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("auto, openblas or onednn"), std::string::npos);
    }
}
