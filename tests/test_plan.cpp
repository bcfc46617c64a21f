// The plan model, pinned against numbers worked out by hand in the comments (not by calling the
// formulas again): the ZeRO paper's per-device table, padding, activations, KV cache, traffic.
// And the implementation-exact activation model against what the MemoryTracker measures.
#include "core/error.h"
#include "model/backend.h"
#include "model/families.h"
#include "model/gpt2/gpt_costs.h"
#include "model/gpt2/gpt_init.h"
#include "optim/gather_schedule.h"
#include "optim/unit_shards.h"
#include "plan/deepspeed_estimate.h"
#include "plan/memory_plan.h"

#include <gtest/gtest.h>

using namespace shardlab;

namespace {
PlanOptions opts(int ranks, int zero, bool offload = false) {
    PlanOptions o;
    o.ranks = ranks;
    o.zero = zero;
    o.offload = offload;
    return o;
}
std::uint64_t model_states(const Plan& p) {
    const MemoryPlan& m = p.memory;
    return m.params + m.grads + m.master + m.optimizer;
}
} // namespace

TEST(Plan, ZeroPaperTableFor7Point5BOn64Ranks) {
    // Psi = 7.5e9, N = 64, K = 12, bf16: 16 Psi; 4 Psi + 12 Psi/N; 2 Psi + 14 Psi/N; 16 Psi/N.
    const PlanModel m = plan_model_params_only(7.5e9);
    EXPECT_EQ(model_states(make_plan(m, opts(64, 0))), 120000000000u);
    EXPECT_EQ(model_states(make_plan(m, opts(64, 1))), 30000000000u + 1406250000u);
    EXPECT_EQ(model_states(make_plan(m, opts(64, 2))), 15000000000u + 1640625000u);
    EXPECT_EQ(model_states(make_plan(m, opts(64, 3))), 1875000000u);
    // Offload moves master, m, v (12 Psi/N) and the fp32 gradient (4 Psi/N) to the host.
    const Plan off = make_plan(m, opts(64, 3, true));
    EXPECT_EQ(off.memory.host_total, 1406250000u + 468750000u);
    EXPECT_EQ(off.memory.device_total, 234375000u + 234375000u);
}

// --reproducible at a bare count: the int64 shard sums (8 bytes an owned parameter) only; there
// are no units whose full sums a sequence passes (the whole model was counted twice as one).
TEST(Plan, ReproducibleBareCountAddsTheShardSumsOnly) {
    const PlanModel m = plan_model_params_only(1e9);
    PlanOptions o = opts(8, 2);
    const std::uint64_t plain = make_plan(m, o).memory.grads;
    o.reproducible = true;
    EXPECT_EQ(make_plan(m, o).memory.grads, plain + 125000000u * 8);
}

TEST(Plan, TrafficPerStepMatchesTheRingFormulas) {
    // 2(N-1)/N Psi * 2 B = 29,531,250,000 for stages 0-2, 3(N-1)/N Psi * 2 B = 44,296,875,000 for
    // stage 3; plus, on rank 0, two one-float all-reduces of 4 B each (0 in the reduce-scatter, 4
    // in the all-gather: rank 0 holds the only non-empty chunk).
    const PlanModel m = plan_model_params_only(7.5e9);
    for (int zero : {0, 1, 2})
        EXPECT_EQ(make_plan(m, opts(64, zero)).comm.bytes_per_step, 29531250000u + 8) << zero;
    const Plan z3 = make_plan(m, opts(64, 3));
    EXPECT_EQ(z3.comm.bytes_per_step, 44296875000u + 8);
    EXPECT_NEAR(z3.comm.ratio_to_dp, 1.5, 1e-9);
    // Rank N-1 holds no chunk of the scalars and its right neighbour (rank 0) does: 4 B in the
    // reduce-scatter, 0 in the all-gather.
    EXPECT_EQ(make_plan(m, opts(64, 0), 63).comm.bytes_per_step, 29531250000u + 8);
    EXPECT_EQ(make_plan(m, opts(1, 3)).comm.bytes_per_step, 0u); // N = 1 sends nothing
}

