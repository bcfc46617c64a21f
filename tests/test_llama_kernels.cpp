// The CPU kernels Llama needs (issue 25: RMSNorm, rotary embedding, SwiGLU), checked as
// tests/test_kernels_fd.cpp checks GPT-2's: each backward in float64 against central finite
// differences of its own forward (L = sum(dout * out), h = 1e-6; the same argument gives the same
// 1e-6 bound: truncation ~1e-13, rounding ~1e-8 on these sizes), each forward against Hugging
// Face's formula written out here independently in double, and the fp32 / bf16 instantiations
// against double on the same representable inputs: fp32 within 1e-5 relative (sums of <= 64
// terms at unit roundoff 6e-8), bf16 within 2e-2 (one rounding of 2^-9 per stored value, ten
// times over).
#include "model/kernels/cpu/numeric.h"
#include "model/kernels/cpu/rmsnorm.h"
#include "model/kernels/cpu/rope.h"
#include "model/kernels/cpu/swiglu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

using namespace shardlab;
using namespace shardlab::cpu;

namespace {

using Vec = std::vector<double>;
constexpr double kH = 1e-6, kFdTol = 1e-6;

Vec random_vec(std::size_t n, unsigned seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    Vec v(n);
    for (double& x : v) x = u(g);
    return v;
}

// d/dx_i of loss(x) by central differences, for every i.
Vec numeric_grad(const std::function<double(const Vec&)>& loss, Vec x) {
    Vec g(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        x[i] = keep + kH;
        const double up = loss(x);
        x[i] = keep - kH;
        const double down = loss(x);
        x[i] = keep;
        g[i] = (up - down) / (2 * kH);
    }
    return g;
}

void expect_close(const Vec& analytic, const Vec& numeric, const char* what) {
    double scale = 1;
    for (double a : analytic) scale = std::max(scale, std::abs(a));
    for (std::size_t i = 0; i < analytic.size(); ++i)
        ASSERT_NEAR(analytic[i], numeric[i], kFdTol * scale) << what << " element " << i;
}

double dot(const Vec& a, const Vec& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// Relative L2 distance of a kernel's output in T from the double reference.
template <typename T>
double rel_error(const std::vector<T>& got, const Vec& ref) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double d = double(to_acc(got[i])) - ref[i];
        num += d * d, den += ref[i] * ref[i];
    }
    return std::sqrt(num / den);
}

// Inputs rounded to T first, so the double reference sees the same values.
template <typename T>
std::vector<T> stored(Vec& v) {
    std::vector<T> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        out[i] = from_acc<T>(acc_t<T>(v[i]));
        v[i] = double(to_acc(out[i]));
    }
    return out;
}

constexpr int kN = 11, kC = 16; // 11 rows: one group of row_groups.h's 8 and a ragged tail
constexpr float kEps = 1e-5f;

// LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * weight.
Vec rmsnorm_reference(const Vec& x, const Vec& w, int N, int C) {
    Vec y(x.size());
    for (int n = 0; n < N; ++n) {
        double ss = 0;
        for (int i = 0; i < C; ++i) ss += x[n * C + i] * x[n * C + i];
        const double r = 1 / std::sqrt(ss / C + double(kEps));
        for (int i = 0; i < C; ++i) y[n * C + i] = w[i] * x[n * C + i] * r;
    }
    return y;
}

