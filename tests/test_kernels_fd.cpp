// CPU kernels, checked in float64: every backward against central finite differences of its own
// forward, for every element of every differentiable input; GEMM in all four transpose
// combinations against gradients written out independently here; the documented overwrite-versus-
// accumulate contract of each backward; bitwise determinism of every kernel run twice; and the
// fp32 / bf16 / fp16 instantiations against the double one on the same (representable) inputs.
//
// Finite-difference tolerance. Each kernel is run with T = double and a scalar L = sum(dout * out)
// (for cross-entropy, the returned mean loss) is differentiated by (L(x+h) - L(x-h)) / 2h with
// h = 1e-6. Truncation error is h^2/6 * |L'''| ~ 1e-13 here (inputs in [-1, 1], so third
// derivatives are O(1)); rounding error is ~ eps * S / h, with S the sum of the magnitudes that
// make up L (a few tens on these shapes): 2e-16 * 50 / 1e-6 ~ 1e-8. So
//     max |analytic - numeric| <= 1e-6 * max(1, max |analytic|)
// leaves two orders of magnitude of headroom, while a wrong gradient (a missing term, a transposed
// index, a wrong scale) is off by O(0.01 .. 1) and fails by four orders or more.
//
// Mixed-precision tolerance (relative: ||got - ref|| / ||ref||). Inputs are first rounded to the
// storage type, so the double reference sees exactly the same values and only the kernels'
// arithmetic differs. fp32 computes with unit roundoff 6e-8; sums of up to ~100 terms give
// ~1e-6 at worst: bound 1e-5. bf16 / fp16 compute in fp32 and round what they store (outputs,
// and attention probabilities before P.V) once, with unit roundoff 2^-9 ~ 2e-3 and 2^-11 ~ 5e-4:
// bounds 2e-2 and 5e-3, ten times those.
#include "model/kernels/cpu/adamw.h"
#include "model/kernels/cpu/attention.h"
#include "model/kernels/cpu/cross_entropy.h"
#include "model/kernels/cpu/embedding.h"
#include "model/kernels/cpu/gelu.h"
#include "model/kernels/cpu/gemm.h"
#include "model/kernels/cpu/layernorm.h"
#include "model/kernels/cpu/linear.h"
#include "model/kernels/cpu/numeric.h"
#include "model/kernels/cpu/residual.h"
#include "model/kernels/cpu/threads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace shardlab;
using namespace shardlab::cpu;

namespace {

constexpr double kH = 1e-6;     // finite-difference step
constexpr double kFdTol = 1e-6; // relative to max(1, max |analytic|); see the header comment
constexpr float kAlpha = 0.75f; // GEMM scalars: exact in float and double
constexpr float kBeta = 0.5f;

using Vec = std::vector<double>;

// GEMM workspace for 16-bit widening, more than these small shapes need (gemm_workspace_floats).
struct Workspace {
    std::vector<float> floats = std::vector<float>(std::size_t(1) << 20);
    float* ws = floats.data();
};

struct Dims {
    int B, T, C, H, OC, V;
    int N() const { return B * T; }
};
constexpr Dims kTiny{2, 5, 8, 2, 12, 11};      // the finite-difference checks
constexpr Dims kMedium{2, 16, 32, 4, 48, 101}; // determinism and mixed precision

// Every input of every kernel, in double. GEMM reuses x as A (M = N rows, K = C) and w as B.
struct Problem {
    Dims d;
    Vec x, w, bias, dout_lin; // linear: inp [N, C], weight [C, OC], bias [OC], dout [N, OC]
    Vec ln_w, ln_b, dout_c;   // layernorm weight / bias [C]; an upstream gradient [N, C]
    Vec qkv;                  // attention input [N, 3C]
    Vec gelu_in, y;           // GELU input [N, C]; the residual's second operand [N, C]
    Vec wte, wpe;             // embeddings [V, C], [T, C]
    Vec logits;               // [N, V]
    Vec gemm_c0;              // GEMM's initial C [N, OC] (beta != 0)
    std::vector<std::uint16_t> tokens, targets; // [N]

