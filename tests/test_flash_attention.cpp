// Flash attention on the CPU (model/kernels/cpu/flash_attention.h) against naive causal attention
// written out here in float64 (scores, softmax, P V; and its backward through the softmax
// Jacobian), for out, lse and dqkv, at sizes that are not multiples of the tiles (T = 1, 7, 65,
// 130, and 300, 520 past one 256-key tile, so the online softmax rescales), one head and several,
// head sizes 16 and 64; against the materialising kernel; and bitwise the same for 1, 2 and 3
// threads — all of it three times, the tile products (tile_gemm.h) on OpenBLAS, on oneDNN in fp32
// and on oneDNN with bf16 operands (the last where this CPU has oneDNN's bf16 matmul).
// Grouped-query attention (Hkv kv heads shared by H query heads, issue 25) against the same float64
// reference, which reads each query head's kv head from the grouped row, and against multi-head
// flash run on the kv heads repeated (Hugging Face's repeat_kv): out, lse and dq the same bits, dk
// and dv the repeated heads' sums.
//
// Tolerances, as relative norms ||got - ref|| / ||ref||. Inputs are rounded to the storage type
// first, so the reference sees the same values and only the kernel's arithmetic differs.
// - double: the same formulas in another order; differences are rounding, ~1e-15 per operation
//   over sums of a few hundred terms: bound 1e-12.
// - fp32: unit roundoff 6e-8; sums of up to T + hd ~ 600 terms and vexp's 2 ulp give ~1e-6 in
//   the norm (errors of random sign) and 4e-5 at worst: bound 2e-5.
// - bf16 / fp16 compute in fp32 and round what they store once (out, dqkv: 2^-9 ~ 2e-3 and
//   2^-11 ~ 5e-4 per element). Backward's D_i = rowsum(dO_i * O_i) reads the stored (rounded) out,
//   which moves every dS_ij of row i by P_ij * dD_i * scale: a second error of the same order.
//   Unlike the materialising path, the probabilities are never rounded to the storage type —
//   except with bf16 operands (the oneDNNbf16 runs), where P and dS are rounded to bf16 before
//   they enter a product (relative 2^-9 each; flash_attention_wmma.h's argument): out and dqkv
//   gain one more rounding of their terms, about 2^-9 in the norm, the row sum l is not rounded.
//   So two roundings, three with bf16 operands: bounds 1e-2 (bf16; measured 1.8e-3, and 2.5e-3 with
//   bf16 operands) and 2.5e-3 (fp16), 2.5x headroom or more.
// - lse is fp32 in every storage type (the Ops contract): bound 1e-6 relative, fp32 log-sum-exp
//   of at most 520 terms.
// Flash against materialize in the same dtype: by the triangle inequality, the flash bound plus
// the materialising kernel's (test_kernels_fd.cpp: 1e-5, 2e-2, 5e-3).
#include "model/kernels/cpu/attention.h"
#include "model/kernels/cpu/flash_attention.h"
#include "model/kernels/cpu/numeric.h"
#include "model/kernels/cpu/threads.h"
#include "model/kernels/cpu/tile_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace shardlab;
using namespace shardlab::cpu;