TEST(Plan, UnevenUnitsArePaddedToAMultipleOfN) {
    // tiny: embeddings 2 * 256 * 256 = 131072, blocks 12*256^2 + 13*256 = 789760, ln_f 512.
    // N = 3 pads them to 131073, 789762, 513: stage-3 bf16 params per rank
    // (131073 + 4 * 789762 + 513) / 3 * 2 = 2,193,756 B.
    PlanModel m = plan_model_preset("tiny");
    ASSERT_EQ(m.unit_numel.size(), 6u);
    EXPECT_EQ(m.unit_numel[0], 131072u);
    EXPECT_EQ(m.unit_numel[1], 789760u);
    EXPECT_EQ(m.unit_numel[5], 512u);
    const Plan p = make_plan(m, opts(3, 3));
    EXPECT_EQ(p.memory.params, 2193756u);
    // Shards of 1 element when N exceeds a unit: ln_f (512) on 1024 ranks pads to 1024.
    EXPECT_EQ(padded_numel(512, 1024), 1024u);
    EXPECT_EQ(padded_numel(0, 4), 0u);
}

TEST(Plan, ActivationFormulas) {
    // Generic, GPT-2 small at s = 1024, b = 1: per layer 1024 * 768 * (34 + 5 * 12 * 1024 / 768)
    // = 89,653,248 B; 12 layers = 1,075,838,976. Full recompute keeps 2 * 1024 * 768 per layer
    // (18,874,368 for 12) plus the one layer being recomputed (89,653,248).
    EXPECT_EQ(generic_activation_bytes(12, 768, 12, 1, 1024, Precision::bf16, {0}), 1075838976u);
    EXPECT_EQ(generic_activation_bytes(12, 768, 12, 1, 1024, Precision::bf16, {1}),
              18874368u + 89653248u);
    EXPECT_EQ(generic_activation_bytes(12, 768, 12, 1, 1024, Precision::fp32, {0}),
              2 * 1075838976u);
    // every:2 checkpoints blocks 0, 2, ...: 6 full layers, 6 inputs, one layer recomputing.
    EXPECT_EQ(generic_activation_bytes(12, 768, 12, 1, 1024, Precision::bf16, {2}),
              7 * 89653248u + 6 * 1572864u);
}

TEST(Plan, ExactActivationsEqualWhatTheTrackerMeasures) {
    // V = 64 is padded to 128 (the default multiple), V = 96 is not (multiple 1): the logits are
    // B·T·Vp either way.
    for (const ModelConfig& c :
         {ModelConfig{64, 16, 3, 32, 4, 4}, ModelConfig{96, 24, 5, 48, 3, 3, 1}})
        for (AttentionKind att : {AttentionKind::flash, AttentionKind::materialize})
            for (int every : {0, 1, 2, 3})
                for (Precision p : {Precision::fp32, Precision::bf16}) {
                    const auto backend = make_cpu_backend(1);
                    DeviceContext& ctx = backend->context();
                    MemoryTracker& tracker = ctx.tracker();
                    const ParamLayout layout(c);
                    const int B = 3, T = c.context - 1;
                    std::vector<std::uint16_t> in(B * T), tg(B * T);
                    for (int i = 0; i < B * T; ++i)
                        in[i] = std::uint16_t(i % c.vocab),
                        tg[i] = std::uint16_t((i + 1) % c.vocab);
                    ResidentParams params(layout, param_dtype(p), ctx, backend->ops());
                    const std::unique_ptr<Model> made =
                        make_model(c, B, T, {every}, param_dtype(p), ctx, backend->ops(), att);
                    Model& model = *made;
                    model.forward(params, in.data(), tg.data(), 1.0f);
                    model.backward(params);
                    model.take_losses();
                    EXPECT_EQ(
                        tracker.peak(Category::activations),
                        gpt2_activation_bytes(c, B, T, param_bytes_per_element(p), {every}, att))
                        << "layers " << c.layers << " every " << every << " "
                        << attention_name(att);
                }
}

