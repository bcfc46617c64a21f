// The GPT-2 model on the CPU backend: layout and names, initialisation, weights files, bad input,
// checkpointing (bitwise-identical results; activation bytes measured by the tracker equal to
// the tensor-by-tensor count written out here), activation memory reused step after step, and
// fp16 overflow detection.
#include "core/error.h"
#include "model/backend.h"
#include "model/families.h"
#include "model/gpt2/gpt_init.h"
#include "model/gpt2/gpt_model.h"
#include "model/kernels/cpu/gemm.h"
#include "model/model_presets.h"
#include "model/safetensors.h"
#include "model/weights_io.h"
#include "optim/adamw.h"
#include "optim/checkpoint_file.h"
#include "optim/loss_scaler.h"
#include "optim/updater.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <tuple>

using namespace shardlab;

namespace {
ModelConfig small_config() {
    return ModelConfig{64, 16, 2, 32, 4, 4};
} // V T L d H Hkv

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("shardlab_test_model_" + name)).string();
}

// A batch whose targets are the inputs shifted by one, tokens below V.
struct Batch {
    std::vector<std::uint16_t> in, tg;
};
Batch make_batch(int B, int T, int V) {
    Batch b{std::vector<std::uint16_t>(std::size_t(B) * T),
            std::vector<std::uint16_t>(std::size_t(B) * T)};
    for (int i = 0; i < B * T; ++i) {
        b.in[i] = std::uint16_t((i * 7 + 3) % V);
        b.tg[i] = std::uint16_t((i * 7 + 10) % V);
    }
    return b;
}

// Loss and every gradient byte of one forward/backward.
std::pair<double, std::vector<std::vector<char>>>
run_step(const ModelConfig& c, CheckpointPolicy ck, DType dt, int B, int T_,
         std::size_t* activation_peak = nullptr, AttentionKind att = AttentionKind::flash) {
    const auto backend = make_cpu_backend(2);
    DeviceContext& ctx = backend->context();
    const ParamLayout layout(c);
    ResidentParams params(layout, dt, ctx, backend->ops());
    params.load(gpt2_init(layout, 7, c.layers));
    GPTModel model(c, B, T_, ck, dt, ctx, backend->ops(), att);
    const Batch b = make_batch(B, T_, c.vocab);
    model.forward(params, b.in.data(), b.tg.data(), 1.0f);
    model.backward(params);
    const double loss = model.take_losses().front();
    std::vector<std::vector<char>> grads;
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        grads.emplace_back(layout.units()[u].numel * dtype_size(dt));
        ctx.compute().memcpy(grads.back().data(), params.grads(int(u)), grads.back().size());
    }
    ctx.compute().synchronize();
    MemoryTracker& tracker = ctx.tracker();
    if (activation_peak) *activation_peak = tracker.peak(Category::activations);
    EXPECT_EQ(tracker.current(Category::activations), 0u) << "activations leaked past backward";
    return {loss, grads};
}
} // namespace

TEST(ParamLayout, Gpt2HasHuggingFaceNamesShapesAndParameterCount) {
    const ModelConfig c = model_preset("gpt2");
    const ParamLayout layout(c);
    // GPT-2 small, as Hugging Face counts it: 124,439,808. Stored with wte padded from 50257 to
    // 50304 rows (a multiple of 128): 47 * 768 = 36,096 zeros more.
    EXPECT_EQ(c.num_params(), 124439808u);
    EXPECT_EQ(c.padded_vocab(), 50304);
    EXPECT_EQ(c.num_params_stored(), 124475904u);
    EXPECT_EQ(layout.total_numel(), 124475904u);
    EXPECT_EQ(c.describe(),
              "L=12 d=768 H=12 T=1024 V=50257 (124.44M params; 124.48M stored, V padded to 50304)");
    const ParamInfo* wte = layout.find("transformer.wte.weight");
    EXPECT_EQ(wte->shape, (std::vector<std::int64_t>{50257, 768})); // files hold the true V
    EXPECT_EQ(wte->numel, std::size_t(50257) * 768);
    EXPECT_EQ(wte->stored, std::size_t(50304) * 768);
    ModelConfig unpadded = c;
    unpadded.vocab_multiple = 1;
    EXPECT_EQ(ParamLayout(unpadded).total_numel(), 124439808u);
    EXPECT_EQ(unpadded.describe(), "L=12 d=768 H=12 T=1024 V=50257 (124.44M params)");
    EXPECT_EQ(layout.num_units(), 14u); // embeddings, 12 blocks, ln_f
    int unit = -1;
    const ParamInfo* p = layout.find("transformer.h.3.attn.c_attn.weight", &unit);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(unit, 4);
    EXPECT_EQ(p->shape, (std::vector<std::int64_t>{768, 2304}));
    EXPECT_TRUE(p->decay);
    EXPECT_FALSE(layout.find("transformer.h.3.ln_1.bias")->decay);
    EXPECT_EQ(layout.find("transformer.wpe.weight")->offset, std::size_t(50304) * 768);
    EXPECT_EQ(layout.find("transformer.h.11.mlp.c_proj.weight")->shape,
              (std::vector<std::int64_t>{3072, 768}));
    EXPECT_EQ(layout.find("lm_head.weight"), nullptr); // tied to wte
}