namespace {
using Vec = std::vector<double>;

struct Shape {
    int B, T, H, hd;
    int Hkv = 0; // kv heads; 0: H (multi-head attention)
    int kv() const { return Hkv ? Hkv : H; }
    int C() const { return H * hd; }
    std::size_t row() const { return std::size_t(H + 2 * kv()) * hd; } // a qkv row
    std::string name() const {
        return "B" + std::to_string(B) + " T" + std::to_string(T) + " H" + std::to_string(H) +
               " Hkv" + std::to_string(kv()) + " hd" + std::to_string(hd);
    }
};

const Shape kShapes[] = {{1, 1, 1, 16},   {2, 7, 3, 16},   {1, 65, 1, 64}, {2, 7, 3, 8},
                         {2, 130, 2, 64}, {1, 300, 2, 16}, {1, 520, 1, 64}};

// Grouped-query shapes: (heads, kv heads) (4, 1), (4, 2), (3, 3) (groups of one), (6, 2); head dims
// odd or no multiple of 8; T past one key tile and no multiple of the 64-row query tile.
const Shape kGroupedShapes[] = {
    {2, 67, 4, 16, 1}, {1, 300, 4, 13, 2}, {2, 130, 3, 16, 3}, {1, 263, 6, 8, 2}, {1, 1, 4, 5, 2}};

// Inputs: q in [-3, 3] (scores of a few units, so the running max moves between tiles), k, v and
// dout in [-1, 1].
struct Problem {
    Shape s;
    Vec qkv, dout;
};
Problem make_problem(const Shape& s, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    Problem p{s, Vec(std::size_t(s.B) * s.T * s.row()), Vec(std::size_t(s.B) * s.T * s.C())};
    for (std::size_t i = 0; i < p.qkv.size(); ++i)
        p.qkv[i] = u(rng) * (i % s.row() < std::size_t(s.C()) ? 3.0 : 1.0);
    for (double& x : p.dout) x = u(rng);
    return p;
}

template <typename S>
std::vector<S> store(const Vec& v) {
    std::vector<S> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = from_acc<S>(acc_t<S>(v[i]));
    return r;
}
template <typename S>
Vec load(const std::vector<S>& v) {
    Vec r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = double(to_acc(v[i]));
    return r;
}
// The problem as the storage type S holds it, back in double: what the reference computes on.
template <typename S>
Problem rounded(const Problem& p) {
    return {p.s, load(store<S>(p.qkv)), load(store<S>(p.dout))};
}

double rel_diff(const Vec& got, const Vec& ref) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
        num += (got[i] - ref[i]) * (got[i] - ref[i]), den += ref[i] * ref[i];
    return std::sqrt(num) / std::max(std::sqrt(den), 1e-300);
}

struct Result {
    Vec out, lse, dqkv;
};

// Naive causal attention and its backward in float64, written from the definitions: for each
// (b, h, i): s_ij = scale q_i.k_j (j <= i), P = softmax(s), out_i = sum_j P_ij v_j,
// lse_i = log sum_j exp(s_ij); dP_ij = dout_i.v_j, dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik),
// dq_i = scale sum_j dS_ij k_j, dk_j = scale sum_i dS_ij q_i, dv_j = sum_i P_ij dout_i. Query head
// h's k and v are kv head h / (H / Hkv)'s (the row [q: H hd | k: Hkv hd | v: Hkv hd]), so a kv
// head's dk, dv collect the terms of all its query heads.
Result reference(const Problem& p) {
    const Shape& s = p.s;
    const int C = s.C(), T = s.T, hd = s.hd;
    const double scale = double(float(1 / std::sqrt(double(hd)))); // the kernels' fp32 scale
    Result r{Vec(std::size_t(s.B) * T * C), Vec(std::size_t(s.B) * s.H * T),
             Vec(p.qkv.size(), 0.0)};
    const int group = s.H / s.kv();
    auto at = [&](int b, int t, int part, int h, int e) { // part 0: q, 1: k, 2: v of query head h
        const int col = part == 0 ? h : s.H + (part - 1) * s.kv() + h / group;
        return (std::size_t(b) * T + t) * s.row() + std::size_t(col) * hd + e;
    };
    for (int b = 0; b < s.B; ++b)
        for (int h = 0; h < s.H; ++h)
            for (int i = 0; i < T; ++i) {
                Vec sc(i + 1), P(i + 1), dP(i + 1);
                double mx = -std::numeric_limits<double>::infinity();
                for (int j = 0; j <= i; ++j) {
                    double d = 0;
                    for (int e = 0; e < hd; ++e)
                        d += p.qkv[at(b, i, 0, h, e)] * p.qkv[at(b, j, 1, h, e)];
                    sc[j] = scale * d;
                    mx = std::max(mx, sc[j]);
                }
                double sum = 0;
                for (int j = 0; j <= i; ++j) sum += P[j] = std::exp(sc[j] - mx);
                for (int j = 0; j <= i; ++j) P[j] /= sum;
                r.lse[(std::size_t(b) * s.H + h) * T + i] = mx + std::log(sum);
                const double* go = &p.dout[(std::size_t(b) * T + i) * C + h * hd];
                for (int e = 0; e < hd; ++e) {
                    double o = 0;
                    for (int j = 0; j <= i; ++j) o += P[j] * p.qkv[at(b, j, 2, h, e)];
                    r.out[(std::size_t(b) * T + i) * C + h * hd + e] = o;
                }
                double dot = 0;
                for (int j = 0; j <= i; ++j) {
                    double d = 0;
                    for (int e = 0; e < hd; ++e) d += go[e] * p.qkv[at(b, j, 2, h, e)];
                    dP[j] = d;
                    dot += P[j] * d;
                }
                for (int j = 0; j <= i; ++j) {
                    const double dS = P[j] * (dP[j] - dot) * scale;
                    for (int e = 0; e < hd; ++e) {
                        r.dqkv[at(b, i, 0, h, e)] += dS * p.qkv[at(b, j, 1, h, e)];
                        r.dqkv[at(b, j, 1, h, e)] += dS * p.qkv[at(b, i, 0, h, e)];
                        r.dqkv[at(b, j, 2, h, e)] += P[j] * go[e];
                    }
                }
            }
    return r;
}