TEST(Plan, WorkspaceByHandForGpt2OnOpenBlas) {
    // GPT-2 124M, micro-batch 1, T = 64 (BT = 64), d = 768, Vp = 50,304, bf16 (S = 2), one
    // micro-batch a step, worked by hand: the engine's 2 scalars 8 B; inputs and targets 2 * 64 *
    // 2 = 256 B; one loss 8 B; backward's gradient scratch 9 * 64 * 768 * 2 = 884,736 B; the
    // widest product is the head's (64 x 50,304 x 768 in some order): (64 * 768 + 768 * 50,304 +
    // 64 * 50,304) * 4 = 167,608,320 B. Total 168,493,328 B (a report of this run measures it).
    const ModelConfig gpt2{50257, 1024, 12, 768, 12, 12};
    EXPECT_EQ(
        model_workspace_bytes(gpt2, 1, 64, 1, Precision::bf16, GemmWorkspace::widened_operands),
        std::optional<std::uint64_t>(168493328u));
    // fp32 on OpenBLAS widens nothing: 8 + 256 + 8 + 9 * 64 * 768 * 4 = 1,769,744; four
    // micro-batches a step hold four losses (24 B more).
    EXPECT_EQ(model_workspace_bytes(gpt2, 1, 64, 4, Precision::fp32, GemmWorkspace::none),
              std::optional<std::uint64_t>(1769744u + 24u));
    EXPECT_EQ(model_workspace_bytes(gpt2, 1, 64, 1, Precision::bf16, GemmWorkspace::unmodelled),
              std::nullopt);
    // The plan predicts it only where told the GEMM library's (a run's backend tells it).
    PlanOptions o;
    o.micro_batch = 1, o.seq = 64;
    EXPECT_EQ(make_plan(plan_model_preset("gpt2"), o).memory.workspace, std::nullopt);
    o.gemm_workspace = GemmWorkspace::widened_operands;
    const Plan p = make_plan(plan_model_preset("gpt2"), o);
    EXPECT_EQ(predicted_device_bytes(p.memory, Category::workspace),
              std::optional<std::uint64_t>(168493328u));
    o.gemm_workspace = GemmWorkspace::unmodelled; // not in device_total
    EXPECT_EQ(p.memory.device_total, make_plan(plan_model_preset("gpt2"), o).memory.device_total);
}

TEST(Plan, WorkspaceEqualsWhatTheModelTakesOnOpenBlas) {
    // GPTModel alone (no engine: its 8 bytes of scalars are not there), a forward and backward
    // on OpenBLAS: the tracker's workspace peak is the prediction less those 8 bytes.
    for (const ModelConfig& c :
         {ModelConfig{64, 16, 3, 32, 4, 4}, ModelConfig{96, 24, 5, 48, 3, 3, 1}})
        for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
            const auto backend = make_cpu_backend(1, "", "openblas");
            DeviceContext& ctx = backend->context();
            const ParamLayout layout(c);
            const int B = 3, T = c.context - 1;
            std::vector<std::uint16_t> in(B * T), tg(B * T);
            for (int i = 0; i < B * T; ++i)
                in[i] = std::uint16_t(i % c.vocab), tg[i] = std::uint16_t((i + 1) % c.vocab);
            ResidentParams params(layout, param_dtype(p), ctx, backend->ops());
            const std::unique_ptr<Model> made =
                make_model(c, B, T, {0}, param_dtype(p), ctx, backend->ops());
            Model& model = *made;
            model.forward(params, in.data(), tg.data(), 1.0f);
            model.backward(params);
            model.take_losses();
            const auto predicted =
                model_workspace_bytes(c, B, T, 1, p, backend->gemm_workspace(param_dtype(p)));
            ASSERT_TRUE(predicted.has_value());
            EXPECT_EQ(ctx.tracker().peak(Category::workspace), *predicted - 8)
                << int(p) << " hidden " << c.hidden;
        }
}