    template <typename F>
    void for_each_array(F&& f) {
        for (Vec* v : {&x, &w, &bias, &dout_lin, &ln_w, &ln_b, &dout_c, &qkv, &gelu_in, &y, &wte,
                       &wpe, &logits, &gemm_c0})
            f(*v);
    }
};

Problem make_problem(const Dims& d, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto rand = [&](std::size_t n, double lo = -1.0, double hi = 1.0) {
        Vec v(n);
        for (double& e : v) e = lo + (hi - lo) * (u(rng) + 1.0) / 2.0;
        return v;
    };
    const std::size_t N = d.N(), C = d.C;
    Problem p;
    p.d = d;
    p.x = rand(N * C);
    p.w = rand(C * d.OC);
    p.bias = rand(d.OC);
    p.dout_lin = rand(N * d.OC);
    p.ln_w = rand(C, 0.8, 1.2); // LayerNorm weights around 1
    p.ln_b = rand(C);
    p.dout_c = rand(N * C);
    p.qkv = rand(N * 3 * C);
    p.gelu_in = rand(N * C, -3.0, 3.0); // wider, to reach into the tanh's curved region
    p.y = rand(N * C);
    p.wte = rand(std::size_t(d.V) * C);
    p.wpe = rand(std::size_t(d.T) * C);
    p.logits = rand(N * d.V);
    p.gemm_c0 = rand(N * d.OC);
    // Even token ids only: odd rows of wte are never used, and (N > V/2 + 1) some even ones repeat.
    std::uniform_int_distribution<int> even(0, (d.V - 1) / 2), any(0, d.V - 1);
    for (std::size_t i = 0; i < N; ++i) {
        p.tokens.push_back(std::uint16_t(2 * even(rng)));
        p.targets.push_back(std::uint16_t(any(rng)));
    }
    return p;
}

double dot(const Vec& a, const Vec& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// Compares `analytic` (dL/dx) with central differences of `loss` in every element of x, which it
// perturbs in place and restores. Returns the largest absolute difference.
double check_gradient(const std::string& name, Vec& x, const Vec& analytic,
                      const std::function<double()>& loss) {
    EXPECT_EQ(x.size(), analytic.size()) << name;
    if (x.size() != analytic.size()) return INFINITY;
    double max_err = 0, max_abs = 0, worst_numeric = 0;
    std::size_t worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double x0 = x[i];
        x[i] = x0 + kH;
        const double lp = loss();
        x[i] = x0 - kH;
        const double lm = loss();
        x[i] = x0;
        const double numeric = (lp - lm) / (2 * kH);
        const double err = std::abs(analytic[i] - numeric);
        if (err > max_err || i == 0) {
            max_err = err;
            worst = i;
            worst_numeric = numeric;
        }
        max_abs = std::max(max_abs, std::abs(analytic[i]));
    }
    const double tol = kFdTol * std::max(1.0, max_abs);
    EXPECT_LE(max_err, tol) << name << ": element " << worst << " analytic " << analytic[worst]
                            << " numeric " << worst_numeric;
    std::printf("[   fd     ] %-26s max|analytic - numeric| = %.2e  (max|analytic| = %.2f)\n",
                name.c_str(), max_err, max_abs);
    return max_err;
}

// Storage-type conversions: S values from doubles (through the compute type) and back.
template <typename S>
std::vector<S> to_s(const Vec& v) {
    std::vector<S> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = from_acc<S>(acc_t<S>(v[i]));
    return r;
}
template <typename S>
Vec to_double(const std::vector<S>& v) {
    Vec r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = double(to_acc(v[i]));
    return r;
}
template <typename S>
Problem quantized(Problem p) {
    p.for_each_array([](Vec& v) { v = to_double(to_s<S>(v)); });
    return p;
}

using Named = std::vector<std::pair<std::string, Vec>>;

// Runs every kernel, forward and backward, in storage type S on p's inputs (gradient buffers
// fresh and zeroed); returns every output, widened to double, under a name.
template <typename S>
Named run_all(const Problem& p, float* ws) {
    const int B = p.d.B, T = p.d.T, C = p.d.C, H = p.d.H, OC = p.d.OC, V = p.d.V, N = p.d.N();
    const std::size_t nc = std::size_t(N) * C;
    const auto x = to_s<S>(p.x), w = to_s<S>(p.w), bias = to_s<S>(p.bias);
    const auto dout_lin = to_s<S>(p.dout_lin), dout_c = to_s<S>(p.dout_c);
    Named r;

    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            auto c = to_s<S>(p.gemm_c0);
            gemm<S>(ta, tb, N, OC, C, kAlpha, x.data(), ta ? N : C, w.data(), tb ? C : OC, kBeta,
                    c.data(), OC, ws);
            r.emplace_back(std::string("gemm ") + (ta ? "T" : "N") + (tb ? "T" : "N"),
                           to_double(c));
        }