template <typename S>
Result run_flash(const Problem& p, const TileGemm& tiles) {
    const Shape& s = p.s;
    const std::vector<S> qkv = store<S>(p.qkv), dout = store<S>(p.dout);
    std::vector<S> out(p.dout.size()), dqkv(p.qkv.size());
    std::vector<acc_t<S>> lse(std::size_t(s.B) * s.H * s.T);
    flash_attention_forward<S>(out.data(), lse.data(), qkv.data(), s.B, s.T, s.C(), s.H, s.kv(),
                               tiles);
    flash_attention_backward<S>(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), s.B,
                                s.T, s.C(), s.H, s.kv(), tiles);
    Vec l(lse.begin(), lse.end());
    return {load(out), l, load(dqkv)};
}

template <typename S>
Result run_materialize(const Problem& p, const TileGemm& tiles) {
    const Shape& s = p.s;
    const std::vector<S> qkv = store<S>(p.qkv), dout = store<S>(p.dout);
    std::vector<S> out(p.dout.size()), dqkv(p.qkv.size()), att(std::size_t(s.B) * s.H * s.T * s.T);
    attention_forward<S>(out.data(), att.data(), qkv.data(), s.B, s.T, s.C(), s.H, tiles);
    attention_backward<S>(dqkv.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, s.C(), s.H,
                          tiles);
    return {load(out), {}, load(dqkv)};
}

// Every test runs three times, its tile products (tile_gemm.h) on OpenBLAS, on oneDNN in fp32, and
// on oneDNN with bf16 operands (where the CPU has oneDNN's bf16 matmul; only bf16 storage differs
// from the fp32 run). The tests that run on 1, 2 and 3 threads restore the caller's count.
TileGemm make_tiles(const std::string& library, OneDnnMatmul& onednn) {
    if (library == "OpenBLAS") return TileGemm();
    return TileGemm(onednn, library == "oneDNNbf16");
}

class FlashAttention : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        saved_ = current_threads();
        if (GetParam() == "oneDNNbf16" && !onednn_.has_kernel(DType::bf16))
            GTEST_SKIP() << "oneDNN has no bf16 matmul kernel on this CPU (it needs AVX-512)";
    }
    void TearDown() override { set_threads(saved_); }
    TileGemm tiles() { return make_tiles(GetParam(), onednn_); }
    int saved_ = 1;
    OneDnnMatmul onednn_;
};