TEST(Plan, FlashKeepsALogSumExpInsteadOfTheProbabilities) {
    // GPT-2 124M, T = 1024, micro-batch 4, bf16 (S = 2), no checkpointing, worked by hand:
    // BT = 4096, d = 768, B*H*T = 4 * 12 * 1024 = 49,152, V = 50,257 padded to Vp = 50,304.
    // block = 2 * 15 * BT * d + 16 * BT + attention = 94,437,376 + attention, where attention is
    // 2 * 49,152 * 1024 = 100,663,296 (materialize) or 4 * 49,152 = 196,608 (flash);
    // inputs = 13 * BT * d * 2 = 81,788,928; head = BT * d * 2 + 8 * BT + BT * Vp * 2 =
    // 418,414,592. materialize: 81,788,928 + 12 * 195,100,672 + 418,414,592 = 2,841,411,584 (2.84
    // GB); flash:       81,788,928 + 12 * 94,633,984 + 418,414,592 = 1,635,811,328 (1.64 GB).
    const ModelConfig gpt2{50257, 1024, 12, 768, 12, 12};
    EXPECT_EQ(gpt2_activation_bytes(gpt2, 4, 1024, 2, {0}, AttentionKind::materialize),
              2841411584u);
    EXPECT_EQ(gpt2_activation_bytes(gpt2, 4, 1024, 2, {0}, AttentionKind::flash), 1635811328u);
    // The plan uses flash unless told otherwise, and the target of issue 24: <= 1.70 GB.
    PlanOptions o;
    o.micro_batch = 4;
    o.seq = 1024;
    const Plan p = make_plan(plan_model_preset("gpt2"), o);
    EXPECT_EQ(p.memory.activations, 1635811328u);
    EXPECT_LE(p.memory.activations, 1700000000u);
    o.attention = AttentionKind::materialize;
    EXPECT_EQ(make_plan(plan_model_preset("gpt2"), o).memory.activations, 2841411584u);
}

TEST(Plan, LlamaPresetsAndKvCache) {
    EXPECT_EQ(plan_model_preset("7b").params, 6738415616u); // the published llama-2 counts
    EXPECT_EQ(plan_model_preset("13b").params, 13015864320u);
    EXPECT_EQ(plan_model_preset("70b").params, 68976648192u);
    // The Llama-shaped presets at the parameter counts their model cards publish (tied heads
    // counted once).
    EXPECT_EQ(plan_model_preset("smollm-135m").params, 134515008u);
    EXPECT_EQ(plan_model_preset("tinyllama-1.1b").params, 1100048384u);
    EXPECT_EQ(plan_model_preset("llama-3.2-1b").params, 1235814400u);
    EXPECT_EQ(plan_model_preset("llama-3-8b").params, 8030261248u);
    EXPECT_TRUE(plan_model_preset("llama-3.2-1b").config.tied_head);
    EXPECT_FALSE(plan_model_preset("llama-3-8b").config.tied_head);
    // 70b, GQA with 8 KV heads of 128: 2 * 80 layers * 4096 tokens * 1024 * 2 B = 1,342,177,280.
    PlanOptions o;
    o.inference = true;
    const Plan p = make_plan(plan_model_preset("70b"), o);
    EXPECT_EQ(p.memory.kv_cache, 1342177280u);
    EXPECT_EQ(p.memory.params, 2 * 68976648192u);
}

TEST(Plan, OptimizerStateFormatsAndNoMaster) {
    // 1,000,000 params, N = 1: 8-bit moments take n + ceil(n / 2048) * 4 = 1,001,956 B each.
    PlanOptions o;
    o.optimizer_states = OptimizerStates::int8;
    Plan p = make_plan(plan_model_params_only(1e6), o);
    EXPECT_EQ(p.memory.optimizer, 2 * 1001956u);
    o.optimizer_states = OptimizerStates::fp32;
    o.master = false; // K = 8: bf16 params, bf16 grads, fp32 m and v
    EXPECT_EQ(model_states(make_plan(plan_model_params_only(1e6), o)), 12000000u);
    o.master = true;
    o.precision = Precision::fp32; // 4 + 4 + 8 = 16 bytes per parameter
    EXPECT_EQ(model_states(make_plan(plan_model_params_only(1e6), o)), 16000000u);
}