TEST(LlamaKernels, RmsNormForwardIsHuggingFacesAndBackwardItsDerivative) {
    const Vec x = random_vec(kN * kC, 1), w = random_vec(kC, 2), dout = random_vec(kN * kC, 3);
    Vec y(x.size()), rstd(kN);
    rmsnorm_forward<double>(y.data(), rstd.data(), x.data(), w.data(), kN, kC, kEps);
    const Vec ref = rmsnorm_reference(x, w, kN, kC);
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-14);
    // Backward accumulates: start both gradients at a known value and take it off after.
    Vec dx(x.size(), 0.5), dw(kC, 0.25);
    rmsnorm_backward<double>(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), kN,
                             kC);
    for (double& v : dx) v -= 0.5;
    for (double& v : dw) v -= 0.25;
    auto loss_x = [&](const Vec& xx) { return dot(dout, rmsnorm_reference(xx, w, kN, kC)); };
    auto loss_w = [&](const Vec& ww) { return dot(dout, rmsnorm_reference(x, ww, kN, kC)); };
    expect_close(dx, numeric_grad(loss_x, x), "rmsnorm dx");
    expect_close(dw, numeric_grad(loss_w, w), "rmsnorm dweight");
}

template <typename T>
double rmsnorm_precision_error() {
    Vec x = random_vec(kN * 64, 4), w = random_vec(64, 5);
    const std::vector<T> xs = stored<T>(x), ws = stored<T>(w);
    std::vector<T> y(x.size());
    std::vector<acc_t<T>> rstd(kN);
    rmsnorm_forward<T>(y.data(), rstd.data(), xs.data(), ws.data(), kN, 64, kEps);
    return rel_error(y, rmsnorm_reference(x, w, kN, 64));
}

TEST(LlamaKernels, RmsNormInFp32AndBf16AgainstDouble) {
    EXPECT_LT(rmsnorm_precision_error<float>(), 1e-5);
    EXPECT_LT(rmsnorm_precision_error<bf16_t>(), 2e-2);
}