TEST(ModelConfig, BadShapesAreClearErrors) {
    ModelConfig c = small_config();
    c.heads = 5;
    c.kv_heads = 5;
    try {
        c.validate();
        FAIL();
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("hidden 32 is not divisible by heads 5"),
                  std::string::npos)
            << e.what();
    }
    c = small_config();
    c.vocab = 128256; // Llama 3's: past uint16 token ids, still a model (only sampling refuses)
    EXPECT_NO_THROW(c.validate());
    c.vocab = ModelConfig::kMaxVocab + 1;
    EXPECT_THROW(c.validate(), UsageError);
    EXPECT_THROW(model_preset("gpt5"), UsageError);
    EXPECT_THROW(parse_checkpoint("every:0"), UsageError);
    EXPECT_EQ(parse_checkpoint("every:3").every, 3);
}

TEST(GPTInit, SeededDeterministicAndGpt2Statistics) {
    const ModelConfig c{256, 64, 4, 128, 4, 4};
    const ParamLayout layout(c);
    const auto a = gpt2_init(layout, 42, c.layers), b = gpt2_init(layout, 42, c.layers);
    const auto other = gpt2_init(layout, 43, c.layers);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, other);
    auto stats = [&](const std::string& name) {
        int u = 0;
        const ParamInfo* p = layout.find(name, &u);
        double s = 0, s2 = 0;
        for (std::size_t i = 0; i < p->numel; ++i)
            s += a[u][p->offset + i], s2 += double(a[u][p->offset + i]) * a[u][p->offset + i];
        const double mean = s / p->numel;
        return std::pair{mean, std::sqrt(s2 / p->numel - mean * mean)};
    };
    auto [m1, s1] = stats("transformer.wte.weight"); // 32768 draws: std within ~1%
    EXPECT_NEAR(s1, 0.02, 0.0006);
    EXPECT_NEAR(m1, 0.0, 0.0006);
    auto [m2, s2] = stats("transformer.h.1.mlp.c_proj.weight");
    EXPECT_NEAR(s2, 0.02 / std::sqrt(8.0), 0.0003);
    EXPECT_EQ(stats("transformer.h.0.ln_1.weight").first, 1.0);
    EXPECT_EQ(stats("transformer.h.0.attn.c_attn.bias").second, 0.0);
}

TEST(WeightsIO, RoundTripsAndNamesEveryMismatch) {
    const ModelConfig c = small_config();
    ModelWeights w{c, gpt2_init(ParamLayout(c), 1, c.layers)};
    const std::string path = temp_path("weights.safetensors");
    save_weights(path, w, DType::f32);
    EXPECT_EQ(load_weights(path).units, w.units);
    save_weights(path, w, DType::bf16);
    const ModelWeights wb = load_weights(path);
    EXPECT_EQ(wb.units[1][5], bf16_to_f32(f32_to_bf16(w.units[1][5])));

    // Damage the file: drop one tensor, add a stranger, reshape another, hold one twice (under
    // both spellings the reader accepts).
    SafeTensorsFile f = read_safetensors(path);
    for (const SafeTensor& t : f.tensors)
        if (t.name == "transformer.wte.weight") {
            f.tensors.push_back(t);
            f.tensors.back().name = "wte.weight";
            break;
        }
    f.tensors.erase(f.tensors.begin() + 2);
    f.tensors.push_back(
        {"transformer.h.9.attn.c_attn.weight", DType::f32, {1}, std::vector<unsigned char>(4)});
    for (auto& t : f.tensors)
        if (t.name == "transformer.ln_f.bias") t.shape = {2, 16};
    write_safetensors(path, f);
    try {
        load_weights(path);
        FAIL() << "a damaged weights file must not load";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("missing tensors: transformer.h.0.ln_1.weight"), std::string::npos) << m;
        EXPECT_NE(m.find("unexpected tensors: transformer.h.9.attn.c_attn.weight"),
                  std::string::npos)
            << m;
        EXPECT_NE(m.find("transformer.ln_f.bias is [2, 16], expected [32]"), std::string::npos)
            << m;
        EXPECT_NE(m.find("one parameter held twice: transformer.wte.weight and wte.weight are "
                         "both transformer.wte.weight"),
                  std::string::npos)
            << m;
    }
    std::filesystem::remove(path);
}