    {
        std::vector<S> out(std::size_t(N) * OC), dinp(nc, S{}), dw(std::size_t(C) * OC, S{}),
            db(OC, S{});
        linear_forward<S>(out.data(), x.data(), w.data(), bias.data(), N, C, OC, ws);
        linear_backward<S>(dinp.data(), dw.data(), db.data(), dout_lin.data(), x.data(), w.data(),
                           N, C, OC, ws);
        r.emplace_back("linear out", to_double(out));
        r.emplace_back("linear dinp", to_double(dinp));
        r.emplace_back("linear dweight", to_double(dw));
        r.emplace_back("linear dbias", to_double(db));
    }
    {
        const auto lw = to_s<S>(p.ln_w), lb = to_s<S>(p.ln_b);
        std::vector<S> out(nc), dinp(nc, S{}), dw(C, S{}), db(C, S{});
        std::vector<acc_t<S>> mean(N), rstd(N);
        layernorm_forward<S>(out.data(), mean.data(), rstd.data(), x.data(), lw.data(), lb.data(),
                             N, C);
        layernorm_backward<S>(dinp.data(), dw.data(), db.data(), dout_c.data(), x.data(), lw.data(),
                              mean.data(), rstd.data(), N, C);
        r.emplace_back("layernorm out", to_double(out));
        r.emplace_back("layernorm mean", Vec(mean.begin(), mean.end()));
        r.emplace_back("layernorm rstd", Vec(rstd.begin(), rstd.end()));
        r.emplace_back("layernorm dinp", to_double(dinp));
        r.emplace_back("layernorm dweight", to_double(dw));
        r.emplace_back("layernorm dbias", to_double(db));
    }
    {
        const auto qkv = to_s<S>(p.qkv);
        std::vector<S> out(nc), att(std::size_t(B) * H * T * T), dqkv(3 * nc, S{});
        attention_forward<S>(out.data(), att.data(), qkv.data(), B, T, C, H);
        attention_backward<S>(dqkv.data(), dout_c.data(), qkv.data(), att.data(), B, T, C, H);
        r.emplace_back("attention out", to_double(out));
        r.emplace_back("attention att", to_double(att));
        r.emplace_back("attention dqkv", to_double(dqkv));
    }
    {
        const auto in = to_s<S>(p.gelu_in);
        std::vector<S> out(nc), dinp(nc, S{});
        gelu_forward<S>(out.data(), in.data(), nc);
        gelu_backward<S>(dinp.data(), in.data(), dout_c.data(), nc);
        r.emplace_back("gelu out", to_double(out));
        r.emplace_back("gelu dinp", to_double(dinp));
    }
    {
        const auto wte = to_s<S>(p.wte), wpe = to_s<S>(p.wpe);
        std::vector<S> out(nc), dwte(wte.size(), S{}), dwpe(wpe.size(), S{});
        embedding_forward<S>(out.data(), p.tokens.data(), wte.data(), wpe.data(), B, T, C);
        embedding_backward<S>(dwte.data(), dwpe.data(), dout_c.data(), p.tokens.data(), B, T, C, V);
        r.emplace_back("embedding out", to_double(out));
        r.emplace_back("embedding dwte", to_double(dwte));
        r.emplace_back("embedding dwpe", to_double(dwpe));
    }
    {
        auto z = to_s<S>(p.logits);
        const double loss = softmax_cross_entropy<S>(z.data(), p.targets.data(), N, V, V, 1.0f / N);
        r.emplace_back("cross_entropy loss", Vec{loss});
        r.emplace_back("cross_entropy dlogits", to_double(z));
    }
    {
        const auto y = to_s<S>(p.y);
        std::vector<S> out(nc), acc = x;
        residual_forward<S>(out.data(), x.data(), y.data(), nc);
        accumulate<S>(acc.data(), y.data(), nc);
        r.emplace_back("residual out", to_double(out));
        r.emplace_back("accumulate dst", to_double(acc));
    }
    return r;
}

double rel_diff(const Vec& got, const Vec& ref) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return std::sqrt(num) / std::sqrt(den);
}

} // namespace

// ---- finite differences, T = double ----

// The checks call each forward thousands of times on tiny shapes, where OpenMP's fork / join (and
// its spin-waiting, on a loaded machine) would cost far more than the arithmetic: they run on one
// thread. The threaded paths run in the determinism and mixed-precision tests below.
class KernelsFd : public ::testing::Test {
  protected:
    void SetUp() override {
        saved_threads_ = current_threads();
        set_threads(1);
    }
    void TearDown() override { set_threads(saved_threads_); }

  private:
    int saved_threads_ = 1;
};