template <typename S, std::size_t N>
void expect_matches_reference(const TileGemm& tiles, double tol, const char* type_name,
                              const Shape (&shapes)[N]) {
    const double lse_tol = std::is_same_v<S, double> ? tol : 1e-6;
    double worst = 0;
    for (const Shape& s : shapes) {
        const Problem p = rounded<S>(make_problem(s, unsigned(s.T * 31 + s.H)));
        const Result ref = reference(p), got = run_flash<S>(p, tiles);
        const double eo = rel_diff(got.out, ref.out), el = rel_diff(got.lse, ref.lse),
                     ed = rel_diff(got.dqkv, ref.dqkv);
        EXPECT_LE(eo, tol) << type_name << " out " << s.name();
        EXPECT_LE(el, lse_tol) << type_name << " lse " << s.name();
        EXPECT_LE(ed, tol) << type_name << " dqkv " << s.name();
        worst = std::max({worst, eo, ed});
    }
    std::printf("[ %-8s ] worst relative difference from the float64 reference: %.2e\n", type_name,
                worst);
}
} // namespace

TEST_P(FlashAttention, DoubleMatchesTheNaiveReference) {
    expect_matches_reference<double>(tiles(), 1e-12, "double", kShapes);
}
TEST_P(FlashAttention, Fp32MatchesTheNaiveReference) {
    expect_matches_reference<float>(tiles(), 2e-5, "fp32", kShapes);
}
TEST_P(FlashAttention, Bf16MatchesTheNaiveReference) {
    expect_matches_reference<bf16_t>(tiles(), 1e-2, "bf16", kShapes);
}
TEST_P(FlashAttention, Fp16MatchesTheNaiveReference) {
    expect_matches_reference<f16_t>(tiles(), 2.5e-3, "fp16", kShapes);
}

// Grouped-query attention, the same bounds: a kv head's dk, dv sum its group's G query heads, G
// times the terms of one head's (up to G T ~ 1600 here), whose errors of random sign grow the
// norm's relative error by about sqrt(G) <= 2 over one head's, within the bounds' headroom (the
// multi-head shapes above reach about a fifth of them: see the printed worst).
TEST_P(FlashAttention, GroupedQueryMatchesTheNaiveReference) {
    expect_matches_reference<double>(tiles(), 1e-12, "double", kGroupedShapes);
    expect_matches_reference<float>(tiles(), 2e-5, "fp32", kGroupedShapes);
    expect_matches_reference<bf16_t>(tiles(), 1e-2, "bf16", kGroupedShapes);
    expect_matches_reference<f16_t>(tiles(), 2.5e-3, "fp16", kGroupedShapes);
}

// A wrong tile boundary or a missed rescale would be off by O(1) here, far past these bounds.
template <typename S>
void expect_matches_materialize(const TileGemm& tiles, double tol, const char* type_name) {
    for (const Shape& s : kShapes) {
        const Problem p = rounded<S>(make_problem(s, unsigned(s.T * 17 + 5)));
        const Result f = run_flash<S>(p, tiles), m = run_materialize<S>(p, tiles);
        EXPECT_LE(rel_diff(f.out, m.out), tol) << type_name << " out " << s.name();
        EXPECT_LE(rel_diff(f.dqkv, m.dqkv), tol) << type_name << " dqkv " << s.name();
    }
}

TEST_P(FlashAttention, MatchesTheMaterializingKernel) {
    expect_matches_materialize<double>(tiles(), 2e-12, "double");
    expect_matches_materialize<float>(tiles(), 3e-5, "fp32");
    expect_matches_materialize<bf16_t>(tiles(), 3e-2, "bf16");
    expect_matches_materialize<f16_t>(tiles(), 7.5e-3, "fp16");
}

