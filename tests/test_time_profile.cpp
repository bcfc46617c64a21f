// The machine profile's pieces (issue 22, item 1): the alpha-beta fit against synthetic times,
// the ring's steps, the model's GEMM shapes against the 6N rule counted by hand, the built-in
// profiles, and the profile file's round trip and its refusals of bad input.
#include "comm/comm_model.h"
#include "core/error.h"
#include "model/family.h"
#include "model/model_presets.h"
#include "plan/alpha_beta_fit.h"
#include "plan/builtin_profiles.h"
#include "plan/machine_profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

using namespace shardlab;

namespace {
// The sweep calibrate uses by default: 4 KiB .. 4 MiB per step, factor 4 (6 sizes).
std::vector<double> sweep() {
    std::vector<double> x;
    for (double b = 4096; b <= 4 << 20; b *= 4) x.push_back(b);
    return x;
}
} // namespace

TEST(AlphaBetaFit, RecoversAlphaAndBetaExactlyFromTimesOnALine) {
    const double alpha = 7e-6, beta = 1.0 / 12e9; // 7 us, 12 GB/s
    std::vector<double> t;
    for (double x : sweep()) t.push_back(alpha + beta * x);
    const AlphaBeta f = fit_alpha_beta(sweep(), t);
    // Only rounding separates them: a few ulps of the sums (relative 1e-12 is ~5000 ulps).
    EXPECT_NEAR(f.alpha_s, alpha, 1e-12 * alpha);
    EXPECT_NEAR(f.beta_s_per_byte, beta, 1e-12 * beta);
    EXPECT_LT(max_relative_residual(f, sweep(), t), 1e-12);
}

TEST(AlphaBetaFit, NoisyTimesWithinTheArguedBound) {
    // Times off the line by a relative e_i with |e_i| <= eps = 5% (signs alternate, sizes
    // irregular). The bound: the fit minimises S = sum r_i^2 (r_i its relative residuals), and
    // the true line (feasible: alpha, beta > 0) scores S <= n (eps / (1 - eps))^2, so every
    // |r_i| <= sqrt(n) eps / (1 - eps); against the true line L, |f_i - L_i| / L_i <= (1 + eps)
    // sqrt(n) eps / (1 - eps) + eps = 0.185 for n = 6. Here L(x_min) = 1.034 alpha and
    // L(x_max) = 36 alpha (beta x_max = 35 alpha), x_max / x_min = 1024. alpha = f(x_min) less
    // the fit's slope term beta_f x_min <= 1.185 L(x_max) / 1023 = 0.042 alpha: within 0.191 +
    // 0.042 = 0.233 alpha. beta = (f(x_max) - f(x_min)) / (x_max - x_min): its numerator is off
    // by at most 0.185 (L(x_max) + L(x_min)) = 6.85 alpha of 34.97 alpha, 0.196. Both < 0.25.
    const double alpha = 4e-6, beta = 1.0 / 30e9, eps = 0.05;
    const double e[] = {+1.0, -0.6, +0.3, -1.0, +0.8, -0.2};
    std::vector<double> t;
    const std::vector<double> x = sweep();
    for (std::size_t i = 0; i < x.size(); ++i)
        t.push_back((alpha + beta * x[i]) * (1 + eps * e[i]));
    const AlphaBeta f = fit_alpha_beta(x, t);
    const double bound = (1 + eps) * std::sqrt(6.0) * eps / (1 - eps) + eps;
    for (double xi : x)
        EXPECT_LE(std::abs(f.seconds(xi) - (alpha + beta * xi)) / (alpha + beta * xi), bound) << xi;
    EXPECT_NEAR(f.alpha_s, alpha, 0.25 * alpha);
    EXPECT_NEAR(f.beta_s_per_byte, beta, 0.25 * beta);
}