TEST_F(KernelsFd, GemmAllTransposes) {
    // C = alpha op(A) op(B) + beta C0 with op(A) M x K, op(B) K x N; L = sum(dC * C). Gradients
    // by hand: d op(A) = alpha dC op(B)^T, d op(B) = alpha op(A)^T dC, dC0 = beta dC.
    Workspace f;
    Problem p = make_problem(kTiny, 11);
    const int M = p.d.N(), N = p.d.OC, K = p.d.C;
    const Vec& dc = p.dout_lin;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            const std::string tag = std::string("gemm ") + (ta ? "T" : "N") + (tb ? "T" : "N");
            const int lda = ta ? M : K, ldb = tb ? K : N;
            auto ia = [&](int i, int k) {
                return ta ? std::size_t(k) * M + i : std::size_t(i) * K + k;
            };
            auto ib = [&](int k, int j) {
                return tb ? std::size_t(j) * K + k : std::size_t(k) * N + j;
            };
            Vec c(p.gemm_c0.size());
            auto loss = [&] {
                c = p.gemm_c0;
                gemm<double>(ta, tb, M, N, K, kAlpha, p.x.data(), lda, p.w.data(), ldb, kBeta,
                             c.data(), N, f.ws);
                return dot(dc, c);
            };
            Vec da(p.x.size(), 0.0), db(p.w.size(), 0.0), dc0(dc.size());
            for (int i = 0; i < M; ++i)
                for (int k = 0; k < K; ++k)
                    for (int j = 0; j < N; ++j) {
                        const double g = dc[std::size_t(i) * N + j];
                        da[ia(i, k)] += kAlpha * g * p.w[ib(k, j)];
                        db[ib(k, j)] += kAlpha * p.x[ia(i, k)] * g;
                    }
            for (std::size_t i = 0; i < dc.size(); ++i) dc0[i] = kBeta * dc[i];
            check_gradient(tag + " dA", p.x, da, loss);
            check_gradient(tag + " dB", p.w, db, loss);
            check_gradient(tag + " dC0", p.gemm_c0, dc0, loss);
        }
}

TEST_F(KernelsFd, Linear) {
    Workspace f;
    Problem p = make_problem(kTiny, 1);
    const int N = p.d.N(), C = p.d.C, OC = p.d.OC;
    Vec out(std::size_t(N) * OC);
    auto loss = [&] {
        linear_forward<double>(out.data(), p.x.data(), p.w.data(), p.bias.data(), N, C, OC, f.ws);
        return dot(p.dout_lin, out);
    };
    Vec dinp(p.x.size(), 0.0), dw(p.w.size(), 0.0), db(p.bias.size(), 0.0);
    linear_backward<double>(dinp.data(), dw.data(), db.data(), p.dout_lin.data(), p.x.data(),
                            p.w.data(), N, C, OC, f.ws);
    check_gradient("linear dinp", p.x, dinp, loss);
    check_gradient("linear dweight", p.w, dw, loss);
    check_gradient("linear dbias", p.bias, db, loss);
}

TEST_F(KernelsFd, LayerNorm) {
    Problem p = make_problem(kTiny, 2);
    const int N = p.d.N(), C = p.d.C;
    Vec out(p.x.size()), mean(N), rstd(N);
    auto loss = [&] {
        layernorm_forward<double>(out.data(), mean.data(), rstd.data(), p.x.data(), p.ln_w.data(),
                                  p.ln_b.data(), N, C);
        return dot(p.dout_c, out);
    };
    loss(); // mean and rstd of the unperturbed input, for backward
    Vec dinp(p.x.size(), 0.0), dw(C, 0.0), db(C, 0.0); // all three accumulate
    layernorm_backward<double>(dinp.data(), dw.data(), db.data(), p.dout_c.data(), p.x.data(),
                               p.ln_w.data(), mean.data(), rstd.data(), N, C);
    check_gradient("layernorm dinp", p.x, dinp, loss);
    check_gradient("layernorm dweight", p.ln_w, dw, loss);
    check_gradient("layernorm dbias", p.ln_b, db, loss);
}

TEST_F(KernelsFd, Attention) {
    Problem p = make_problem(kTiny, 3);
    const int B = p.d.B, T = p.d.T, C = p.d.C, H = p.d.H;
    Vec out(p.dout_c.size()), att(std::size_t(B) * H * T * T);
    auto loss = [&] {
        attention_forward<double>(out.data(), att.data(), p.qkv.data(), B, T, C, H);
        return dot(p.dout_c, out);
    };
    loss();
    // Causal probabilities: zero above the diagonal, non-negative, each row summing to 1.
    for (std::size_t r = 0; r < att.size() / T; ++r) {
        const int i = int(r % T);
        double sum = 0;
        for (int j = 0; j < T; ++j) {
            const double a = att[r * T + j];
            if (j > i) {
                EXPECT_EQ(a, 0.0) << "att row " << r << " col " << j;
            }
            EXPECT_GE(a, 0.0);
            sum += a;
        }
        EXPECT_NEAR(sum, 1.0, 1e-14) << "att row " << r;
    }
    Vec dqkv(p.qkv.size(), 0.0);
    attention_backward<double>(dqkv.data(), p.dout_c.data(), p.qkv.data(), att.data(), B, T, C, H);
    check_gradient("attention dqkv", p.qkv, dqkv, loss);
}