// Masked keys contribute exact zeros: row 0 of every head is v_0 itself and its lse is s_00.
TEST_P(FlashAttention, FirstRowIsTheFirstValueExactly) {
    const Shape s{2, 130, 2, 16};
    const Problem p = rounded<float>(make_problem(s, 3));
    const Result got = run_flash<float>(p, tiles());
    for (int b = 0; b < s.B; ++b)
        for (int h = 0; h < s.H; ++h)
            for (int e = 0; e < s.hd; ++e)
                EXPECT_EQ(got.out[std::size_t(b) * s.T * s.C() + h * s.hd + e],
                          p.qkv[std::size_t(b) * s.T * 3 * s.C() + 2 * s.C() + h * s.hd + e]);
}

// The grouped problem p with its kv heads repeated for each query head (repeat_kv): multi-head
// attention's qkv [B, T, 3C], the same dout.
Problem repeat_kv(const Problem& p) {
    const Shape& g = p.s;
    const Shape s{g.B, g.T, g.H, g.hd};
    Problem r{s, Vec(std::size_t(s.B) * s.T * s.row()), p.dout};
    const int group = g.H / g.kv();
    for (std::size_t bt = 0; bt < std::size_t(s.B) * s.T; ++bt)
        for (int part = 0; part < 3; ++part)
            for (int h = 0; h < s.H; ++h) {
                const int col = part == 0 ? h : g.H + (part - 1) * g.kv() + h / group;
                for (int e = 0; e < s.hd; ++e)
                    r.qkv[bt * s.row() + std::size_t(part * s.H + h) * s.hd + e] =
                        p.qkv[bt * g.row() + std::size_t(col) * s.hd + e];
            }
    return r;
}

// Grouped-query flash is multi-head flash on the repeated kv heads: forward reads the same k, v
// values for each query head and does the same arithmetic, so out and lse are the same bits, and
// so is dq (it depends on its own head's q, dO, lse and the shared k, v only). A kv head's dk, dv
// are the repeated heads' dk, dv summed: here in float64 from the multi-head results as stored,
// there in the accumulation type across the group before one rounding — two sums of the same
// terms in different orders, each within the float64 reference bound of the tests above (2e-5
// fp32, 1e-2 bf16, 2.5e-3 fp16, 1e-12 double), so they differ by at most twice that.
template <typename S>
void expect_equals_repeated_multi_head(const TileGemm& tiles, double tol, const char* type_name) {
    for (const Shape& g : kGroupedShapes) {
        const Problem p = rounded<S>(make_problem(g, unsigned(g.T * 7 + g.H)));
        const Problem m = repeat_kv(p);
        const Result got = run_flash<S>(p, tiles), want = run_flash<S>(m, tiles);
        EXPECT_EQ(got.out, want.out) << type_name << " out " << g.name();
        EXPECT_EQ(got.lse, want.lse) << type_name << " lse " << g.name();
        const int group = g.H / g.kv(), C = g.C();
        Vec dkv_got, dkv_want; // every dk, dv element of the grouped layout, both ways
        for (std::size_t bt = 0; bt < std::size_t(g.B) * g.T; ++bt) {
            for (int c = 0; c < C; ++c)
                ASSERT_EQ(got.dqkv[bt * g.row() + c], want.dqkv[bt * m.s.row() + c])
                    << type_name << " dq " << g.name() << " at " << bt << ", " << c;
            for (int part = 1; part < 3; ++part)
                for (int k = 0; k < g.kv(); ++k)
                    for (int e = 0; e < g.hd; ++e) {
                        double sum = 0;
                        for (int h = k * group; h < (k + 1) * group; ++h)
                            sum +=
                                want.dqkv[bt * m.s.row() + std::size_t(part * g.H + h) * g.hd + e];
                        dkv_want.push_back(sum);
                        dkv_got.push_back(
                            got.dqkv[bt * g.row() +
                                     std::size_t(g.H + (part - 1) * g.kv() + k) * g.hd + e]);
                    }
        }
        EXPECT_LE(rel_diff(dkv_got, dkv_want), tol) << type_name << " dk, dv " << g.name();
        if (group == 1) { // one head per kv head: nothing to sum, the same bits
            EXPECT_EQ(dkv_got, dkv_want) << type_name << " groups of one " << g.name();
        }
    }
}

