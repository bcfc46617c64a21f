// --reproducible's exact sums (optim/exact_sum.h, model/kernels/fixed_point.h): the exponent
// arithmetic against values worked out by hand, and the property the whole mode rests on — the
// fixed-point sum of the same values is the same integer in every order and every split.
#include "model/kernels/cpu/fixed_point.h"
#include "model/kernels/fixed_point.h"
#include "optim/exact_sum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using namespace shardlab;

// 12 terms need ceil(log2 12) = 4 bits of room: a value may use 62 - 4 = 58 bits. 1.0 = 0.5 2^1
// (frexp's k = 1) at 4 bits of headroom: e = 58 - 4 - 1 = 53, so 1.0 becomes 2^53 and values up
// to 2^5 = 32 fit (32 2^53 = 2^58): 32 does not overflow, the next float above it does.
TEST(ExactSum, ExponentsAsDerivedByHand) {
    EXPECT_EQ(exact::value_bits(12), 58);
    EXPECT_EQ(exact::value_bits(16), 58);
    EXPECT_EQ(exact::value_bits(17), 57);
    EXPECT_EQ(exact::value_bits(1), 62);
    EXPECT_EQ(exact::exponent_for(1.0f, 12), 53);
    EXPECT_EQ(exact::exponent_for(0.75f, 12), 54); // 0.75 = 0.75 2^0: k = 0
    EXPECT_EQ(exact::exponent_for(65536.0f, 1), 62 - 4 - 17);
    EXPECT_FALSE(exact::overflows(32.0f, 53, 12));
    EXPECT_TRUE(exact::overflows(std::nextafter(32.0f, 64.0f), 53, 12));
    EXPECT_TRUE(exact::overflows(INFINITY, 53, 12));
    EXPECT_TRUE(exact::overflows(NAN, 53, 12));
    // The squares of a unit of 1000 elements (ceil(log2) = 10) whose gradient is at most
    // 2 (0.75 + 2^-53) < 2 = 2^1 (k = 1): f = 62 - 10 - 2 = 50, so 1000 squares of at most
    // 4 sum below 1000 4 2^50 < 2^62.
    EXPECT_EQ(exact::squares_exponent(0.75f, 53, 1000), 50);
}

TEST(ExactSum, ConversionRoundsToNearestEvenAndSaturates) {
    EXPECT_EQ(fixed::to_fixed(1.0, 3), 8);
    EXPECT_EQ(fixed::to_fixed(0.0625 + 0.03125, 3), 1); // 0.75 -> 1
    EXPECT_EQ(fixed::to_fixed(0.0625, 3), 0);           // 0.5 -> 0 (even)
    EXPECT_EQ(fixed::to_fixed(0.1875, 3), 2);           // 1.5 -> 2 (even)
    EXPECT_EQ(fixed::to_fixed(-0.1875, 3), -2);
    EXPECT_EQ(fixed::to_fixed(1e30, 0), std::int64_t(1) << 62);
    EXPECT_EQ(fixed::to_fixed(-1e30, 0), -(std::int64_t(1) << 62));
    EXPECT_EQ(fixed::to_fixed(NAN, 0), 0);
    EXPECT_EQ(fixed::from_fixed(24, 3, 2.0), 1.5);
    EXPECT_EQ(fixed::magnitude(NAN), INFINITY);
}

// G = 24 "sequences" of 1000 gradient values spanning 12 decades, summed in fixed point one
// sequence at a time in three different orders, and split over 1, 2, 3, 4 and 6 "ranks" whose
// partial sums are then added: every way gives the same integers. The float sum of the same
// values in two orders does not (the reason for the mode), which the test also shows.
TEST(ExactSum, TheSumIsTheSameInEveryOrderAndSplit) {
    constexpr int G = 24;
    constexpr std::size_t n = 1000;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<std::vector<float>> g(G, std::vector<float>(n));
    float amax = 0;
    for (auto& seq : g)
        for (std::size_t i = 0; i < n; ++i) {
            seq[i] = u(rng) * std::pow(10.0f, float(int(i % 12)) - 9.0f);
            amax = std::max(amax, std::fabs(seq[i]));
        }
    const int e = exact::exponent_for(amax, G);
    float seen = 0; // the largest |value| the sums met: all of them, in the end
    auto sum_in = [&](const std::vector<int>& order) {
        std::vector<std::int64_t> acc(n, 0);
        for (int s : order)
            seen = std::max(seen, cpu::fixed_accumulate(acc.data(), g[s].data(), n, e));
        return acc;
    };
    std::vector<int> order(G);
    for (int s = 0; s < G; ++s) order[s] = s;
    const std::vector<std::int64_t> reference = sum_in(order);
    EXPECT_EQ(seen, amax);
    std::reverse(order.begin(), order.end());
    EXPECT_EQ(sum_in(order), reference);
    std::shuffle(order.begin(), order.end(), rng);
    EXPECT_EQ(sum_in(order), reference);
    for (int ranks : {1, 2, 3, 4, 6}) {
        std::vector<std::int64_t> total(n, 0);
        for (int r = 0; r < ranks; ++r) {
            std::vector<int> mine;
            for (int s = r * G / ranks; s < (r + 1) * G / ranks; ++s) mine.push_back(s);
            const std::vector<std::int64_t> part = sum_in(mine);
            for (std::size_t i = 0; i < n; ++i) total[i] += part[i];
        }
        EXPECT_EQ(total, reference) << ranks << " ranks";
    }
    // The float sums of the same values in two orders differ somewhere.
    std::vector<float> fwd(n, 0.0f), bwd(n, 0.0f);
    for (int s = 0; s < G; ++s)
        for (std::size_t i = 0; i < n; ++i) fwd[i] += g[s][i], bwd[i] += g[G - 1 - s][i];
    EXPECT_NE(fwd, bwd);
    // And the mean read back is the float64 mean within the grid's rounding — each term rounded
    // by at most 2^-(e+1), so their mean by as much — plus the one rounding into fp32: the
    // precision the mode trades for its exactness (values far below the largest keep fewer bits).
    std::vector<float> mean(n);
    cpu::fixed_to_float(mean.data(), reference.data(), n, e, double(G));
    for (std::size_t i = 0; i < n; ++i) {
        double exact = 0;
        for (int s = 0; s < G; ++s) exact += double(g[s][i]);
        exact /= G;
        EXPECT_NEAR(mean[i], exact, std::ldexp(1.0, -(e + 1)) + std::fabs(exact) * 0x1p-24) << i;
    }
}