TEST_F(KernelsFd, Gelu) {
    Problem p = make_problem(kTiny, 4);
    const std::size_t n = p.gelu_in.size();
    Vec out(n);
    auto loss = [&] {
        gelu_forward<double>(out.data(), p.gelu_in.data(), n);
        return dot(p.dout_c, out);
    };
    Vec dinp(n, 0.0);
    gelu_backward<double>(dinp.data(), p.gelu_in.data(), p.dout_c.data(), n);
    check_gradient("gelu dinp", p.gelu_in, dinp, loss);
}

TEST_F(KernelsFd, Embedding) {
    Problem p = make_problem(kTiny, 5);
    const int B = p.d.B, T = p.d.T, C = p.d.C, V = p.d.V;
    const std::set<int> used(p.tokens.begin(), p.tokens.end());
    ASSERT_LT(used.size(), p.tokens.size()) << "some token must repeat";
    ASSERT_LT(used.size(), std::size_t(V)) << "some row of wte must be unused";
    Vec out(p.dout_c.size());
    auto loss = [&] {
        embedding_forward<double>(out.data(), p.tokens.data(), p.wte.data(), p.wpe.data(), B, T, C);
        return dot(p.dout_c, out);
    };
    Vec dwte(p.wte.size(), 0.0), dwpe(p.wpe.size(), 0.0);
    embedding_backward<double>(dwte.data(), dwpe.data(), p.dout_c.data(), p.tokens.data(), B, T, C,
                               V);
    for (int v = 0; v < V; ++v)
        if (!used.count(v)) {
            for (int c = 0; c < C; ++c) EXPECT_EQ(dwte[std::size_t(v) * C + c], 0.0) << "row " << v;
        }
    check_gradient("embedding dwte", p.wte, dwte, loss);
    check_gradient("embedding dwpe", p.wpe, dwpe, loss);
}

TEST_F(KernelsFd, SoftmaxCrossEntropy) {
    Problem p = make_problem(kTiny, 6);
    const int N = p.d.N(), V = p.d.V;
    auto loss = [&] {
        Vec z = p.logits; // dlogits_scale 0: the logits are left alone
        return softmax_cross_entropy<double>(z.data(), p.targets.data(), N, V, V, 0.0f);
    };
    // The loss itself, independently: mean over rows of log(sum exp z) - z[target].
    double expect = 0;
    for (int r = 0; r < N; ++r) {
        double s = 0;
        for (int v = 0; v < V; ++v) s += std::exp(p.logits[std::size_t(r) * V + v]);
        expect += std::log(s) - p.logits[std::size_t(r) * V + p.targets[r]];
    }
    EXPECT_NEAR(loss(), expect / N, 1e-14);
    // The fused backward, for a mean loss: scale 1/N. (1/N rounded to float is off by < 6e-8
    // relative, far inside the tolerance.)
    Vec grad = p.logits;
    const double l =
        softmax_cross_entropy<double>(grad.data(), p.targets.data(), N, V, V, 1.0f / N);
    EXPECT_EQ(l, loss());
    check_gradient("cross_entropy dlogits", p.logits, grad, loss);
}

// The padded vocabulary: logits [N, ld] whose columns V..ld-1 hold large values (they would
// dominate the softmax if read) give the unpadded kernel's loss and gradient bit for bit in the
// first V columns, and a zero gradient in the padded ones — in every dtype, since the padding
// changes neither the values summed nor their order.
template <typename S>
void expect_padding_ignored(const Problem& p, int N, int V) {
    const int ld = V + 9;
    Vec padded_d(std::size_t(N) * ld);
    for (int r = 0; r < N; ++r)
        for (int v = 0; v < ld; ++v)
            padded_d[std::size_t(r) * ld + v] = v < V ? p.logits[std::size_t(r) * V + v] : 40.0 + v;
    const std::vector<S> plain = to_s<S>(p.logits), padded = to_s<S>(padded_d);
    for (float scale : {0.0f, 1.0f / float(N)}) {
        std::vector<S> a = plain, b = padded;
        const double la = softmax_cross_entropy<S>(a.data(), p.targets.data(), N, V, V, scale);
        const double lb = softmax_cross_entropy<S>(b.data(), p.targets.data(), N, V, ld, scale);
        EXPECT_EQ(lb, la);
        const Vec got = to_double(b), want = to_double(a), before = to_double(padded);
        for (int r = 0; r < N; ++r)
            for (int v = 0; v < ld; ++v)
                ASSERT_EQ(got[std::size_t(r) * ld + v], v < V ? want[std::size_t(r) * V + v]
                                                        : scale != 0
                                                            ? 0.0
                                                            : before[std::size_t(r) * ld + v])
                    << "row " << r << " column " << v << " scale " << scale;
    }
}