TEST(Plan, FitsAndLargestMicroBatch) {
    PlanOptions o;
    o.gpu_bytes = parse_gpu("h100-80");
    o.checkpoint = {1};
    const Plan p = make_plan(plan_model_preset("gpt2"), o);
    EXPECT_TRUE(p.fits);
    ASSERT_GT(p.max_micro_batch, 1);
    PlanOptions at = o;
    at.micro_batch = p.max_micro_batch;
    EXPECT_LE(make_plan(plan_model_preset("gpt2"), at).memory.device_total, o.gpu_bytes);
    at.micro_batch = p.max_micro_batch + 1;
    EXPECT_GT(make_plan(plan_model_preset("gpt2"), at).memory.device_total, o.gpu_bytes);
    EXPECT_FALSE(p.max_micro_batch_unbounded);
    // --reproducible runs a sequence a pass: memory does not grow with the micro-batch, so no
    // largest is found (it was the search's cap less one, 131071, below a micro-batch that fits).
    PlanOptions r = o;
    r.reproducible = true;
    r.micro_batch = 400000;
    const Plan any = make_plan(plan_model_preset("gpt2"), r);
    EXPECT_TRUE(any.fits);
    EXPECT_TRUE(any.max_micro_batch_unbounded);
    EXPECT_EQ(any.max_micro_batch, kMicroBatchSearched);
    EXPECT_FALSE(make_plan(plan_model_params_only(7e9),
                           [] {
                               PlanOptions x;
                               x.gpu_bytes = parse_gpu("a100-40");
                               return x;
                           }())
                     .fits);
}

TEST(Plan, Stage3GatherScheduleMoves3PsiLessLnF) {
    // Forward gathers every unit once and the embeddings again for the tied head; backward
    // gathers the blocks only: L=2 -> 0 1 2 3 0 2 1.
    const auto sim = simulate_gathers(step_schedule(2, true), {10, 20, 20, 1}, 0);
    EXPECT_EQ(sim.gathers, (std::vector<int>{0, 1, 2, 3, 0, 2, 1}));
    EXPECT_EQ(sim.peak_live_bytes, 20u); // one block at a time; at the head ln_f + embeddings = 11
    const auto pre = simulate_gathers(step_schedule(2, true), {10, 20, 20, 1}, 1);
    EXPECT_EQ(pre.gathers, (std::vector<int>{0, 1, 2, 3, 0, 2, 1}));
    EXPECT_EQ(pre.peak_live_bytes, 40u); // a block and the next one
}

TEST(Plan, ReduceScattersRunWhereTheScheduleSaysWithTheirScratchCounted) {
    // The model reduces ln_f's gradient after the head, each block's after its backward, the
    // embeddings' last.
    std::vector<std::pair<int, UnitUse>> reduces;
    for (const GatherEvent& e : step_schedule(2, true))
        if (e.use == UnitUse::reduce) reduces.push_back({e.unit, e.use});
    EXPECT_EQ(reduces, (std::vector<std::pair<int, UnitUse>>{{3, UnitUse::reduce},
                                                             {2, UnitUse::reduce},
                                                             {1, UnitUse::reduce},
                                                             {0, UnitUse::reduce}}));
    // Units {10, 20, 20, 1} bytes, reduce-scatter scratch {5, 7, 7, 3}. Without prefetch nothing
    // is gathered while a reduce-scatter runs: the peak is a block (20). With prefetch 1, block 1
    // is already gathered while block 2's gradient is reduced: 20 + 7.
    const std::vector<std::uint64_t> bytes{10, 20, 20, 1}, scratch{5, 7, 7, 3};
    EXPECT_EQ(simulate_gathers(step_schedule(2, true), bytes, 0, scratch).peak_buffer_bytes, 20u);
    EXPECT_EQ(simulate_gathers(step_schedule(2, true), bytes, 1, scratch).peak_buffer_bytes, 40u);
    EXPECT_EQ(simulate_gathers(step_schedule(2, true), bytes, 1, {5, 30, 30, 3}).peak_buffer_bytes,
              50u); // while block 2's (30) runs, block 1 (20) is live
}

TEST(Plan, FullGradientsLiveTwoAtATimePlusTheTiedEmbeddings) {
    // Backward order ln_f (1), blocks (20, 20), held embeddings 10: 10 + 20 + 20.
    EXPECT_EQ(full_gradient_peak({1, 20, 20}, 10), 50u);
    EXPECT_EQ(full_gradient_peak({1, 20}, 10), 31u); // one block: ln_f still retiring
    EXPECT_EQ(full_gradient_peak({30, 5, 5, 30}, 0), 35u);
    EXPECT_EQ(full_gradient_peak({}, 7), 7u);
}

TEST(Plan, UntiedHeadGathersTheEmbeddingsOnce) {
    // llama: L=2 -> forward 0 1 2 3, backward 2 1; no second gather of the embeddings.
    const auto sim = simulate_gathers(step_schedule(2, false), {10, 20, 20, 30}, 0);
    EXPECT_EQ(sim.gathers, (std::vector<int>{0, 1, 2, 3, 2, 1}));
    // 7b at ZeRO-3 on 8 ranks: untied, unit gradients live two at a time in backward's order
    // (head, blocks, embeddings), so the transient is two blocks: a block is 2*4096^2 (q, o) +
    // 2*4096^2 (k, v) + 3*4096*11008 + 2*4096 = 202,383,360 elements (the head unit is only
    // 4096 + 32000*4096 = 131,076,096).
    const Plan p = make_plan(plan_model_preset("7b"), opts(8, 3));
    const std::uint64_t owned = p.memory.params / 2;
    EXPECT_EQ(p.memory.grads, (owned + 2 * 202383360u) * 2);
}

TEST(Plan, BadInputIsAClearError) {
    EXPECT_THROW(plan_model_preset("gpt9"), UsageError);
    EXPECT_THROW(
        plan_model_from(ModelConfig{100, 16, 2, 64, 8, 3, 1, Architecture::llama, 128}, "x"),
        UsageError); // 3 does not divide 8
    EXPECT_THROW(plan_model_params_only(-5), UsageError);
    EXPECT_THROW(make_plan(plan_model_preset("tiny"), opts(4, 5)), UsageError);
    PlanOptions o = opts(2, 2);
    o.prefetch = 1;
    EXPECT_THROW(make_plan(plan_model_preset("tiny"), o), UsageError);
    EXPECT_THROW(parse_gpu("tpu-v5"), UsageError);
    PlanOptions off = opts(2, 3, true);
    off.master = false;
    EXPECT_THROW(make_plan(plan_model_preset("gpt2"), off), UsageError);
    PlanOptions inf = opts(2, 3);
    inf.inference = true;
    EXPECT_THROW(make_plan(plan_model_preset("gpt2"), inf), UsageError);
    EXPECT_EQ(parse_gpu("80e9"), 80000000000u);
}

// A byte count must be finite and below 2^63 (llround's range): inf and 1e30 were taken as
// 2^63 bytes through an overflowing llround.
TEST(Plan, GpuBytesAreFiniteAndBelowTwoToThe63) {
    EXPECT_EQ(parse_gpu("9223372036854774784"), 9223372036854774784u); // the largest double < 2^63
    for (const char* bad : {"inf", "1e30", "2e19", "9223372036854775808", "1e400", "0.4", "-5"}) {
        try {
            parse_gpu(bad);
            ADD_FAILURE() << bad << " was taken as " << parse_gpu(bad) << " B";
        } catch (const UsageError& e) {
            EXPECT_EQ(std::string(e.what()), "GPU memory '" + std::string(bad) +
                                                 "' is not a byte count in [1, 2^63): give a "
                                                 "finite count of bytes, e.g. 80e9");
        }
    }
}

namespace {
struct Expected {
    int stage;
    bool offload_optimizer, offload_param, zero_init;
    std::uint64_t gpu, cpu;
};
void expect_rows(const std::vector<DeepSpeedRow>& got, const std::vector<Expected>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].stage, want[i].stage) << "row " << i;
        EXPECT_EQ(got[i].offload_optimizer, want[i].offload_optimizer) << "row " << i;
        EXPECT_EQ(got[i].offload_param, want[i].offload_param) << "row " << i;
        EXPECT_EQ(got[i].zero_init, want[i].zero_init) << "row " << i;
        EXPECT_EQ(got[i].gpu_bytes, want[i].gpu) << "row " << i;
        EXPECT_EQ(got[i].cpu_bytes, want[i].cpu) << "row " << i;
    }
}
} // namespace