// Found with fuzz/fuzz_safetensors.cpp: a "config" metadata entry missing a field was a plain
// Error (an MPI abort) instead of a UsageError naming the file, and its fields went through
// get<int>(), which casts 1e20 with undefined behaviour and wraps 2^32 + 3 to 3.
TEST(WeightsIO, BadConfigMetadataIsAUsageErrorNamingTheFile) {
    const ModelConfig c = small_config();
    const std::string path = temp_path("bad_config.safetensors");
    save_weights(path, ModelWeights{c, gpt2_init(ParamLayout(c), 1, c.layers)}, DType::f32);
    SafeTensorsFile f = read_safetensors(path);
    const nlohmann::json good = nlohmann::json::parse(f.metadata["config"]);
    const std::vector<std::pair<nlohmann::json, std::string>> cases = {
        {{{"layers", 1e20}}, "\"layers\" is 1e+20, not a whole number"},
        {{{"layers", 2.5}}, "\"layers\" is 2.5, not a whole number"},
        {{{"vocab", 4294967299ull}}, "\"vocab\" is 4294967299, out of range"},
        {{{"hidden", -4294967296ll}}, "\"hidden\" is -4294967296, out of range"},
        {{{"heads", {1, 2}}}, "\"heads\" is a JSON array, not a whole number"},
        {{{"context", nullptr}}, "model config: \"context\" is missing"},
    };
    for (const auto& [change, fragment] : cases) {
        nlohmann::json j = good;
        for (const auto& [key, value] : change.items()) {
            if (value.is_null())
                j.erase(key);
            else
                j[key] = value;
        }
        f.metadata["config"] = j.dump();
        write_safetensors(path, f);
        try {
            load_weights(path);
            ADD_FAILURE() << "config " << j.dump() << " must not load";
        } catch (const UsageError& e) {
            const std::string m = e.what();
            EXPECT_NE(m.find(fragment), std::string::npos) << m;
            EXPECT_NE(m.find(path), std::string::npos) << m;
        }
    }
    std::filesystem::remove(path);
}

TEST(GPTModel, BadInputIsAClearError) {
    const ModelConfig c = small_config();
    const auto backend = make_cpu_backend(1);
    DeviceContext& ctx = backend->context();
    EXPECT_THROW(GPTModel(c, 2, c.context + 1, {}, DType::f32, ctx, backend->ops()),
                 UsageError); // T beyond wpe
    const ParamLayout layout(c);
    ResidentParams params(layout, DType::f32, ctx, backend->ops());
    GPTModel model(c, 1, 4, {}, DType::f32, ctx, backend->ops());
    std::vector<std::uint16_t> in = {1, 2, 64, 3}, tg = {2, 3, 4, 5};
    try {
        model.forward(params, in.data(), tg.data());
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "token id 64 at position 2 is not below the vocabulary size 64"),
                  std::string::npos)
            << e.what();
    }
}

TEST(GPTModel, CheckpointingIsBitwiseIdenticalInEveryPrecision) {
    const ModelConfig c{64, 16, 3, 32, 4, 4};
    for (AttentionKind att : {AttentionKind::flash, AttentionKind::materialize})
        for (int every : {1, 2})
            for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
                const auto ref = run_step(c, {0}, dt, 2, 16, nullptr, att),
                           ck = run_step(c, {every}, dt, 2, 16, nullptr, att);
                EXPECT_EQ(ref.first, ck.first)
                    << dtype_name(dt) << " every:" << every << " " << attention_name(att);
                EXPECT_EQ(ref.second, ck.second)
                    << dtype_name(dt) << " every:" << every << " " << attention_name(att);
            }
}