TEST_F(KernelsFd, SoftmaxCrossEntropyIgnoresThePaddedVocabulary) {
    const Problem p = make_problem(kTiny, 6);
    const int N = p.d.N(), V = p.d.V;
    expect_padding_ignored<double>(p, N, V);
    expect_padding_ignored<float>(p, N, V);
    expect_padding_ignored<bf16_t>(p, N, V);
    expect_padding_ignored<f16_t>(p, N, V);
}

TEST_F(KernelsFd, ResidualAndAccumulate) {
    Problem p = make_problem(kTiny, 7);
    const std::size_t n = p.x.size();
    Vec out(n);
    auto loss = [&] {
        residual_forward<double>(out.data(), p.x.data(), p.y.data(), n);
        return dot(p.dout_c, out);
    };
    // Backward of out = a + b: dout flows unchanged into both, by accumulation.
    Vec da(n, 0.0), db(n, 0.0);
    accumulate<double>(da.data(), p.dout_c.data(), n);
    accumulate<double>(db.data(), p.dout_c.data(), n);
    check_gradient("residual da", p.x, da, loss);
    check_gradient("residual db", p.y, db, loss);
    auto acc_loss = [&] {
        Vec dst = p.x;
        accumulate<double>(dst.data(), p.y.data(), n);
        return dot(p.dout_c, dst);
    };
    check_gradient("accumulate ddst", p.x, p.dout_c, acc_loss);
    check_gradient("accumulate dsrc", p.y, p.dout_c, acc_loss);
    // out may alias a.
    loss();
    Vec a = p.x;
    residual_forward<double>(a.data(), a.data(), p.y.data(), n);
    EXPECT_EQ(a, out);
}

// ---- what each backward overwrites and what it accumulates into ----

TEST(KernelsContract, BackwardsOverwriteOrAccumulateAsDocumented) {
    Workspace f;
    const Problem p = make_problem(kTiny, 8);
    const int B = p.d.B, T = p.d.T, C = p.d.C, H = p.d.H, OC = p.d.OC, V = p.d.V, N = p.d.N();
    const Named fresh = run_all<double>(p, f.ws);
    auto fresh_of = [&](const std::string& name) {
        for (const auto& [n, v] : fresh)
            if (n == name) return v;
        ADD_FAILURE() << "no output " << name;
        return Vec{};
    };
    const Vec junk = make_problem(kMedium, 9).qkv; // prior contents, any values
    auto prefilled = [&](std::size_t n) { return Vec(junk.begin(), junk.begin() + n); };
    auto expect_overwritten = [&](const std::string& name, const Vec& got) {
        EXPECT_EQ(got, fresh_of(name)) << name << " must be overwritten";
    };
    auto expect_accumulated = [&](const std::string& name, const Vec& got) {
        const Vec want = fresh_of(name);
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t i = 0; i < got.size(); ++i)
            EXPECT_NEAR(got[i], junk[i] + want[i], 1e-12) << name << " must accumulate, " << i;
    };

    Vec dinp = prefilled(p.x.size()), dw = prefilled(p.w.size()), db = prefilled(OC);
    linear_backward<double>(dinp.data(), dw.data(), db.data(), p.dout_lin.data(), p.x.data(),
                            p.w.data(), N, C, OC, f.ws);
    expect_overwritten("linear dinp", dinp);
    expect_accumulated("linear dweight", dw);
    expect_accumulated("linear dbias", db);

    Vec out(p.x.size()), mean(N), rstd(N);
    layernorm_forward<double>(out.data(), mean.data(), rstd.data(), p.x.data(), p.ln_w.data(),
                              p.ln_b.data(), N, C);
    dinp = prefilled(p.x.size());
    dw = prefilled(C);
    db = prefilled(C);
    layernorm_backward<double>(dinp.data(), dw.data(), db.data(), p.dout_c.data(), p.x.data(),
                               p.ln_w.data(), mean.data(), rstd.data(), N, C);
    expect_accumulated("layernorm dinp", dinp);
    expect_accumulated("layernorm dweight", dw);
    expect_accumulated("layernorm dbias", db);

    Vec att(std::size_t(B) * H * T * T);
    attention_forward<double>(out.data(), att.data(), p.qkv.data(), B, T, C, H);
    Vec dqkv = prefilled(p.qkv.size());
    attention_backward<double>(dqkv.data(), p.dout_c.data(), p.qkv.data(), att.data(), B, T, C, H);
    expect_overwritten("attention dqkv", dqkv);

    dinp = prefilled(p.x.size());
    gelu_backward<double>(dinp.data(), p.gelu_in.data(), p.dout_c.data(), dinp.size());
    expect_overwritten("gelu dinp", dinp);

    Vec dwte = prefilled(p.wte.size()), dwpe = prefilled(p.wpe.size());
    embedding_backward<double>(dwte.data(), dwpe.data(), p.dout_c.data(), p.tokens.data(), B, T, C,
                               V);
    expect_accumulated("embedding dwte", dwte);
    expect_accumulated("embedding dwpe", dwpe);

    // Cross-entropy with dlogits_scale 0 computes the loss and leaves the logits alone.
    Vec z = p.logits;
    const double l = softmax_cross_entropy<double>(z.data(), p.targets.data(), N, V, V, 0.0f);
    EXPECT_EQ(z, p.logits);
    EXPECT_EQ(l, fresh_of("cross_entropy loss")[0]);
}