TEST(AlphaBetaFit, NeverNegativeAndRefusesTooFewSizes) {
    // Times that fall with size: the best line has beta < 0; the constrained fit is a constant.
    const AlphaBeta flat = fit_alpha_beta({1000, 2000, 4000}, {3e-6, 2e-6, 1e-6});
    EXPECT_EQ(flat.beta_s_per_byte, 0.0);
    EXPECT_GT(flat.alpha_s, 1e-6);
    // Times proportional to size but for a dip at the smallest: alpha < 0 unconstrained.
    const AlphaBeta origin = fit_alpha_beta({1000, 2000, 4000}, {0.5e-6, 2e-6, 4e-6});
    EXPECT_EQ(origin.alpha_s, 0.0);
    EXPECT_GT(origin.beta_s_per_byte, 0.0);
    EXPECT_THROW(fit_alpha_beta({1000, 1000}, {1e-6, 2e-6}), Error);
    EXPECT_THROW(fit_alpha_beta({1000, 2000}, {1e-6, 0.0}), Error);
}

TEST(RingSteps, ReduceScatterAndAllGatherNMinusOneAllReduceTwice) {
    EXPECT_EQ(ring_steps(CollectiveOp::allgather, 2), 1);
    EXPECT_EQ(ring_steps(CollectiveOp::reduce_scatter, 8), 7);
    EXPECT_EQ(ring_steps(CollectiveOp::allreduce, 8), 14);
    EXPECT_EQ(ring_steps(CollectiveOp::allreduce, 1), 0);
    EXPECT_THROW(ring_steps(CollectiveOp::broadcast, 4), UsageError);
}

TEST(GemmShapes, StepFlopsAreSixPerMatmulWeightPerToken) {
    // By hand: a block's linears hold 3d^2 + d^2 + 4d^2 + 4d^2 = 12 d^2 weights, the head Vp d;
    // each weight costs 2 FLOPs per token forward and 4 backward (input and weight gradients).
    ModelConfig c = model_preset("tiny"); // 4 layers, d 256, V 256
    const std::int64_t tokens = 2 * 64;
    double flop = 0;
    for (const GemmShape& g : family(c.arch).gemm_shapes(c, tokens)) flop += g.per_step * g.flop();
    const double weights =
        c.layers * 12.0 * c.hidden * c.hidden + double(c.padded_vocab()) * c.hidden;
    EXPECT_EQ(flop, 6.0 * weights * double(tokens));
    EXPECT_EQ(family(c.arch).gemm_shapes(c, tokens).size(), 15u);
}

TEST(BuiltinProfiles, LoadWithEveryValueCited) {
    ASSERT_EQ(builtin_profile_names(),
              (std::vector<std::string>{"a100-sxm", "h100-pcie", "h100-sxm", "h200-sxm"}));
    for (const std::string& name : builtin_profile_names()) {
        const MachineProfile p = load_profile(name);
        EXPECT_EQ(p.name, name);
        EXPECT_EQ(p.links.size(), 2u) << name;
        for (const char* key :
             {"gemm.bf16", "gemm.fp16", "gemm.fp32", "memory_bound", "copy", "copy.pageable",
              "host_adamw", "links.intra_node", "links.inter_node"})
            EXPECT_TRUE(p.sources.count(key)) << name << " has no source for " << key;
        EXPECT_NE(describe_profile(p).find("source: "), std::string::npos);
    }
    // Values as the datasheets give them (the figures docs/TIME.md lists).
    const MachineProfile h100 = load_profile("h100-sxm");
    EXPECT_EQ(h100.gemm.at("bf16").flop_per_s, 989.4e12);
    EXPECT_EQ(h100.links.at("intra_node").ops.at("allreduce").fit.beta_s_per_byte, 1 / 450e9);
    EXPECT_EQ(h100.links.at("inter_node").ops.at("allgather").fit.alpha_s, 14e-6);
    // The H200: the H100 SXM's compute and links, HBM3e's bandwidth.
    const MachineProfile h200 = load_profile("h200-sxm");
    EXPECT_EQ(h200.gemm.at("bf16").flop_per_s, 989.4e12);
    EXPECT_EQ(h200.memory_bound_bytes_per_s, 4.8e12);
    EXPECT_EQ(h200.links.at("intra_node").ops.at("allreduce").fit.beta_s_per_byte, 1 / 450e9);
}