TEST(GPTModel, ActivationBytesAreExactlyTheTensorsKept) {
    // Counted by hand from what backward needs, per block (S bytes per element, 4 per statistic):
    // ln1, atty, res2, ln2: 4·BTd; qkv 3·BTd; fch, fch_gelu 8·BTd; attention's B·H·T² probabilities
    // (materialize, S bytes each) or B·H·T log-sum-exps (flash, 4 bytes each); 4 LayerNorm
    // statistics of BT floats. Plus the L+1 residual-stream inputs (BTd each) and the head:
    // ln_f output BTd, its 2 statistics, logits BT·Vp: V = 64 padded to the default multiple,
    // Vp = 128.
    const ModelConfig c{64, 16, 3, 32, 4, 4};
    const std::size_t B = 2, T = 16, BT = B * T, d = 32, H = 4, L = 3, V = 128;
    for (AttentionKind att : {AttentionKind::flash, AttentionKind::materialize})
        for (std::size_t S : {std::size_t(4), std::size_t(2)}) {
            const std::size_t kept =
                att == AttentionKind::flash ? 4 * B * H * T : S * B * H * T * T;
            const std::size_t block = S * 15 * BT * d + kept + 4 * BT * 4;
            const std::size_t inputs = (L + 1) * BT * d * S;
            const std::size_t head = BT * d * S + 2 * BT * 4 + BT * V * S;
            std::size_t none = 0, all = 0;
            const DType dt = S == 4 ? DType::f32 : DType::bf16;
            run_step(c, {0}, dt, int(B), int(T), &none, att);
            run_step(c, {1}, dt, int(B), int(T), &all, att);
            EXPECT_EQ(none, inputs + L * block + head) << "S=" << S << " " << attention_name(att);
            // Checkpointed: only the inputs stay; one block's tensors exist at a time (forward, or
            // recompute in backward), and the head only after the last block.
            EXPECT_EQ(all, inputs + std::max(block, head))
                << "S=" << S << " " << attention_name(att);
        }
}

TEST(GPTModel, ActivationMemoryIsReusedStepAfterStep) {
    // Every step requests the same tensors in the same order: after the first, the caching
    // allocator hands back the memory it kept — no new raw allocation, reserved bytes flat.
    const ModelConfig c{64, 16, 3, 32, 4, 4};
    const auto backend = make_cpu_backend(2);
    DeviceContext& ctx = backend->context();
    const ParamLayout layout(c);
    ResidentParams params(layout, DType::bf16, ctx, backend->ops());
    params.load(gpt2_init(layout, 7, c.layers));
    GPTModel model(c, 2, 16, {1}, DType::bf16, ctx, backend->ops());
    const Batch b = make_batch(2, 16, c.vocab);
    std::vector<std::size_t> raw, reserved;
    for (int step = 0; step < 4; ++step) {
        model.forward(params, b.in.data(), b.tg.data(), 1.0f);
        model.backward(params);
        model.take_losses();
        raw.push_back(ctx.tracker().allocator(Arena::device).raw_allocations());
        reserved.push_back(ctx.tracker().allocator(Arena::device).reserved());
    }
    EXPECT_EQ(raw[1], raw[0]);
    EXPECT_EQ(raw[3], raw[0]);
    EXPECT_EQ(reserved[3], reserved[0]);
    EXPECT_GE(reserved[0], ctx.tracker().counts().total[int(Arena::device)].peak);
}

TEST(LossScaler, SkipsHalvesAndGrows) {
    LossScaler s(1024.0f, 3);
    EXPECT_FALSE(s.update(true));
    EXPECT_EQ(s.scale(), 512.0f);
    EXPECT_TRUE(s.update(false));
    EXPECT_TRUE(s.update(false));
    EXPECT_EQ(s.scale(), 512.0f);
    EXPECT_TRUE(s.update(false)); // third good step in a row
    EXPECT_EQ(s.scale(), 1024.0f);
    EXPECT_EQ(s.skipped(), 1);
}