// ---- determinism: the same inputs give bitwise the same outputs ----

// Every output of `a` and `b` (run_all's) holds the same bits; `why` names the difference.
void expect_same_bits(const Named& a, const Named& b, const std::string& why) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
        const Vec &x = a[k].second, &y = b[k].second;
        ASSERT_EQ(x.size(), y.size());
        EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(double)), 0)
            << a[k].first << ": " << why;
    }
}

// The storage types every kernel is instantiated for, named as the messages name them.
template <typename S>
struct Kernels : testing::Test {
    static const char* type_name() {
        return std::is_same_v<S, double>   ? "double"
               : std::is_same_v<S, float>  ? "fp32"
               : std::is_same_v<S, bf16_t> ? "bf16"
                                           : "fp16";
    }
};
struct TypeNames {
    template <typename S>
    static std::string GetName(int) {
        return Kernels<S>::type_name();
    }
};
using StorageTypes = testing::Types<double, float, bf16_t, f16_t>;
TYPED_TEST_SUITE(Kernels, StorageTypes, TypeNames);

TYPED_TEST(Kernels, AreDeterministic) {
    Workspace f;
    const Problem p = quantized<TypeParam>(make_problem(kMedium, 10));
    expect_same_bits(run_all<TypeParam>(p, f.ws), run_all<TypeParam>(p, f.ws),
                     std::string(TestFixture::type_name()) + ": two identical runs differ");
}

// ---- the thread count: 1, 2 and 3 threads give bitwise the same outputs ----
// (Issue 23: the default --threads changes with the ranks per node, so a kernel whose bits
// depended on it would change the training between rank counts. parallel.h splits every loop into
// one range per thread and sums in index order inside a range; a sum split across ranges — e.g.
// a parameter gradient over rows — would fail here. kLarge has rows that 2 and 3 threads cut at
// different places.)
constexpr Dims kLarge{3, 37, 48, 4, 40, 97};

TYPED_TEST(Kernels, GiveTheSameBitsAtAnyThreadCount) {
    Workspace f;
    const Problem p = quantized<TypeParam>(make_problem(kLarge, 14));
    const int saved = current_threads();
    set_threads(1);
    const Named one = run_all<TypeParam>(p, f.ws);
    for (int threads : {2, 3}) {
        set_threads(threads);
        expect_same_bits(one, run_all<TypeParam>(p, f.ws),
                         std::string(TestFixture::type_name()) + ": " + std::to_string(threads) +
                             " threads give other bits than 1");
    }
    set_threads(saved);
}

// LayerNorm takes its rows in groups of eight with their sums interleaved (row_groups.h): each
// row must still come out as it does alone. 19 rows: two groups and a ragged tail; C = 67 leaves a
// partial 64-column chunk in the backward. The fused residual form, too. dweight and dbias sum
// over the rows, so only the per-row outputs are compared.
TYPED_TEST(Kernels, LayerNormRowsInGroupsAreTheBitsOfOneRowAtATime) {
    using S = TypeParam;
    using A = acc_t<S>;
    constexpr int N = 19, C = 67;
    std::mt19937_64 rng(21);
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    auto values = [&](std::size_t n) {
        std::vector<S> v(n);
        for (S& e : v) e = from_acc<S>(A(u(rng)));
        return v;
    };
    const auto x = values(std::size_t(N) * C), w = values(C), b = values(C);
    const auto dout = values(std::size_t(N) * C), branch = values(std::size_t(N) * C);
    std::vector<S> out(x.size()), res = x, fused(x.size()), din(x.size(), S{}), dw(C), db(C);
    std::vector<A> mean(N), rstd(N), fmean(N), frstd(N);
    layernorm_forward<S>(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    residual_layernorm_forward<S>(res.data(), branch.data(), fused.data(), fmean.data(),
                                  frstd.data(), w.data(), b.data(), N, C);
    layernorm_backward<S>(din.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                          mean.data(), rstd.data(), N, C);
    for (int r = 0; r < N; ++r) {
        const std::size_t at = std::size_t(r) * C;
        std::vector<S> o(C), rr(x.begin() + at, x.begin() + at + C), fo(C), di(C, S{}), w1(C),
            b1(C);
        A m, sd, fm, fsd;
        layernorm_forward<S>(o.data(), &m, &sd, x.data() + at, w.data(), b.data(), 1, C);
        residual_layernorm_forward<S>(rr.data(), branch.data() + at, fo.data(), &fm, &fsd, w.data(),
                                      b.data(), 1, C);
        layernorm_backward<S>(di.data(), w1.data(), b1.data(), dout.data() + at, x.data() + at,
                              w.data(), &m, &sd, 1, C);
        SCOPED_TRACE(std::string(TestFixture::type_name()) + ", row " + std::to_string(r));
        EXPECT_EQ(std::memcmp(o.data(), out.data() + at, C * sizeof(S)), 0) << "out";
        EXPECT_EQ(std::memcmp(&m, &mean[r], sizeof(A)), 0) << "mean";
        EXPECT_EQ(std::memcmp(&sd, &rstd[r], sizeof(A)), 0) << "rstd";
        EXPECT_EQ(std::memcmp(rr.data(), res.data() + at, C * sizeof(S)), 0) << "residual";
        EXPECT_EQ(std::memcmp(fo.data(), fused.data() + at, C * sizeof(S)), 0) << "fused out";
        EXPECT_EQ(std::memcmp(di.data(), din.data() + at, C * sizeof(S)), 0) << "dinp";
    }
}

// The update too: each thread takes one contiguous range, and 2 and 3 threads cut 1000 elements
// at other places than 1 does (a range's start changes the loop's vector peel and tail).
TEST(KernelsThreads, AdamWGivesTheSameBitsAtAnyThreadCount) {
    constexpr std::size_t n = 1000;
    std::vector<float> g0(n), p0(n), m0(n), v0(n);
    for (std::size_t i = 0; i < n; ++i) {
        g0[i] = std::sin(0.37f * float(i)) * std::pow(10.0f, float(int(i % 9)) - 8.0f);
        p0[i] = std::cos(0.11f * float(i)), m0[i] = 0.1f * g0[i], v0[i] = g0[i] * g0[i];
    }
    const AdamWStep k{0.9f,  0.95f, 1.0f - 1e-4f, 1e-3f / 0.1f, 1.0f / std::sqrt(0.05f),
                      1e-8f, 1.0f};
    auto run = [&](int threads) {
        set_threads(threads);
        std::vector<float> p = p0, m = m0, v = v0;
        adamw(p.data(), m.data(), v.data(), g0.data(), DType::f32, n, k);
        p.insert(p.end(), m.begin(), m.end());
        p.insert(p.end(), v.begin(), v.end());
        return p;
    };
    const int saved = current_threads();
    const std::vector<float> one = run(1);
    for (int threads : {2, 3}) {
        const std::vector<float> other = run(threads);
        EXPECT_EQ(std::memcmp(one.data(), other.data(), one.size() * sizeof(float)), 0)
            << threads << " threads give other bits than 1";
    }
    set_threads(saved);
}

// ---- mixed precision: each instantiation against the double one, same inputs ----

template <typename S>
void expect_matches_double(double tol, const char* type_name) {
    Workspace f;
    const Problem p = quantized<S>(make_problem(kMedium, 12));
    const Named ref = run_all<double>(p, f.ws), got = run_all<S>(p, f.ws);
    ASSERT_EQ(ref.size(), got.size());
    double worst = 0;
    std::string worst_name;
    for (std::size_t k = 0; k < ref.size(); ++k) {
        const double e = rel_diff(got[k].second, ref[k].second);
        EXPECT_LE(e, tol) << type_name << " " << ref[k].first;
        if (e >= worst) worst = e, worst_name = ref[k].first;
    }
    std::printf("[ %-8s ] worst relative difference from double: %.2e (%s)\n", type_name, worst,
                worst_name.c_str());
}

TEST(KernelsMixedPrecision, Fp32MatchesDouble) {
    expect_matches_double<float>(1e-5, "fp32");
}
TEST(KernelsMixedPrecision, Bf16MatchesDouble) {
    expect_matches_double<bf16_t>(2e-2, "bf16");
}
TEST(KernelsMixedPrecision, Fp16MatchesDouble) {
    expect_matches_double<f16_t>(5e-3, "fp16");
}