TEST_P(FlashAttention, GroupedQueryIsMultiHeadOnRepeatedKvHeads) {
    expect_equals_repeated_multi_head<double>(tiles(), 2e-12, "double");
    expect_equals_repeated_multi_head<float>(tiles(), 4e-5, "fp32");
    expect_equals_repeated_multi_head<bf16_t>(tiles(), 2e-2, "bf16");
    expect_equals_repeated_multi_head<f16_t>(tiles(), 5e-3, "fp16");
}

template <typename S>
void expect_same_bits_on_1_2_3_threads(const std::string& library, const char* type_name,
                                       const Shape& s) {
    const Problem p = rounded<S>(make_problem(s, 9));
    const std::vector<S> qkv = store<S>(p.qkv), dout = store<S>(p.dout);
    std::vector<std::vector<char>> outs;
    for (int threads : {1, 2, 3}) {
        set_threads(threads);
        // oneDNN plans a primitive for the thread count it is built under: a fresh cache each time,
        // as a process started with that --threads builds it.
        OneDnnMatmul fresh;
        const TileGemm tiles = make_tiles(library, fresh);
        std::vector<S> out(p.dout.size()), dqkv(p.qkv.size());
        std::vector<acc_t<S>> lse(std::size_t(s.B) * s.H * s.T);
        flash_attention_forward<S>(out.data(), lse.data(), qkv.data(), s.B, s.T, s.C(), s.H, s.kv(),
                                   tiles);
        flash_attention_backward<S>(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(),
                                    s.B, s.T, s.C(), s.H, s.kv(), tiles);
        std::vector<char> bytes(out.size() * sizeof(S) + lse.size() * sizeof(acc_t<S>) +
                                dqkv.size() * sizeof(S));
        char* w = bytes.data();
        std::memcpy(w, out.data(), out.size() * sizeof(S));
        w += out.size() * sizeof(S);
        std::memcpy(w, lse.data(), lse.size() * sizeof(acc_t<S>));
        w += lse.size() * sizeof(acc_t<S>);
        std::memcpy(w, dqkv.data(), dqkv.size() * sizeof(S));
        outs.push_back(std::move(bytes));
    }
    EXPECT_TRUE(outs[0] == outs[1]) << type_name << ": 1 and 2 threads differ";
    EXPECT_TRUE(outs[0] == outs[2]) << type_name << ": 1 and 3 threads differ";
}

TEST_P(FlashAttention, SameBitsOnOneTwoAndThreeThreads) {
    // Multi-head: 6 (batch, head) pairs, split differently by 2 and 3 threads. Grouped (6 query
    // heads on 2 kv heads): backward's 4 (batch, kv head) pairs and forward's 12 likewise. And
    // GPT-2's head size, 64, whose tiles are the model's (oneDNN plans them by shape).
    for (const Shape& s : {Shape{2, 300, 3, 16}, Shape{2, 300, 6, 16, 2}, Shape{1, 300, 3, 64}}) {
        SCOPED_TRACE(s.name());
        expect_same_bits_on_1_2_3_threads<float>(GetParam(), "fp32", s);
        expect_same_bits_on_1_2_3_threads<bf16_t>(GetParam(), "bf16", s);
        expect_same_bits_on_1_2_3_threads<f16_t>(GetParam(), "fp16", s);
        expect_same_bits_on_1_2_3_threads<double>(GetParam(), "double", s);
    }
}

INSTANTIATE_TEST_SUITE_P(TileLibraries, FlashAttention,
                         ::testing::Values("OpenBLAS", "oneDNN", "oneDNNbf16"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });
