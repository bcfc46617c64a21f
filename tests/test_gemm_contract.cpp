// One GEMM contract on every CPU library: c = alpha * op(a) op(b) + beta * c, or with a bias
// c = alpha * op(a) op(b) + bias (the bias unscaled, beta 0: model/ops.h), through the Ops
// interface on OpenBLAS (fp32, bf16 and fp16 widened) and oneDNN (fp32, and bf16 where this CPU
// has a kernel), whatever `auto` would pick here. Every variant — alpha 1 and not, beta 0 / 0.5 /
// 1, a bias, all four transpositions, strided batches, 1x1x1 and odd sizes — against a float64
// product of the stored inputs. A library absent for a dtype on this CPU (oneDNN 2.6 has no bf16
// matmul below AVX-512) is a skip that names the CPU, never a silent pass.
#include "core/device_context.h"
#include "model/kernels/cpu/threads.h"
#include "model/ops_cpu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace shardlab;

namespace {

struct Library {
    const char* name; // the --gemm request
    DType dtype;
};

struct Case {
    int batch, M, N, K;
    float alpha, beta;
    bool bias;
};

// The spacing of dtype t's values around |x| (its unit in the last place).
double ulp(DType t, double x) {
    const int mantissa = t == DType::f32 ? 23 : t == DType::bf16 ? 7 : 10;
    const double min_normal = t == DType::f16 ? 0x1p-14 : 0x1p-126;
    return std::ldexp(1.0, std::ilogb(std::max(std::fabs(x), min_normal)) - mantissa);
}

// The values as dtype t stores them (rounded): what the float64 reference multiplies.
std::vector<float> stored(std::vector<float> v, DType t) {
    std::vector<char> raw(dtype_size(t));
    for (float& x : v) {
        store_from_f32(raw.data(), t, 0, x);
        x = load_as_f32(raw.data(), t, 0);
    }
    return v;
}

// n values in [-1, 1], as dtype t stores them.
std::vector<float> stored_values(std::size_t n, DType t, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return stored(std::move(v), t);
}

class GemmContract : public testing::TestWithParam<Library> {
  protected:
    void SetUp() override {
        ops_ = std::make_unique<CpuOps>(ctx_->tracker(), GetParam().name);
        const bool onednn = std::string(GetParam().name) == "onednn";
        const cpu::GemmLibrary want =
            onednn ? cpu::GemmLibrary::onednn : cpu::GemmLibrary::openblas;
        if (ops_->gemm_paths().of(GetParam().dtype) != want)
            GTEST_SKIP() << "no " << GetParam().name << " " << dtype_name(GetParam().dtype)
                         << " GEMM on this CPU (vector ISA " << cpu::cpu_isa()
                         << "; oneDNN 2.6's bf16 matmul needs AVX-512): this library is not "
                            "checked here";
    }

    Tensor make(const std::vector<float>& values, Shape shape) {
        const DType t = GetParam().dtype;
        Allocation a =
            ctx_->tracker().allocate(values.size() * dtype_size(t), Category::workspace, s());
        Tensor x{a.data(), t, shape, a.device()};
        upload_f32(s(), x, values.data());
        memory_.push_back(std::move(a));
        return x;
    }
    Stream& s() { return ctx_->compute(); }
    // The OpenMP team (and so OpenBLAS's threads) of the thread the stream runs its work on.
    void threads_on_stream(int threads) {
        cpu::set_threads(threads);
        s().enqueue([threads] { cpu::set_thread_team(threads); });
        s().synchronize();
    }

    // c = a b (+ bias) at one shape, as the library computes it here: the result's bits.
    std::vector<float> product(int M, int N, int K, bool ta, bool tb, bool bias,
                               float beta = 0.0f) {
        const DType t = GetParam().dtype;
        const Tensor a =
            make(stored_values(std::size_t(M) * K, t, 5), ta ? Shape{K, M} : Shape{M, K});
        const Tensor b =
            make(stored_values(std::size_t(K) * N, t, 6), tb ? Shape{N, K} : Shape{K, N});
        const Tensor c = make(beta != 0.0f ? stored_values(std::size_t(M) * N, t, 8)
                                           : std::vector<float>(std::size_t(M) * N),
                              {M, N});
        const Tensor tbias = make(stored_values(std::size_t(N), t, 7), {N});
        ops_->gemm(s(), a, ta, b, tb, c, 1.0f, beta, bias ? &tbias : nullptr);
        return to_host_f32(s(), c);
    }

    // Runs one case with every transposition; each element within its bound of float64.
    void check(const Case& c, std::vector<float> a = {}, std::vector<float> b = {},
               std::vector<float> bias = {}) {
        const DType t = GetParam().dtype;
        const int B = c.batch, M = c.M, N = c.N, K = c.K;
        a = a.empty() ? stored_values(std::size_t(B) * M * K, t, 1) : stored(a, t);
        b = b.empty() ? stored_values(std::size_t(B) * K * N, t, 2) : stored(b, t);
        bias = bias.empty() ? stored_values(std::size_t(N), t, 4) : stored(bias, t);
        const std::vector<float> c0 = stored_values(std::size_t(B) * M * N, t, 3);
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                SCOPED_TRACE(testing::Message()
                             << "batch " << B << " " << M << "x" << N << "x" << K << " alpha "
                             << c.alpha << " beta " << c.beta << " bias " << c.bias << " ta " << ta
                             << " tb " << tb);
                const auto shape = [&](int rows, int cols) {
                    return B > 1 ? Shape{B, rows, cols} : Shape{rows, cols};
                };
                // a is stored [M, K] or, transposed, [K, M]: the same values read through op().
                const Tensor ta_ = make(a, ta ? shape(K, M) : shape(M, K));
                const Tensor tb_ = make(b, tb ? shape(N, K) : shape(K, N));
                const Tensor tc = make(c0, shape(M, N)), tbias = make(bias, {N});
                ops_->gemm(s(), ta_, ta, tb_, tb, tc, c.alpha, c.beta, c.bias ? &tbias : nullptr);
                const std::vector<float> got = to_host_f32(s(), tc);
                expect_within(c, ta, tb, a, b, bias, c0, got);
            }
    }

  private:
    // Bound per element, from precision: the library sums K products in fp32 in some order and
    // then scales, adds beta * c and the bias — at most K + 3 roundings of unit 2^-24 on
    // partial sums no larger than the sum of the terms' magnitudes, so |error| <= (K + 3) 2^-24
    // (|alpha| sum|a b| + |beta c| + |bias|); a 16-bit result is then rounded once more, which
    // moves it by at most one unit in its last place. (A scaled bias errs by |alpha - 1| |bias|,
    // ~0.25 here: a thousand times the bound.)
    void expect_within(const Case& c, bool ta, bool tb, const std::vector<float>& a,
                       const std::vector<float>& b, const std::vector<float>& bias,
                       const std::vector<float>& c0, const std::vector<float>& got) {
        const DType t = GetParam().dtype;
        const int M = c.M, N = c.N, K = c.K;
        int reported = 0;
        for (int i = 0; i < c.batch; ++i)
            for (int m = 0; m < M; ++m)
                for (int n = 0; n < N; ++n) {
                    double sum = 0, mag = 0;
                    for (int k = 0; k < K; ++k) {
                        const double p =
                            double(a[std::size_t(i) * M * K +
                                     (ta ? std::size_t(k) * M + m : std::size_t(m) * K + k)]) *
                            b[std::size_t(i) * K * N +
                              (tb ? std::size_t(n) * K + k : std::size_t(k) * N + n)];
                        sum += p, mag += std::fabs(p);
                    }
                    const std::size_t o = (std::size_t(i) * M + m) * N + n;
                    const double add = c.bias ? double(bias[n]) : double(c.beta) * c0[o];
                    const double want = double(c.alpha) * sum + add;
                    const double bound =
                        (K + 3) * 0x1p-24 * (std::fabs(c.alpha) * mag + std::fabs(add)) +
                        (t == DType::f32 ? 0.0 : ulp(t, want));
                    const double d = std::fabs(double(got[o]) - want);
                    if (!(d <= bound) && reported++ < 3)
                        ADD_FAILURE() << "c[" << o << "]: got " << got[o] << ", float64 " << want
                                      << ": off by " << d << " > bound " << bound;
                }
    }

    std::unique_ptr<DeviceContext> ctx_ = make_cpu_context();
    std::unique_ptr<CpuOps> ops_;
    std::vector<Allocation> memory_;
};

// The variants of the contract, on odd sizes and strided batches.
TEST_P(GemmContract, EveryVariantMatchesFloat64WithinTheAccumulationBound) {
    for (const Case shape : {Case{1, 1, 1, 1, 0, 0, false}, Case{1, 33, 65, 17, 0, 0, false},
                             Case{3, 5, 9, 11, 0, 0, false}})
        for (float alpha : {1.0f, 0.75f, -1.5f}) {
            for (float beta : {0.0f, 0.5f, 1.0f}) {
                Case c = shape;
                c.alpha = alpha, c.beta = beta;
                check(c);
            }
            Case c = shape; // with a bias: beta 0, the bias added unscaled
            c.alpha = alpha, c.bias = true;
            check(c);
        }
}

// The H200's failure, reproduced on the CPU: oneDNN 2.6's output scale also scaled the bias and
// gave alpha (a b + bias) = -0.014984 where cuBLAS (and the contract) give alpha a b + bias.
TEST_P(GemmContract, OneByOneWithABiasIsAlphaABPlusTheBias) {
    check(Case{1, 1, 1, 1, 0.75f, 0.0f, true}, {-0.732246757f}, {0.807208061f}, {0.571096539f});
}

// The thread count changes no bit (issue 23: the default --threads changes with the ranks per
// node, so a result that depended on it would differ between rank counts). OpenBLAS's own
// threading fails this: each thread's slice of the output runs other edge kernels, which sum K
// in another order (measured on the tiny model's shapes below, about a quarter of the elements
// off by an ulp) — so shardlab splits the columns itself, in fixed blocks (kernels/cpu/gemm.h).
// The threads are set as a training stream sets them, on the stream's own thread: OpenBLAS
// follows the calling thread's OpenMP team, so setting them on the test's thread changed nothing
// (this test once passed while the bits did change).
TEST_P(GemmContract, TheThreadCountChangesNoBit) {
    if (std::string(GetParam().name) == "onednn")
        GTEST_SKIP() << "oneDNN threads its matmul itself and its bits change with the thread "
                        "count (measured: this test fails for it); --reproducible therefore "
                        "multiplies with OpenBLAS (docs/DECISIONS.md)";
    struct Shape3 {
        int M, N, K;
        bool ta, tb, bias;
    };
    const int saved = cpu::current_threads();
    for (const Shape3 c :
         {Shape3{256, 192, 320, false, false, true}, Shape3{64, 48, 2048, true, false, false},
          Shape3{256, 320, 192, false, true, false},
          // the tiny preset's (d 256, one sequence of 256 tokens): forward x W, input and weight
          // gradients of the MLP and the tied head
          Shape3{256, 1024, 256, false, true, true}, Shape3{256, 256, 1024, false, false, false},
          Shape3{1024, 256, 256, true, false, false}, Shape3{256, 768, 256, false, true, true},
          Shape3{768, 256, 256, true, false, false}, Shape3{256, 256, 256, false, true, false},
          Shape3{256, 256, 256, true, false, false}, Shape3{64, 1024, 256, false, true, true},
          Shape3{64, 256, 1024, false, false, false}, Shape3{1024, 256, 64, true, false, false},
          Shape3{64, 768, 256, false, true, true}, Shape3{768, 256, 64, true, false, false},
          Shape3{64, 256, 256, false, true, false}, Shape3{256, 256, 64, true, false, false},
          Shape3{64, 256, 256, false, false, false}, Shape3{64, 768, 256, false, false, true},
          Shape3{64, 1024, 256, false, false, true}, Shape3{64, 256, 1024, false, false, true},
          Shape3{64, 256, 256, false, false, true}}) {
        SCOPED_TRACE(testing::Message()
                     << c.M << "x" << c.N << "x" << c.K << " ta " << c.ta << " tb " << c.tb);
        for (float beta : {0.0f, 1.0f}) { // 1: a weight gradient accumulating
            if (c.bias && beta != 0.0f) continue;
            threads_on_stream(1);
            const std::vector<float> one = product(c.M, c.N, c.K, c.ta, c.tb, c.bias, beta);
            for (int threads : {2, 3}) {
                threads_on_stream(threads);
                const std::vector<float> other = product(c.M, c.N, c.K, c.ta, c.tb, c.bias, beta);
                EXPECT_EQ(std::memcmp(one.data(), other.data(), one.size() * sizeof(float)), 0)
                    << threads << " threads give other bits than 1 (beta " << beta << ")";
            }
        }
    }
    threads_on_stream(saved);
}

const Library kLibraries[] = {{"openblas", DType::f32},
                              {"openblas", DType::bf16},
                              {"openblas", DType::f16},
                              {"onednn", DType::f32},
                              {"onednn", DType::bf16}};

INSTANTIATE_TEST_SUITE_P(Library, GemmContract, testing::ValuesIn(kLibraries),
                         [](const testing::TestParamInfo<Library>& p) {
                             return std::string(p.param.name) + "_" + dtype_name(p.param.dtype);
                         });

} // namespace