TEST(MachineProfileFile, RoundTripsThroughJson) {
    MachineProfile p = load_profile("a100-sxm");
    p.links["intra_node"].ops["allgather"].samples = {{4096, 1, 2048, 9e-6}};
    p.gemm["fp32"].shapes = {{{"mlp.fc.forward", 128, 1024, 256, false, false, 4}, 1e-4}};
    p.attention["bf16"]["flash"] = {2.5e13, 3.5e13, 4, 1024, 12, 64};
    p.gemm["fp32"].by_tokens = {{1024, 1.5e13}, {4096, 1.9e13}};
    p.offload_params_per_s["bf16"] = 6.5e8;
    const MachineProfile q = profile_from_json(profile_to_json(p), "memory");
    EXPECT_EQ(profile_to_json(q), profile_to_json(p));
    ASSERT_EQ(q.attention.size(), 1u); // read back, not only written
    EXPECT_EQ(q.attention.at("bf16").at("flash").backward_flop_per_s, 3.5e13);
    EXPECT_EQ(q.attention.at("bf16").at("flash").seq, 1024);
    EXPECT_EQ(q.gemm.at("fp32").by_tokens.at(4096), 1.9e13);
    EXPECT_EQ(q.offload_params_per_s.at("bf16"), 6.5e8);
}

namespace {
std::string refusal(const nlohmann::json& j) {
    try {
        profile_from_json(j, "bad.json");
    } catch (const UsageError& e) {
        return e.what();
    }
    return "accepted";
}
} // namespace

TEST(MachineProfileFile, BadInputIsRefusedNamingTheProblemAndTheFix) {
    const nlohmann::json good = profile_to_json(load_profile("h100-sxm"));
    nlohmann::json missing = good;
    missing["copy"].erase("h2d_pinned_bytes_per_s");
    EXPECT_NE(refusal(missing).find("'copy.h2d_pinned_bytes_per_s' is missing"), std::string::npos);
    EXPECT_NE(refusal(missing).find("shardlab calibrate --out"), std::string::npos);
    nlohmann::json zero = good;
    zero["links"]["inter_node"]["allreduce"]["beta_s_per_byte"] = 0;
    EXPECT_NE(
        refusal(zero).find("'links.inter_node.allreduce.beta_s_per_byte' is 0, it must be > 0"),
        std::string::npos);
    nlohmann::json version = good;
    version["schema_version"] = 99;
    EXPECT_NE(refusal(version).find("schema_version 99, this shardlab reads 1"), std::string::npos);
    EXPECT_NE(refusal(nlohmann::json::array()).find("not a shardlab machine profile"),
              std::string::npos);
    nlohmann::json offload = good;
    offload["host_adamw"]["offload_params_per_s"]["bf16"] = -1;
    EXPECT_NE(refusal(offload).find("host_adamw.offload_params_per_s.bf16 must be a positive"),
              std::string::npos);

    EXPECT_THROW(
        {
            try {
                load_profile("h200-nvl");
            } catch (const UsageError& e) {
                EXPECT_NE(std::string(e.what()).find("unknown profile 'h200-nvl': not a built-in "
                                                     "(a100-sxm, h100-pcie, h100-sxm, h200-sxm)"),
                          std::string::npos);
                throw;
            }
        },
        UsageError);
    const std::string path = ::testing::TempDir() + "corrupt_profile.json";
    std::ofstream(path) << "{\"schema\": \"shardlab machine profile\", \"gemm\": {";
    try {
        load_profile(path);
        ADD_FAILURE() << "a truncated file was accepted";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("is not valid JSON"), std::string::npos) << e.what();
    }
    std::remove(path.c_str());
}