TEST(LossScaler, NeverHalvesBelowOneNorGrowsToInfinity) {
    LossScaler s(3.0f, 1);
    EXPECT_FALSE(s.update(true));
    EXPECT_EQ(s.scale(), 1.5f);
    EXPECT_FALSE(s.update(true));
    EXPECT_EQ(s.scale(), 1.0f); // not 0.75: the floor is 1
    EXPECT_FALSE(s.update(true));
    EXPECT_EQ(s.scale(), 1.0f);
    LossScaler big(std::ldexp(1.0f, 127), 1); // the largest power of two fp32 holds
    EXPECT_TRUE(big.update(false));
    EXPECT_EQ(big.scale(), std::ldexp(1.0f, 127)); // doubling would make it Inf
}

TEST(AdamWStep, RefusesSettingsWhoseProductsOverflow) {
    AdamWConfig c;
    c.weight_decay = 1e10f;
    EXPECT_NO_THROW(adamw_step(c, 1e-3f, 1, true, 1.0f));
    try { // 1 - lr wd = 1 - 1e40: -Inf in fp32
        adamw_step(c, 1e30f, 1, true, 1.0f);
        ADD_FAILURE() << "no error";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("gives a non-finite update (1 - lr wd = -inf"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("lower --lr or --weight-decay"), std::string::npos);
    }
    AdamWConfig near_one; // beta1 just below 1: lr / (1 - beta1) = 3e38 / 6e-8 overflows
    near_one.beta1 = std::nextafter(1.0f, 0.0f);
    EXPECT_THROW(adamw_step(near_one, 3e38f, 1, false, 1.0f), UsageError);
}

// AdamW's calls over an owned range: neighbouring tensors with the same weight decay share one
// (GPT-2's norms and biases: 9 calls a block, not 12); a change of decay, or padding between two
// tensors (wte's rows past V), starts another; the range clips the first and the last.
TEST(ShardSegments, NeighboursWithOneDecayShareACall) {
    const std::vector<ParamInfo> tensors{
        {"a", {4}, 0, 4, false, 4},    {"b", {3}, 4, 3, false, 3},
        {"c", {5, 1}, 7, 5, true, 5},  {"d", {2, 1}, 12, 2, true, 6}, // d: 4 elements of padding
        {"e", {3, 1}, 18, 3, true, 3}, {"f", {1}, 21, 1, false, 1}};
    const auto segments = [&](std::uint64_t offset, std::int64_t count) {
        const OwnedShard shard{&tensors, offset, Tensor{nullptr, DType::f32, Shape{count}}, {}};
        std::vector<std::tuple<std::uint64_t, std::uint64_t, bool>> out;
        for (const ShardSegment& s : shard_segments(shard))
            out.emplace_back(s.begin, s.count, s.decay);
        return out;
    };
    using V = std::vector<std::tuple<std::uint64_t, std::uint64_t, bool>>;
    EXPECT_EQ(segments(0, 22), (V{{0, 7, false}, {7, 7, true}, {18, 3, true}, {21, 1, false}}));
    EXPECT_EQ(segments(5, 15), (V{{0, 2, false}, {2, 7, true}, {13, 2, true}}));
    EXPECT_EQ(segments(14, 4), V{}); // d's padding only
}

// checkpoint_file_bytes is what the save declares for the file before it is encoded: exact, at
// every rank of uneven and empty slices.
TEST(CheckpointFile, EncodedSizeIsCheckpointFileBytes) {
    const std::vector<std::uint64_t> numel{10, 7, 1};
    for (int N : {1, 2, 3, 4})
        for (int q = 0; q < N; ++q) {
            CheckpointFile f{q, N, 3, 4, 1024.0f, 2, 1, {}};
            for (std::uint64_t n : numel) {
                const ElementRange r = stored_range(n, N, q);
                const std::vector<float> slice(r.count, 0.5f);
                f.units.push_back({n, r, slice, slice, slice});
            }
            EXPECT_EQ(encode_checkpoint_file(f).size(), checkpoint_file_bytes(numel, N, q))
                << "rank " << q << " of " << N;
        }
}

TEST(LossScaler, AFixedScaleSkipsAndCountsButNeverChanges) {
    LossScaler s = LossScaler::fixed();
    for (int i = 0; i < 5000; ++i) EXPECT_TRUE(s.update(false));
    EXPECT_EQ(s.scale(), 1.0f); // a dynamic scaler would have doubled every 1000 good steps
    EXPECT_FALSE(s.update(true));
    EXPECT_EQ(s.scale(), 1.0f);
    EXPECT_EQ(s.skipped(), 1);
}

TEST(GPTModel, Fp16GradientsOverflowAtAHugeLossScale) {
    const ModelConfig c = small_config();
    const auto backend = make_cpu_backend(1);
    DeviceContext& ctx = backend->context();
    const ParamLayout layout(c);
    ResidentParams params(layout, DType::f16, ctx, backend->ops());
    params.load(gpt2_init(layout, 3, c.layers));
    GPTModel model(c, 2, 8, {}, DType::f16, ctx, backend->ops());
    const Batch b = make_batch(2, 8, c.vocab);
    auto overflowed = [&] {
        bool any = false;
        for (std::size_t u = 0; u < layout.num_units(); ++u)
            for (float g : params.grads_to_host(int(u))) any = any || !std::isfinite(g);
        return any;
    };
    model.forward(params, b.in.data(), b.tg.data(), 1024.0f);
    model.backward(params);
    EXPECT_FALSE(overflowed());
    params.zero_grads();
    model.forward(params, b.in.data(), b.tg.data(), 1e9f);
    model.backward(params);
    EXPECT_TRUE(overflowed());
}

TEST(Gemm, NativeBf16PathAgreesWithTheWidenedPath) {
    if (!cpu::native_bf16_gemm_available())
        GTEST_SKIP() << "this CPU has no AVX512-BF16: the widened path is the one in use";
    const int M = 37, N = 29, K = 53;
    std::vector<float> workspace(cpu::gemm_workspace_floats<bf16_t>(M, N, K));
    float* ws = workspace.data();
    std::vector<bf16_t> a(std::size_t(M) * K), b(std::size_t(K) * N), c1(std::size_t(M) * N), c2;
    for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = {f32_to_bf16(float((i * 37) % 101) / 50.0f - 1.0f)};
    for (std::size_t i = 0; i < b.size(); ++i)
        b[i] = {f32_to_bf16(float((i * 53) % 97) / 48.0f - 1.0f)};
    for (std::size_t i = 0; i < c1.size(); ++i) c1[i] = {f32_to_bf16(float(i % 7))};
    c2 = c1;
    cpu::gemm_bf16_widened(false, false, M, N, K, 0.5f, a.data(), K, b.data(), N, 1.0f, c1.data(),
                           N, ws);
    cpu::gemm_bf16_native(false, false, M, N, K, 0.5f, a.data(), K, b.data(), N, 1.0f, c2.data(), N,
                          ws);
    // Both accumulate exact bf16 products in fp32, in possibly different orders: at most one bf16
    // rounding step apart.
    for (std::size_t i = 0; i < c1.size(); ++i) {
        const float x = bf16_to_f32(c1[i].bits), y = bf16_to_f32(c2[i].bits);
        EXPECT_LE(std::fabs(x - y), std::fabs(x) * 0x1p-7f + 1e-6f) << i;
    }
}

TEST(WeightsIO, ReadsAHuggingFaceStyleCheckpointWithoutConfig) {
    // As Hugging Face saves GPT2Model: no "transformer." prefix, causal-mask buffers, a tied
    // lm_head copy, and no shardlab metadata. d = 128 gives 2 heads of 64.
    const ModelConfig c{64, 16, 2, 128, 2, 2};
    const ModelWeights w{c, gpt2_init(ParamLayout(c), 9, c.layers)};
    const std::string path = temp_path("hf.safetensors");
    save_weights(path, w, DType::f32);
    SafeTensorsFile f = read_safetensors(path);
    f.metadata.clear();
    for (auto& t : f.tensors) t.name = t.name.substr(std::string("transformer.").size());
    f.tensors.push_back(
        {"h.0.attn.bias", DType::f32, {1, 1, 16, 16}, std::vector<unsigned char>(16 * 16 * 4)});
    f.tensors.push_back(
        {"lm_head.weight", DType::f32, {64, 128}, std::vector<unsigned char>(64 * 128 * 4)});
    write_safetensors(path, f);
    const ModelWeights got = load_weights(path);
    EXPECT_EQ(config_to_json(got.config), config_to_json(c));
    EXPECT_EQ(got.units, w.units);
    std::filesystem::remove(path);
}

TEST(WeightsIO, FilesHoldTheTrueVocabularyWhateverThePadding) {
    // V = 70, d = 16: stored padded to 128 rows (multiple 128) or 70 (multiple 1). The file's wte
    // is [70, 16] either way; loading fills the padding rows with zeros, and a WeightsReader range
    // across the padding reads zeros there and the file's values around it.
    ModelConfig c{70, 8, 1, 16, 2, 2};
    const ModelWeights padded{c, gpt2_init(ParamLayout(c), 5, c.layers)};
    const std::string path = temp_path("padded.safetensors");
    save_weights(path, padded, DType::f32);
    const SafeTensorsFile f = read_safetensors(path);
    EXPECT_EQ(f.tensors[0].shape, (std::vector<std::int64_t>{70, 16}));
    const ModelWeights plain = load_weights(path, 1);
    EXPECT_EQ(plain.config.padded_vocab(), 70);
    ASSERT_EQ(plain.units[0].size(), std::size_t(70 + 8) * 16);
    const ModelWeights again = load_weights(path, 128);
    EXPECT_EQ(again.units, padded.units); // the padding zero, the rest as saved
    for (std::size_t e = 70 * 16; e < 128 * 16; ++e) ASSERT_EQ(padded.units[0][e], 0.0f) << e;
    for (std::size_t e = 0; e < 70 * 16; ++e) ASSERT_EQ(plain.units[0][e], padded.units[0][e]);
    for (std::size_t e = 0; e < 8 * 16; ++e) // wpe, after the padding
        ASSERT_EQ(plain.units[0][70 * 16 + e], padded.units[0][128 * 16 + e]);
    WeightsReader reader(path, 128);
    std::vector<float> part(200, -1.0f);
    reader.read(0, 70 * 16 - 100, 200, part.data()); // 100 of wte, 100 of its padding
    for (std::size_t i = 0; i < 200; ++i)
        ASSERT_EQ(part[i], padded.units[0][70 * 16 - 100 + i]) << i;
    reader.read(0, 128 * 16 - 50, 178, part.data()); // 50 of padding, all 128 of wpe
    for (std::size_t i = 0; i < 178; ++i)
        ASSERT_EQ(part[i], padded.units[0][128 * 16 - 50 + i]) << i;
    std::filesystem::remove(path);
}

// --- the model seam: the config's architecture, the preset table, the registry -----------------

namespace {
// The UsageError's message of f(), or "" when it threw none.
template <typename F>
std::string usage_error(F&& f) {
    try {
        f();
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}
} // namespace

TEST(ModelConfig, AConfigWithoutArchIsGpt2AndLlamaRoundTrips) {
    // A weights file or checkpoint written before "arch" was recorded: GPT-2, as it was.
    const nlohmann::json old = {{"vocab", 64},  {"context", 16}, {"layers", 2},
                                {"hidden", 32}, {"heads", 4},    {"kv_heads", 4}};
    const ModelConfig g = config_from_json(old);
    EXPECT_EQ(g.arch, Architecture::gpt2);
    EXPECT_EQ(g.ffn(), 128);
    EXPECT_TRUE(g.tied_head);
    nlohmann::json written = old;
    written["arch"] = "gpt2";
    EXPECT_EQ(config_to_json(g), written);

    const ModelConfig l = model_preset("tiny-llama");
    const nlohmann::json j = config_to_json(l);
    EXPECT_EQ(j.at("arch"), "llama");
    EXPECT_EQ(j.at("ffn"), 688);
    EXPECT_EQ(j.at("tied"), false);
    EXPECT_EQ(j.at("rope_theta"), 1e4);
    EXPECT_EQ(j.at("rms_eps"), 1e-5);
    const ModelConfig back = config_from_json(j);
    EXPECT_EQ(config_to_json(back), j);
    EXPECT_EQ(back.kv_heads, 2);
    EXPECT_FALSE(back.tied_head);

    nlohmann::json no_ffn = j;
    no_ffn.erase("ffn");
    EXPECT_NE(usage_error([&] { config_from_json(no_ffn); }).find("\"ffn\" is missing"),
              std::string::npos);
    nlohmann::json bert = old;
    bert["arch"] = "bert";
    EXPECT_NE(usage_error([&] { config_from_json(bert); }).find("not gpt2 or llama"),
              std::string::npos);
}

TEST(ModelConfig, AWeightsFileWithoutArchLoadsAsGpt2) {
    const ModelConfig c = small_config();
    const ModelWeights w{c, gpt2_init(ParamLayout(c), 3, c.layers)};
    const std::string path = temp_path("no_arch.safetensors");
    save_weights(path, w, DType::f32);
    SafeTensorsFile f = read_safetensors(path);
    nlohmann::json config = nlohmann::json::parse(f.metadata.at("config"));
    ASSERT_EQ(config.at("arch"), "gpt2"); // written now ...
    config.erase("arch");                 // ... and not before issue 25
    f.metadata["config"] = config.dump();
    write_safetensors(path, f);
    const ModelWeights got = load_weights(path);
    EXPECT_EQ(got.config.arch, Architecture::gpt2);
    EXPECT_EQ(got.units, w.units);
    std::filesystem::remove(path);
}

TEST(ModelConfig, LlamaCountsAndTheChecksThatNameTheArchitecture) {
    // tiny-llama by Hugging Face's LlamaForCausalLM: embed_tokens 256 x 256; per block q, o
    // 256 x 256, k, v 256 x 128 (2 KV heads of 64), gate, up, down 256 x 688, two norms of 256;
    // the final norm; an untied lm_head 256 x 256. 65536 + 4 x 722432 + 256 + 65536 = 3033344.
    EXPECT_EQ(model_preset("tiny-llama").num_params(), 3033344u);
    // The published counts (Hugging Face), through ModelConfig's own count.
    EXPECT_EQ(model_preset("smollm-135m").num_params(), 134515008u);
    EXPECT_EQ(model_preset("llama-3-8b").num_params(), 8030261248u);
    EXPECT_EQ(model_preset("gpt2").num_params(), 124439808u);

    ModelConfig c = small_config();
    c.ffn_width = 100;
    EXPECT_NE(usage_error([&] { c.validate(); }).find("--arch llama --ffn 100"), std::string::npos);
    c = small_config();
    c.tied_head = false;
    EXPECT_NE(usage_error([&] { c.validate(); }).find("llama architecture"), std::string::npos);
    ModelConfig l = model_preset("tiny-llama");
    l.validate(); // GQA, an untied head and ffn 688 are a llama's
    l.rope_theta = 0;
    EXPECT_NE(usage_error([&] { l.validate(); }).find("rope_theta"), std::string::npos);
    EXPECT_NE(usage_error([] { model_preset("gpt5"); }).find("tiny-llama"), std::string::npos);
}

TEST(ModelFamilies, TheRegistryMakesEachFamilysModelOverItsOwnLayout) {
    const auto backend = make_cpu_backend(1);
    DeviceContext& ctx = backend->context();
    const ModelConfig c = small_config();
    const std::unique_ptr<Model> m = make_model(c, 2, 8, {}, DType::f32, ctx, backend->ops());
    EXPECT_EQ(m->batch(), 2);
    EXPECT_EQ(m->seq(), 8);
    EXPECT_TRUE(m->tied_head());
    EXPECT_EQ(m->layout().total_numel(), ParamLayout(c).total_numel());

    // tiny-llama (untied): embed_tokens; per layer two norms, q, k, v, o, gate, up, down; the
    // final unit model.norm + lm_head — Hugging Face's shapes, counted here by hand.
    const ModelConfig l = model_preset("tiny-llama");
    const std::unique_ptr<Model> lm = make_model(l, 2, 8, {}, DType::f32, ctx, backend->ops());
    EXPECT_FALSE(lm->tied_head());
    const std::size_t d = 256, kv = 2 * 64, f = 688, V = 256;
    const std::size_t layer = 2 * d + d * d + 2 * kv * d + d * d + 3 * d * f;
    ASSERT_EQ(lm->layout().num_units(), 6u);
    EXPECT_EQ(lm->layout().units()[1].numel, layer);
    EXPECT_EQ(lm->layout().units()[5].numel, d + V * d);
    EXPECT_EQ(lm->layout().total_numel(), V * d + 4 * layer + d + V * d);
    EXPECT_EQ(lm->layout().total_numel(), l.num_params());
    const ParamInfo* k = lm->layout().find("model.layers.3.self_attn.k_proj.weight");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->shape, (std::vector<std::int64_t>{std::int64_t(kv), std::int64_t(d)}));
    EXPECT_EQ(k->offset, d + d * d); // after input_layernorm and q_proj: q, k, v back to back
    ModelConfig materialize = l;
    EXPECT_NE(usage_error([&] {
                  make_model(materialize, 2, 8, {}, DType::f32, ctx, backend->ops(),
                             AttentionKind::materialize);
              }).find("flash attention only"),
              std::string::npos);
}
