// The time model (plan/time_model.h) against values derived by hand in docs/TIME.md sections 5-9,
// on a model small enough to count by hand (section 9's "worked example": V = Vp = 64, T = 8,
// L = 2, d = 16, 2 heads; micro-batch 1, bf16) and a profile of round rates: 1e9 FLOP/s, 1e9 B/s,
// alpha 10 us and beta 1 ns/B on every collective. Every count is an integer below 2^53 and every
// rate a power of ten, so the only rounding is the division by 1e9 and the sums of a few terms:
// relative 1e-12 is far above it (a few ulps) and far below any formula's error (one byte, one
// FLOP or one alpha is >= 1e-5 relative here).
#include "core/error.h"
#include "plan/memory_plan.h"
#include "plan/time_model.h"

#include <gtest/gtest.h>

namespace shardlab {
namespace {

constexpr double kTol = 1e-12;
#define EXPECT_REL(a, b) EXPECT_NEAR((a), (b), kTol* std::abs(b))

PlanModel tiny_model() {
    return plan_model_from(ModelConfig{64, 8, 2, 16, 2, 2, 64}, "by hand");
}

MachineProfile round_profile() {
    MachineProfile p;
    p.name = "round";
    p.gemm["bf16"].flop_per_s = 1e9;
    p.memory_bound_bytes_per_s = 1e9;
    p.h2d_pinned_bytes_per_s = p.d2h_pinned_bytes_per_s = 2e9;
    p.h2d_pageable_bytes_per_s = p.d2h_pageable_bytes_per_s = 1e9;
    p.host_adamw_params_per_s = 1e9;
    for (const char* cls : {"intra_node", "inter_node"})
        for (const char* op : {"allgather", "reduce_scatter", "allreduce"})
            p.links[cls].ops[op].fit = {1e-5, 1e-9};
    p.links["inter_node"].ops["allgather"].fit = {2e-5, 4e-9};
    return p;
}

PlanOptions options(int ranks, int zero) {
    PlanOptions o;
    o.ranks = ranks, o.zero = zero, o.precision = Precision::bf16, o.micro_batch = 1;
    return o;
}

TEST(TimeModel, WorkCountsOfSectionFive) {
    const PlanModel m = tiny_model();
    EXPECT_EQ(m.params, 7744u); // 1152 + 2 x 3280 + 32 (section 9)
    const StepWork w = micro_batch_work(m, options(1, 0));
    EXPECT_EQ(w.block_forward.gemm_flop, 49152);      // 24 N d^2
    EXPECT_EQ(w.block_backward.gemm_flop, 98304);     // 48 N d^2
    EXPECT_EQ(w.head_forward.gemm_flop, 16384);       // 2 N Vp d
    EXPECT_EQ(w.head_backward.gemm_flop, 32768);      // 4 N Vp d
    EXPECT_EQ(w.block_forward.attention_flop, 2304);  // 2 B d T (T + 1)
    EXPECT_EQ(w.block_backward.attention_flop, 5760); // flash: 5 B d T (T + 1)
    EXPECT_EQ(w.block_forward.bytes, 6656);           // 26 N d es
    EXPECT_EQ(w.block_backward.bytes, 13312);         // 52 N d es
    EXPECT_EQ(w.head_forward.bytes, 2560);            // (2 N d + 2 N Vp) es
    EXPECT_EQ(w.head_backward.bytes, 3072);           // (4 N d + 2 N Vp) es
    EXPECT_EQ(w.embed_forward.bytes, 768);            // 3 N d es
    PlanOptions o = options(1, 0);
    o.attention = AttentionKind::materialize;
    o.checkpoint = CheckpointPolicy{1};
    const StepWork x = micro_batch_work(m, o);
    EXPECT_EQ(x.block_backward.attention_flop, 4608); // 4 B d T (T + 1)
    EXPECT_EQ(x.recomputed_blocks, 2);
    EXPECT_THROW(micro_batch_work(plan_model_params_only(1e9), o), UsageError);
}

// A Llama small enough to count by hand (section 5.2): V = Vp = 64, T = 8, L = 2, d = 16, H = 4
// query heads of Dh = 4 sharing Hkv = 2 key/value heads (k = 8 wide), ffn f = 40, untied head;
// micro-batch 1, bf16: N = 8, es = 2. Each count is written out here kernel by kernel, from
// model/llama/llama_model.cpp's calls, not from the sums model/llama/llama_costs.cpp uses.
PlanModel tiny_llama(bool tied = false) {
    return plan_model_from(ModelConfig{64, 8, 2, 16, 4, 2, 64, Architecture::llama, 40, tied},
                           "llama by hand");
}

TEST(TimeModel, LlamaWorkCountsOfSectionFive) {
    const double N = 8, d = 16, k = 8, f = 40, Vp = 64, es = 2, B = 1, T = 8;
    const double qkv = d + 2 * k; // the fused [q | k | v] row
    const StepWork w = micro_batch_work(tiny_llama(), options(1, 0));
    // GEMMs (2 m n k each): qkv, o_proj, gate, up, down forward; backward twice that.
    const double gemm = 2 * N * d * qkv + 2 * N * d * d + 3 * (2 * N * d * f);
    EXPECT_EQ(gemm, 43008);
    EXPECT_EQ(w.block_forward.gemm_flop, gemm);
    EXPECT_EQ(w.block_backward.gemm_flop, 2 * gemm);
    EXPECT_EQ(w.head_forward.gemm_flop, 2 * N * Vp * d);
    EXPECT_EQ(w.head_backward.gemm_flop, 4 * N * Vp * d);
    // Attention per query head, H Dh = d: as multi-head attention of the same width.
    EXPECT_EQ(w.block_forward.attention_flop, 2 * B * d * T * (T + 1));
    EXPECT_EQ(w.block_backward.attention_flop, 5 * B * d * T * (T + 1));
    // Forward: rmsnorm (x, n1), rope in place over q and k (read + write), residual (h, x, h),
    // rmsnorm (h, n2), swiglu (gate, up, act), residual (out, h, out).
    const double fwd = 2 * N * d + 2 * N * (d + k) + 3 * N * d + 2 * N * d + 3 * N * f + 3 * N * d;
    EXPECT_EQ(fwd * es, 5248);
    EXPECT_EQ(w.block_forward.bytes, fwd * es);
    // Backward: swiglu (dact, gate, up; dgate, dup), rmsnorm (dy, h; dx read and written),
    // rope's inverse over dq, dk, rmsnorm (dy, x; dx read and written).
    const double bwd = 5 * N * f + 4 * N * d + 2 * N * (d + k) + 4 * N * d;
    EXPECT_EQ(w.block_backward.bytes, bwd * es);
    // Head: the final rmsnorm and the cross-entropy; backward zeroes dx first.
    EXPECT_EQ(w.head_forward.bytes, (2 * N * d + 2 * N * Vp) * es);
    EXPECT_EQ(w.head_backward.bytes, (N * d + 4 * N * d + 2 * N * Vp) * es);
    // embed_tokens: rows read, x written (no position table); backward dx read, rows accumulated.
    EXPECT_EQ(w.embed_forward.bytes, 2 * N * d * es);
    EXPECT_EQ(w.embed_backward.bytes, 3 * N * d * es);
    // A tied head runs the same products (the embedding is the head's matrix).
    const StepWork t = micro_batch_work(tiny_llama(true), options(1, 0));
    EXPECT_EQ(t.head_forward.gemm_flop, w.head_forward.gemm_flop);
    EXPECT_EQ(t.head_backward.bytes, w.head_backward.bytes);
    // Multi-head (Hkv = H): k = d.
    const PlanModel mha =
        plan_model_from(ModelConfig{64, 8, 2, 16, 4, 4, 64, Architecture::llama, 40, false}, "mha");
    const StepWork m = micro_batch_work(mha, options(1, 0));
    EXPECT_EQ(m.block_forward.gemm_flop, gemm + 2 * (2 * N * d * (d - k)));
    EXPECT_EQ(m.block_forward.bytes, w.block_forward.bytes + 2 * N * (d - k) * es);
    PlanOptions o = options(1, 0);
    o.checkpoint = CheckpointPolicy{2}; // every second layer: layer 0
    EXPECT_EQ(micro_batch_work(tiny_llama(), o).recomputed_blocks, 1);
    o.attention = AttentionKind::materialize; // a Llama runs flash only, as LlamaModel says
    EXPECT_THROW(micro_batch_work(tiny_llama(), o), UsageError);
}

// The Llama's step at the round rates: the work above, each term at 1e9 per second, and the
// update of its 7504 parameters (1024 + 2 x 2720 + 1040) at 28 B each.
TEST(TimeModel, LlamaOneRankStepIsComputePlusUpdate) {
    const PlanModel m = tiny_llama();
    EXPECT_EQ(m.params, 7504u);
    const TimePrediction t = predict_time(make_plan(m, options(1, 0)), round_profile());
    EXPECT_REL(t.forward_s, (512 + 2 * (43008 + 2304 + 5248) + 16384 + 2560) * 1e-9);
    EXPECT_REL(t.backward_s, (768 + 2 * (86016 + 5760 + 6016) + 32768 + 3328) * 1e-9);
    EXPECT_REL(t.optimizer_s, 7504 * 28e-9);
    EXPECT_REL(t.step_s, t.forward_s + t.backward_s + t.optimizer_s);
}

TEST(TimeModel, OneRankStepIsComputePlusUpdate) {
    const Plan plan = make_plan(tiny_model(), options(1, 0));
    const TimePrediction t = predict_time(plan, round_profile());
    EXPECT_REL(t.forward_s, 135936e-9);   // 768 + 2 x 58112 + 18944
    EXPECT_REL(t.backward_s, 271360e-9);  // 768 + 2 x 117376 + 35840
    EXPECT_REL(t.optimizer_s, 216832e-9); // 7744 x (24 + 2 x 2)
    EXPECT_EQ(t.exposed_comm_s, 0);
    EXPECT_TRUE(t.collectives.empty()); // a group of one sends nothing
    EXPECT_REL(t.step_s, 624128e-9);
    EXPECT_REL(t.tokens_per_s, 8 / 624128e-9);
    EXPECT_EQ(t.critical_path, "backward compute (43% of the step)");
    // Two micro-batches, every block checkpointed: twice the compute, the blocks' forward again.
    PlanOptions o = options(1, 0);
    o.grad_accum = 2, o.checkpoint = CheckpointPolicy{1};
    const TimePrediction c = predict_time(make_plan(tiny_model(), o), round_profile());
    EXPECT_REL(c.recompute_s, 2 * 2 * 58112e-9);
    EXPECT_REL(c.step_s, 2 * (135936e-9 + 271360e-9 + 2 * 58112e-9) + 216832e-9);
}

// The device update's bytes follow the run's states (section 7): with an fp32 master 8 + 2 es
// beside m and v; without one (fp32, --no-master) the parameters read and written in the dtype,
// 2 es; the gradient read, es; m and v read and written in their format (8-bit: one fp32 absmax
// per 2048 of each unit's m and of its v).
TEST(TimeModel, DeviceUpdateBytesFollowMasterAndMomentFormat) {
    MachineProfile p = round_profile();
    p.gemm["fp32"].flop_per_s = 1e9;
    auto update = [&](Precision precision, bool master, OptimizerStates states) {
        PlanOptions o = options(1, 0);
        o.precision = precision, o.master = master, o.optimizer_states = states;
        return predict_time(make_plan(tiny_model(), o), p).optimizer_s;
    };
    EXPECT_REL(update(Precision::bf16, true, OptimizerStates::fp32), 7744 * 28e-9);  // 8+16+4
    EXPECT_REL(update(Precision::fp32, true, OptimizerStates::fp32), 7744 * 28e-9);  // 8+16+4
    EXPECT_REL(update(Precision::bf16, false, OptimizerStates::fp32), 7744 * 22e-9); // 4+16+2
    EXPECT_REL(update(Precision::bf16, true, OptimizerStates::bf16), 7744 * 20e-9);  // 12+8
    // 7744 x 12 + 4 x (7744 + 4 x (1 + 2 + 2 + 1)): units 1152, 3280, 3280, 32
    EXPECT_REL(update(Precision::bf16, true, OptimizerStates::int8), 124000e-9);
}

// Attention at its own measured rates (section 5): the block's 2304 forward FLOPs at 5e8 FLOP/s,
// its 5760 backward (flash) at 2.5e8; the materialising kernels' entry is not this run's.
TEST(TimeModel, AttentionAtItsOwnRateWhenTheProfileHasOne) {
    MachineProfile p = round_profile();
    p.attention["bf16"]["flash"] = {5e8, 2.5e8, 1, 8, 2, 8};
    p.attention["bf16"]["materialize"] = {1e3, 1e3, 1, 8, 2, 8};
    const Plan plan = make_plan(tiny_model(), options(1, 0));
    const TimePrediction base = predict_time(plan, round_profile());
    const TimePrediction t = predict_time(plan, p);
    EXPECT_REL(t.attention_s, 2 * (2304 / 5e8 + 5760 / 2.5e8));
    EXPECT_REL(t.forward_s, base.forward_s + 2 * (2304 / 5e8 - 2304e-9));
    EXPECT_REL(t.backward_s, base.backward_s + 2 * (5760 / 2.5e8 - 5760e-9));
    EXPECT_REL(t.gemm_s, base.gemm_s);
    EXPECT_REL(base.attention_s, 2 * (2304 + 5760) * 1e-9); // no entry: the GEMM rate
    p.attention.erase("bf16");
    p.attention["fp32"]["flash"] = {1e3, 1e3, 1, 8, 2, 8}; // another dtype's: not this run's
    EXPECT_REL(predict_time(plan, p).attention_s, base.attention_s);
}

// The GEMM rate at the micro-batch's rows (section 5): timed at 8 and 32 rows (micro-batch 1 and
// 4 of T = 8), 1e9 and 2e9 FLOP/s; micro-batch 2 (16 rows) sits halfway in log(rows): 1.5e9.
// Below and above the timed sizes, the nearest one's rate.
TEST(TimeModel, GemmRateFollowsTheMicroBatchsRows) {
    GemmRate g;
    g.flop_per_s = 2e9;
    EXPECT_EQ(gemm_rate_at(g, 16), 2e9); // nothing by size: the one rate
    g.by_tokens = {{8, 1e9}, {32, 2e9}};
    EXPECT_EQ(gemm_rate_at(g, 8), 1e9);
    EXPECT_EQ(gemm_rate_at(g, 32), 2e9);
    EXPECT_REL(gemm_rate_at(g, 16), 1.5e9);
    EXPECT_EQ(gemm_rate_at(g, 4), 1e9);
    EXPECT_EQ(gemm_rate_at(g, 64), 2e9);
    MachineProfile p = round_profile();
    p.gemm["bf16"] = g;
    PlanOptions o = options(1, 0);
    o.micro_batch = 2;
    const TimePrediction t = predict_time(make_plan(tiny_model(), o), p);
    const StepWork w = micro_batch_work(tiny_model(), o);
    const double gemm_flop = 2 * (w.block_forward.gemm_flop + w.block_backward.gemm_flop) +
                             w.head_forward.gemm_flop + w.head_backward.gemm_flop;
    EXPECT_REL(t.gemm_s, gemm_flop / 1.5e9);
}

TEST(TimeModel, CollectiveIsStepsTimesTheSlowestClassPerStep) {
    std::string link;
    // 4 ranks on a node, all-gather of 1000 bf16: 3 steps of 500 B, 3 (10 us + 0.5 us).
    EXPECT_REL(collective_seconds(round_profile(), CollectiveOp::allgather, 1000, 2,
                                  NodeLayout::single_node(4), 0, &link),
               31.5e-6);
    EXPECT_EQ(link, "intra_node");
    // 2 nodes x 2: the ring crosses both; inter's 20 us + 2 us per step paces it (rank 0 itself
    // sends only inside its node).
    EXPECT_REL(collective_seconds(round_profile(), CollectiveOp::allgather, 1000, 2,
                                  NodeLayout::blocks(4, 2), 0, &link),
               66e-6);
    EXPECT_EQ(link, "inter_node");
    std::map<std::string, double> by_link; // each class as the pace: 3 (10 + 0.5), 3 (20 + 2)
    collective_seconds(round_profile(), CollectiveOp::allgather, 1000, 2, NodeLayout::blocks(4, 2),
                       0, nullptr, &by_link);
    EXPECT_REL(by_link.at("intra_node"), 31.5e-6);
    EXPECT_REL(by_link.at("inter_node"), 66e-6);
    MachineProfile one = round_profile();
    one.links.erase("inter_node");
    EXPECT_THROW(
        collective_seconds(one, CollectiveOp::allgather, 1000, 2, NodeLayout::blocks(4, 2), 0),
        UsageError);
}

TEST(TimeModel, StageZeroReducesAtTheStepFullyExposed) {
    const Plan plan = make_plan(tiny_model(), options(2, 0));
    const MachineProfile p = round_profile();
    const TimePrediction t = predict_time(plan, p);
    // Four units' all-reduces over 2 ranks, 2 steps of P/2 x 2 B each: 2 (10 us + P ns), summed
    // over P = 1152, 3280, 3280, 32: 80 us + 15.488 us; plus the two one-element scalars.
    const double scalar =
        collective_seconds(p, CollectiveOp::allreduce, 1, 4, NodeLayout::single_node(2), 0);
    EXPECT_REL(t.exposed_by_op.at("allreduce"), 95.488e-6 + 2 * scalar);
    EXPECT_REL(t.exposed_comm_s, t.comm_s); // nothing overlaps at stage 0
    // The collectives' bytes are the plan's, key by key.
    for (const CollectiveTime& c : t.collectives)
        EXPECT_EQ(c.bytes.total(), plan.comm.by_op.at(c.op)) << c.op;
}

TEST(TimeModel, StageTwoHidesReduceScattersBehindTheNextUnitsBackward) {
    const Plan plan = make_plan(tiny_model(), options(2, 2));
    const MachineProfile p = round_profile();
    const TimePrediction t = predict_time(plan, p);
    // Section 8's worked case: ln_f's and block 2's reduce-scatters hide behind blocks 2's and
    // 1's backward (117 us each); block 1's (10 us + 1640 x 2 ns = 13.28 us) outlasts the
    // embeddings' backward (0.768 us); the embeddings' (10 us + 576 x 2 ns = 11.152 us) follows it:
    // 13.28 + 11.152 - 0.768 = 23.664 us exposed.
    EXPECT_REL(t.exposed_by_op.at("reduce_scatter"), 23.664e-6);
    // The publish all-gathers after the update: all exposed, 4 units, 1 step of P ns each.
    EXPECT_REL(t.exposed_by_op.at("allgather"), 40e-6 + 7.744e-6);
    for (const CollectiveTime& c : t.collectives)
        EXPECT_EQ(c.bytes.total(), plan.comm.by_op.at(c.op)) << c.op;
}

TEST(TimeModel, StageThreePrefetchHidesGathers) {
    const MachineProfile p = round_profile();
    const Plan p0 = make_plan(tiny_model(), options(2, 3));
    const TimePrediction t0 = predict_time(p0, p);
    // prefetch 0: each gather starts when the compute before it ends: all exposed; and in
    // backward blocks 2's and 1's gathers queue on the comm stream behind the reduce-scatter
    // enqueued just before them, ln_f's (10 us + 16 x 2 ns) and block 2's (13.28 us), which the
    // compute stream then waits for too: 23.312 us more. The reduce-scatters' own exposure is
    // stage 2's, 23.664 us.
    double gathers = 0;
    for (const CollectiveTime& c : t0.collectives)
        if (c.op == "allgather") gathers = c.seconds;
    EXPECT_REL(t0.exposed_by_op.at("allgather"), gathers + 23.312e-6);
    EXPECT_REL(t0.exposed_by_op.at("reduce_scatter"), 23.664e-6);
    PlanOptions o = options(2, 3);
    o.prefetch = 1;
    const TimePrediction t1 = predict_time(make_plan(tiny_model(), o), p);
    EXPECT_LT(t1.exposed_by_op.at("allgather"), 0.5 * t0.exposed_by_op.at("allgather"));
    EXPECT_REL(t1.comm_s, t0.comm_s); // the same gathers, sooner
}

// Hybrid sharding at stage 2 on 2 nodes x 2: a unit's gradient is reduce-scattered inside the
// node, then all-reduced across the nodes. A wait on a reduction is charged to the reduce-scatter
// up to its end and to the all-reduce beyond (it was all charged to the reduce-scatter). With
// the inter-node all-reduce at 1 ms + 100 ns/B a step: the step's end waits at least for the
// whole of the embeddings' all-reduce, 576 bf16 over 2 replicas: 2 steps of 576 B, 2.1152 ms.
TEST(TimeModel, HybridWaitsAreChargedToTheAcrossAllReduce) {
    MachineProfile p = round_profile();
    p.links["inter_node"].ops["allreduce"].fit = {1e-3, 1e-7};
    PlanOptions o = options(4, 2);
    o.nodes = NodeLayout::blocks(4, 2);
    o.shard_group = 2;
    const TimePrediction t = predict_time(make_plan(tiny_model(), o), p);
    ASSERT_EQ(t.exposed_by_op.count("allreduce@replicate"), 1u);
    EXPECT_GE(t.exposed_by_op.at("allreduce@replicate"), 2.1152e-3 * (1 - kTol));
}

// Every layout the plan has — flat, hybrid (shard and replicate groups), hpZ (re-gathers inside
// the node), every stage, on 2 nodes x 2, with and without --reproducible (int64 reductions, a
// sequence a micro-batch) — prices exactly the collectives the plan counts: the same keys with
// bytes, the same bytes (section 6: the plan's bytes, not a second count).
TEST(TimeModel, CollectivesAreThePlansInEveryLayout) {
    for (int zero = 0; zero <= 3; ++zero)
        for (int variant = 0; variant < 5; ++variant) {
            if ((variant == 1 || variant == 4) && zero == 0) continue; // hybrid: stages 1-3
            if (variant == 2 && zero != 3) continue;                   // hpZ: stage 3
            PlanOptions o = options(4, zero);
            o.nodes = NodeLayout::blocks(4, 2);
            if (variant == 1 || variant == 4) o.shard_group = 2;
            if (variant == 2) o.secondary_shard = 2;
            if (variant >= 3) o.reproducible = true, o.micro_batch = 2;
            for (int rank = 0; rank < 4; ++rank) {
                const Plan plan = make_plan(tiny_model(), o, rank);
                const TimePrediction t = predict_time(plan, round_profile(), rank);
                std::map<std::string, std::uint64_t> mine, plans;
                for (const CollectiveTime& c : t.collectives) mine[c.op] = c.bytes.total();
                for (const auto& [op, b] : plan.comm.by_op)
                    if (b > 0) plans[op] = b;
                EXPECT_EQ(mine, plans)
                    << "zero " << zero << " variant " << variant << " rank " << rank;
            }
        }
}

TEST(TimeModel, OffloadPipelineSpanOfSectionSeven) {
    PlanOptions o = options(1, 0);
    o.offload = true;
    const TimePrediction t = predict_time(make_plan(tiny_model(), o), round_profile());
    // Tiles 1152, 3280, 3280, 32 (one per unit): d = h = u = tile ns.
    // 1152 + max(1152, 3280) + max(3280, 3280 + 1152) + max(3280, 32 + 3280) + max(32, 3280) + 32
    EXPECT_REL(t.offload_s, 15488e-9);
    EXPECT_REL(t.copies_s, 2 * 7744e-9);
    EXPECT_REL(t.host_update_s, 7744e-9);
    EXPECT_EQ(t.optimizer_s, 0);
}

TEST(TimeModel, OffloadMeasuredPipelineIsItsOwnSpan) {
    PlanOptions o = options(1, 0);
    o.offload = true;
    MachineProfile p = round_profile();
    p.offload_params_per_s["bf16"] = 2.5e8; // 4 ns a parameter, copies included
    const TimePrediction t = predict_time(make_plan(tiny_model(), o), p);
    // 7744 owned parameters x 4 ns: no copy edges added (the pipeline's own time has them).
    EXPECT_REL(t.offload_s, 30976e-9);
    EXPECT_REL(t.host_update_s, 30976e-9);
    EXPECT_REL(t.copies_s, 2 * 7744e-9);        // the copies alone, for the breakdown, as before
    p.offload_params_per_s = {{"fp16", 2.5e8}}; // another dtype's: the kernel rate's pipeline
    EXPECT_REL(predict_time(make_plan(tiny_model(), o), p).offload_s, 15488e-9);
}

TEST(TimeModel, MemoryBoundRatePerDtypeReadsOldProfiles) {
    const std::vector<KernelSample> k = {{"layernorm.forward", "bf16", 100, 1},
                                         {"gelu.forward", "bf16", 300, 1},
                                         {"gelu.forward", "fp16", 10, 1}};
    const auto by = memory_bound_per_dtype(k);
    EXPECT_EQ(by.at("bf16"), 200);
    EXPECT_EQ(by.at("fp16"), 10);
    MachineProfile p = load_profile("h100-sxm");
    p.memory_kernels = k;
    nlohmann::json j = profile_to_json(p);
    j["memory_bound"].erase("by_dtype"); // as a profile written before the per-dtype aggregate
    const MachineProfile q = profile_from_json(j, "old");
    EXPECT_EQ(memory_bound_rate(q, "bf16"), 200);
    EXPECT_EQ(memory_bound_rate(q, "fp32"), q.memory_bound_bytes_per_s); // none: the aggregate
}

} // namespace
} // namespace shardlab