TEST(DeepSpeedEstimate, WhatModelToParamsCountsForHuggingFaceShapes) {
    // GPT2LMHeadModel: 124,439,808 parameters with lm_head tied to wte; the largest module is wte
    // (and lm_head) with 50257 * 768 = 38,597,376, above c_fc's 4 * 768^2 + 4 * 768 = 2,362,368.
    const DeepSpeedModelCounts g = deepspeed_model_counts(plan_model_preset("gpt2"));
    EXPECT_EQ(g.total_params, 124439808u);
    EXPECT_EQ(g.largest_layer_params, 38597376u);
    // tiny: wte 256 * 256 = 65,536 < c_fc 4 * 256^2 + 4 * 256 = 263,168.
    EXPECT_EQ(deepspeed_model_counts(plan_model_preset("tiny")).largest_layer_params, 263168u);
    // llama-2 7b: embed_tokens (and the untied lm_head) 32000 * 4096 = 131,072,000 > gate_proj
    // 4096 * 11008 = 45,088,768.
    const DeepSpeedModelCounts l = deepspeed_model_counts(plan_model_preset("7b"));
    EXPECT_EQ(l.total_params, 6738415616u);
    EXPECT_EQ(l.largest_layer_params, 131072000u);
    // A bare count has no layers: 0 (documented).
    EXPECT_EQ(deepspeed_model_counts(plan_model_params_only(1e9)).largest_layer_params, 0u);
}

// Psi = 124,439,808, largest layer 38,597,376 (4 B each: 154,389,504); every value worked out by
// hand in docs/MEMORY.md, "DeepSpeed's estimator, side by side".
TEST(DeepSpeedEstimate, Gpt2OnOneGpu) {
    const DeepSpeedModelCounts g = deepspeed_model_counts(plan_model_preset("gpt2"));
    expect_rows(deepspeed_rows(g, {1, 1}), {{2, true, false, false, 248879616u, 2986555392u},
                                            {2, false, false, false, 2488796160u, 746638848u},
                                            {3, true, true, true, 154389504u, 3359874816u},
                                            {3, true, true, false, 154389504u, 3359874816u},
                                            {3, true, false, true, 403269120u, 2986555392u},
                                            {3, true, false, false, 403269120u, 2986555392u},
                                            {3, false, false, true, 2394306048u, 231584256u},
                                            {3, false, false, false, 2394306048u, 746638848u}});
}

TEST(DeepSpeedEstimate, Gpt2OnOneNodeOfFour) {
    const DeepSpeedModelCounts g = deepspeed_model_counts(plan_model_preset("gpt2"));
    expect_rows(deepspeed_rows(g, {1, 4}), {{2, true, false, false, 248879616u, 2986555392u},
                                            {2, false, false, false, 808858752u, 2986555392u},
                                            {3, true, true, true, 154389504u, 3359874816u},
                                            {3, true, true, false, 154389504u, 3359874816u},
                                            {3, true, false, true, 216609408u, 2986555392u},
                                            {3, true, false, false, 216609408u, 2986555392u},
                                            {3, false, false, true, 714368640u, 926337024u},
                                            {3, false, false, false, 714368640u, 2986555392u}});
}

TEST(DeepSpeedEstimate, Gpt2OnTwoNodesOfEight) {
    const DeepSpeedModelCounts g = deepspeed_model_counts(plan_model_preset("gpt2"));
    expect_rows(deepspeed_rows(g, {2, 8}), {{2, true, false, false, 248879616u, 11946221568u},
                                            {2, false, false, false, 388874400u, 5973110784u},
                                            {3, true, true, true, 154389504u, 1679937408u},
                                            {3, true, true, false, 154389504u, 5973110784u},
                                            {3, true, false, true, 169944480u, 1493277696u},
                                            {3, true, false, false, 169944480u, 5973110784u},
                                            {3, false, false, true, 294384288u, 1852674048u},
                                            {3, false, false, false, 294384288u, 5973110784u}});
}

TEST(DeepSpeedEstimate, TruncatesLikePython) {
    // 18 * 1,000,001 / 7 = 2,571,431.14...: int() keeps 2,571,431 (+ 2 * 1,000,001).
    EXPECT_EQ(deepspeed_zero2(1000001, {1, 7}, false).gpu_bytes, 2000002u + 2571431u);
    // 7 nodes of 1: gpus_factor = 1/7; 1,000,001 * 18 / 7 * 1.5 = 3,857,146.71...: 3,857,146.
    // Without zero_init, max(4 * 1, 18 / 7) keeps the int 4: 1,000,001 * 4 * 1.5 = 6,000,006.
    EXPECT_EQ(deepspeed_zero3(1000001, 0, {7, 1}, true, true, true).cpu_bytes, 3857146u);
    EXPECT_EQ(deepspeed_zero3(1000001, 0, {7, 1}, true, true, false).cpu_bytes, 6000006u);
}