// RMSNorm takes its rows in groups of eight with their sums interleaved (row_groups.h): each row
// must come out as it does alone (19 rows: two groups and a tail; C = 67: a partial 64-column
// chunk in the backward). dweight sums over the rows, so only dinp is compared there.
template <typename T>
void expect_grouped_rows_match_single_rows() {
    constexpr int N = 19, C = 67;
    Vec xd = random_vec(N * C, 7), wd = random_vec(C, 8), dd = random_vec(N * C, 9);
    const std::vector<T> x = stored<T>(xd), w = stored<T>(wd), dout = stored<T>(dd);
    std::vector<T> y(x.size()), dx(x.size(), T{}), dw(C, T{});
    std::vector<acc_t<T>> rstd(N);
    rmsnorm_forward<T>(y.data(), rstd.data(), x.data(), w.data(), N, C, kEps);
    rmsnorm_backward<T>(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
    for (int r = 0; r < N; ++r) {
        const std::size_t at = std::size_t(r) * C;
        std::vector<T> y1(C), dx1(C, T{}), dw1(C, T{});
        acc_t<T> r1;
        rmsnorm_forward<T>(y1.data(), &r1, x.data() + at, w.data(), 1, C, kEps);
        rmsnorm_backward<T>(dx1.data(), dw1.data(), dout.data() + at, x.data() + at, w.data(), &r1,
                            1, C);
        EXPECT_EQ(std::memcmp(y1.data(), y.data() + at, C * sizeof(T)), 0) << "row " << r;
        EXPECT_EQ(std::memcmp(&r1, &rstd[r], sizeof r1), 0) << "row " << r;
        EXPECT_EQ(std::memcmp(dx1.data(), dx.data() + at, C * sizeof(T)), 0) << "row " << r;
    }
}

TEST(LlamaKernels, RmsNormRowsInGroupsAreTheBitsOfOneRowAtATime) {
    expect_grouped_rows_match_single_rows<double>();
    expect_grouped_rows_match_single_rows<float>();
    expect_grouped_rows_match_single_rows<bf16_t>();
}

// inv_freq as transformers computes it: theta^(-2j/D), then for Llama 3's rope_scaling
// (_compute_llama3_parameters) the low frequencies divided by the factor and the medium ones
// blended — written in its torch.where form, not as rope_frequency.h's branches.
std::vector<double> reference_inv_freq(const Rope& r, int D) {
    std::vector<double> f;
    for (int j = 0; j < D / 2; ++j) {
        const double inv = 1.0 / std::pow(double(r.theta), 2.0 * j / D);
        if (r.factor == 0) {
            f.push_back(inv);
            continue;
        }
        const double old = r.original_context, wavelen = 2 * M_PI / inv;
        const double scaled = wavelen > old / r.low_freq_factor ? inv / r.factor : inv;
        const double smooth =
            (old / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        const double smoothed = (1 - smooth) * scaled / r.factor + smooth * scaled;
        const bool medium =
            !(wavelen < old / r.high_freq_factor) && !(wavelen > old / r.low_freq_factor);
        f.push_back(medium ? smoothed : scaled);
    }
    return f;
}

// apply_rotary_pos_emb with rotate_half, written as Hugging Face writes it: q * cos +
// rotate_half(q) * sin, cos and sin of cat(freqs, freqs), freqs = p * inv_freq.
Vec rope_reference(const Vec& x, int rows, int T, int heads, int D, int stride, const Rope& rope) {
    const std::vector<double> inv_freq = reference_inv_freq(rope, D);
    Vec y = x;
    for (int r = 0; r < rows; ++r)
        for (int h = 0; h < heads; ++h)
            for (int i = 0; i < D; ++i) {
                const int j = i % (D / 2);
                const double angle = (r % T) * inv_freq[std::size_t(j)];
                const double* v = x.data() + r * stride + h * D;
                const double rotated = i < D / 2 ? -v[i + D / 2] : v[i - D / 2];
                y[r * stride + h * D + i] = v[i] * std::cos(angle) + rotated * std::sin(angle);
            }
    return y;
}

// Two sequences of T = 5, 3 heads of 8 in rows of 40 (the rest of the row, 16 elements, is
// another tensor and must not be touched), theta 10000 (Llama 2) and 500000 (Llama 3), and Llama
// 3's scaling over a context of 256 with high 8: of the four frequencies (wavelengths 6.3, 63,
// 628, 6283) the first is kept, the second blended, the last two divided by 8.
constexpr int kRows = 10, kT = 5, kHeads = 3, kD = 8, kStride = 40;
const Rope kRopes[] = {{10000.0f}, {500000.0f}, {10000.0f, 8.0f, 1.0f, 8.0f, 256}};

// Llama 3.2's own parameters (theta 500000, factor 32, low 1, high 4, context 8192) at D = 64,
// by hand: pair 0 (wavelength 2 pi) is kept, pair 31 (wavelength 2.1e6 > 8192) divided by 32,
// pair 16 (f = 500000^-1/2, wavelength 4443 between 2048 and 8192) blended with
// s = (8192 / 4443 - 1) / 3.
TEST(LlamaKernels, Llama3RopeScalingByHand) {
    const Rope r{500000.0f, 32.0f, 1.0f, 4.0f, 8192};
    EXPECT_EQ(rope_frequency(r, 0, 64), 1.0);
    EXPECT_DOUBLE_EQ(rope_frequency(r, 31, 64), std::pow(500000.0, -62.0 / 64) / 32);
    const double f = 1 / std::sqrt(500000.0), s = (8192 * f / (2 * M_PI) - 1) / 3;
    EXPECT_GT(s, 0.28);
    EXPECT_LT(s, 0.29);
    EXPECT_NEAR(rope_frequency(r, 16, 64), (1 - s) * f / 32 + s * f, 1e-15);
    for (int j = 0; j < 32; ++j) // and every pair as transformers' where-form computes it
        EXPECT_NEAR(rope_frequency(r, j, 64), reference_inv_freq(r, 64)[std::size_t(j)],
                    1e-15 * rope_frequency(r, j, 64))
            << j;
}

TEST(LlamaKernels, RopeIsHuggingFacesRotateHalfAndBackwardItsInverse) {
    for (const Rope& rope : kRopes) {
        const Vec x = random_vec(kRows * kStride, 6);
        Vec y = x;
        rope_forward<double>(y.data(), kRows, kT, kHeads, kD, kStride, rope);
        const Vec ref = rope_reference(x, kRows, kT, kHeads, kD, kStride, rope);
        for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-14) << i;
        for (int r = 0; r < kRows; ++r) // outside the heads: untouched, bit for bit
            for (int i = kHeads * kD; i < kStride; ++i)
                ASSERT_EQ(y[r * kStride + i], x[r * kStride + i]);
        // Position 0 is the identity.
        for (int i = 0; i < kHeads * kD; ++i) ASSERT_EQ(y[i], x[i]);
        // Backward: the gradient of sum(dout * rope(x)) by finite differences.
        const Vec dout = random_vec(x.size(), 7);
        Vec dx = dout;
        rope_backward<double>(dx.data(), kRows, kT, kHeads, kD, kStride, rope);
        auto loss = [&](const Vec& xx) {
            return dot(dout, rope_reference(xx, kRows, kT, kHeads, kD, kStride, rope));
        };
        expect_close(dx, numeric_grad(loss, x), "rope dx");
    }
}

TEST(LlamaKernels, RopeInFp32AndBf16AgainstDouble) {
    Vec x = random_vec(kRows * kStride, 8);
    Vec xf = x, xb = x;
    std::vector<float> f = stored<float>(xf);
    rope_forward<float>(f.data(), kRows, kT, kHeads, kD, kStride, kRopes[0]);
    EXPECT_LT(rel_error(f, rope_reference(xf, kRows, kT, kHeads, kD, kStride, kRopes[0])), 1e-6);
    std::vector<bf16_t> b = stored<bf16_t>(xb);
    rope_forward<bf16_t>(b.data(), kRows, kT, kHeads, kD, kStride, kRopes[0]);
    EXPECT_LT(rel_error(b, rope_reference(xb, kRows, kT, kHeads, kD, kStride, kRopes[0])), 2e-2);
}

Vec swiglu_reference(const Vec& g, const Vec& u) {
    Vec y(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) y[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    return y;
}

TEST(LlamaKernels, SwiGluIsSiluOfTheGateTimesUpAndBackwardItsDerivative) {
    const std::size_t n = 40;
    Vec g = random_vec(n, 9), u = random_vec(n, 10);
    for (double& v : g) v *= 4; // the sigmoid's whole range, not only its linear middle
    const Vec dout = random_vec(n, 11);
    Vec y(n);
    swiglu_forward<double>(y.data(), g.data(), u.data(), n);
    const Vec ref = swiglu_reference(g, u);
    for (std::size_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], ref[i], 1e-14);
    Vec dg(n, 7.0), du(n, 7.0); // overwritten, not accumulated
    swiglu_backward<double>(dg.data(), du.data(), dout.data(), g.data(), u.data(), n);
    expect_close(dg,
                 numeric_grad([&](const Vec& gg) { return dot(dout, swiglu_reference(gg, u)); }, g),
                 "swiglu dgate");
    expect_close(du,
                 numeric_grad([&](const Vec& uu) { return dot(dout, swiglu_reference(g, uu)); }, u),
                 "swiglu dup");
    Vec gf = g, uf = u, gb = g, ub = u;
    const std::vector<float> gs = stored<float>(gf), us = stored<float>(uf);
    std::vector<float> yf(n);
    swiglu_forward<float>(yf.data(), gs.data(), us.data(), n);
    EXPECT_LT(rel_error(yf, swiglu_reference(gf, uf)), 1e-5);
    const std::vector<bf16_t> gbs = stored<bf16_t>(gb), ubs = stored<bf16_t>(ub);
    std::vector<bf16_t> yb(n);
    swiglu_forward<bf16_t>(yb.data(), gbs.data(), ubs.data(), n);
    EXPECT_LT(rel_error(yb, swiglu_reference(gb, ub)), 2e-2);
}

} // namespace
