// plan --fit's search (plan/fit_search.h) against a brute force written here: every configuration
// the issue names planned and timed one by one, the fitting ones kept. The search must list, per
// family, exactly the fastest of them; its first choice must be the fastest of all; a budget one
// byte under the smallest configuration must fit nothing and name that configuration.
#include "core/error.h"
#include "plan/fit_search.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shardlab {
namespace {

PlanModel model() {
    return plan_model_from(ModelConfig{64, 16, 4, 32, 2, 2, 64}, "fit test");
}

// Rates chosen so that every term matters: communication is slow enough that the stages differ,
// the host update slow enough that offload costs time.
MachineProfile profile() {
    MachineProfile p;
    p.name = "test";
    p.gemm["bf16"].flop_per_s = 1e9;
    p.memory_bound_bytes_per_s = 1e9;
    p.h2d_pinned_bytes_per_s = p.d2h_pinned_bytes_per_s = 1e8;
    p.h2d_pageable_bytes_per_s = p.d2h_pageable_bytes_per_s = 5e7;
    p.host_adamw_params_per_s = 1e7;
    for (const char* cls : {"intra_node", "inter_node"})
        for (const char* op : {"allgather", "reduce_scatter", "allreduce"})
            p.links[cls].ops[op].fit = {1e-5, 1e-9};
    p.links["inter_node"].ops["allgather"].fit = {5e-5, 1e-8};
    p.links["inter_node"].ops["reduce_scatter"].fit = {5e-5, 1e-8};
    p.links["inter_node"].ops["allreduce"].fit = {5e-5, 1e-8};
    return p;
}

PlanOptions base(int ranks, int per_node) {
    PlanOptions o;
    o.ranks = ranks, o.precision = Precision::bf16;
    if (per_node) o.nodes = NodeLayout::blocks(ranks, per_node);
    return o;
}

struct Brute {
    double tokens_per_s;
    std::uint64_t device;
    PlanOptions o;
};

// Every configuration, independently of the search's loops and pruning.
// Flat; HSDP over the node (ZeRO 1-3); hpZ's secondary shard over the node (ZeRO-3).
std::vector<std::pair<int, int>> shardings(int zero, int per_node) {
    std::vector<std::pair<int, int>> s{{0, 0}};
    if (per_node && zero >= 1) s.push_back({per_node, 0});
    if (per_node && zero == 3) s.push_back({0, per_node});
    return s;
}

std::vector<Brute> brute_force(const PlanOptions& b, std::uint64_t budget, int global_batch) {
    std::vector<Brute> out;
    const int per_node = b.nodes.nodes() > 1 ? b.nodes.uniform_ranks_per_node() : 0;
    for (int zero = 0; zero <= 3; ++zero)
        for (int offload = 0; offload < 2; ++offload)
            for (int every : {0, 1, 2})
                for (int prefetch = 0; prefetch <= (zero == 3 ? 2 : 0); ++prefetch)
                    for (const auto& [sg, sec] : shardings(zero, per_node))
                        for (int mb = 1; mb <= 1024; ++mb) {
                            int accum = 1;
                            if (global_batch) {
                                if ((global_batch / b.ranks) % mb) continue;
                                accum = global_batch / b.ranks / mb;
                            } else if ((mb & (mb - 1)) != 0) {
                                continue;
                            }
                            PlanOptions o = b;
                            o.zero = zero, o.offload = offload, o.checkpoint = {every};
                            o.prefetch = prefetch, o.shard_group = sg, o.secondary_shard = sec;
                            o.micro_batch = mb, o.grad_accum = accum;
                            const Plan p = make_plan(model(), o);
                            if (p.memory.device_total > budget) continue;
                            out.push_back({predict_time(p, profile()).tokens_per_s,
                                           p.memory.device_total, o});
                        }
    return out;
}

bool same_family(const PlanOptions& a, const PlanOptions& b) {
    return a.zero == b.zero && a.offload == b.offload && a.checkpoint.every == b.checkpoint.every &&
           a.shard_group == b.shard_group && a.secondary_shard == b.secondary_shard;
}

void expect_matches_brute_force(const PlanOptions& b, std::uint64_t budget, int global_batch) {
    const FitResult r = fit_search(model(), b, profile(), FitRequest{budget, global_batch, 100});
    const std::vector<Brute> all = brute_force(b, budget, global_batch);
    ASSERT_FALSE(r.ranked.empty());
    EXPECT_EQ(r.fitting, int(all.size()));
    // The first choice is the fastest configuration there is.
    double fastest = 0;
    for (const Brute& x : all) fastest = std::max(fastest, x.tokens_per_s);
    // Ties to rounding (1e-9 relative) go to the larger micro-batch, so "the fastest" is to 1e-9.
    EXPECT_NEAR(r.ranked.front().time.tokens_per_s, fastest, 1e-9 * fastest);
    // Every family once: a place, or tied with one.
    std::vector<const FitCandidate*> listed;
    for (const FitCandidate& c : r.ranked) {
        listed.push_back(&c);
        for (const FitCandidate& t : c.ties) listed.push_back(&t);
    }
    for (std::size_t i = 0; i < r.ranked.size(); ++i) {
        const FitCandidate& c = r.ranked[i];
        if (i) { // places differ by more than a tie
            EXPECT_LT(c.time.tokens_per_s, r.ranked[i - 1].time.tokens_per_s * (1 - kFitTie));
        }
        for (const FitCandidate& t : c.ties) {
            EXPECT_LE(t.time.tokens_per_s, c.time.tokens_per_s * (1 + 1e-9));
            EXPECT_GE(t.time.tokens_per_s, c.time.tokens_per_s * (1 - kFitTie));
        }
    }
    for (std::size_t i = 0; i < listed.size(); ++i) {
        const FitCandidate& c = *listed[i];
        EXPECT_LE(c.plan.memory.device_total, budget);
        EXPECT_TRUE(c.plan.fits); // re-planned with the budget, as `plan --gpu` shows it
        if (global_batch) {
            EXPECT_EQ(c.plan.options.micro_batch * c.plan.options.grad_accum * b.ranks,
                      global_batch);
        }
        // The best of its family, and the only one of it listed.
        for (const Brute& x : all) {
            if (same_family(x.o, c.plan.options)) {
                EXPECT_LE(x.tokens_per_s, c.time.tokens_per_s * (1 + 1e-9));
            }
        }
        for (std::size_t j = 0; j < i; ++j)
            EXPECT_FALSE(same_family(listed[j]->plan.options, c.plan.options));
    }
    // Every family with a fitting member is listed (top = 100 is more than there are).
    for (const Brute& x : all)
        EXPECT_TRUE(std::any_of(listed.begin(), listed.end(), [&](const FitCandidate* c) {
            return same_family(x.o, c->plan.options);
        }));
}

TEST(FitSearch, ListsTheFastestOfEachFamilyOneNode) {
    expect_matches_brute_force(base(2, 0), 400000, 0);
}

TEST(FitSearch, HoldsTheGlobalBatchAndSearchesHybridLayouts) {
    expect_matches_brute_force(base(4, 2), 600000, 24);
}

TEST(FitSearch, NothingFitsOneByteUnderTheSmallest) {
    const PlanOptions b = base(2, 0);
    const FitResult all = fit_search(model(), b, profile(), FitRequest{~0ull, 0, 5});
    ASSERT_TRUE(all.smallest);
    const std::uint64_t least = all.smallest->memory.device_total;
    const PlanOptions& s = all.smallest->options;
    EXPECT_EQ(s.zero, 3);
    EXPECT_TRUE(s.offload);
    EXPECT_EQ(s.checkpoint.every, 1);
    EXPECT_EQ(s.micro_batch, 1);
    const FitResult none = fit_search(model(), b, profile(), FitRequest{least - 1, 0, 5});
    EXPECT_TRUE(none.ranked.empty());
    EXPECT_EQ(none.fitting, 0);
    EXPECT_EQ(none.smallest->memory.device_total, least);
    const FitResult one = fit_search(model(), b, profile(), FitRequest{least, 0, 5});
    ASSERT_EQ(one.ranked.size(), 1u);
    EXPECT_TRUE(one.ranked[0].ties.empty());
    EXPECT_EQ(describe_options(one.ranked[0].plan.options), describe_options(s));
    // Twice the ranks halve the sharded states: the smallest then fits one byte less.
    EXPECT_EQ(ranks_to_fit(model(), b, least - 1), 4);
    EXPECT_EQ(ranks_to_fit(model(), b, least), 2);
    EXPECT_EQ(ranks_to_fit(model(), b, 1000), 0); // one sequence's activations alone exceed it
}

// One rank: stage 0 only, and among micro-batch splits the model prices alike, the largest.
TEST(FitSearch, OneRankPrefersTheLargerMicroBatchAtEqualSpeed) {
    const FitResult r = fit_search(model(), base(1, 0), profile(), FitRequest{~0ull, 8, 100});
    ASSERT_FALSE(r.ranked.empty());
    for (const FitCandidate& c : r.ranked) {
        EXPECT_EQ(c.plan.options.zero, 0);
        EXPECT_EQ(c.plan.options.micro_batch, 8); // 8 x 1 beside 4 x 2, 2 x 4, 1 x 8
        for (const FitCandidate& t : c.ties) EXPECT_EQ(t.plan.options.micro_batch, 8);
    }
}

TEST(FitSearch, RefusesAGlobalBatchThatDoesNotDivide) {
    EXPECT_THROW(fit_search(model(), base(4, 0), profile(), FitRequest{1u << 30, 6, 5}),
                 UsageError);
}

TEST(FitSearch, DescribesAConfigurationOnOneLine) {
    PlanOptions o = base(4, 2);
    o.zero = 3, o.offload = true, o.checkpoint = {2}, o.micro_batch = 2, o.grad_accum = 3;
    o.prefetch = 1, o.secondary_shard = 2;
    EXPECT_EQ(describe_options(o),
              "ZeRO-3 + offload, checkpoint every:2, micro-batch 2 x 3, prefetch 1, hpz:2");
}

} // namespace
} // namespace shardlab
