// `shardlab reference grads|overfit`: what the PyTorch reference (tools/torch_reference.py)
// compares against — one batch's loss, logits and every gradient; or the losses of a
// single-rank AdamW loop on a fixed batch.
#include "core/error.h"
#include "launch/cli_util.h"
#include "launch/commands.h"
#include "model/gpt_model.h"
#include "model/kernels/cpu/threads.h"
#include "model/precision.h"
#include "model/safetensors.h"
#include "model/token_data.h"
#include "model/token_windows.h"
#include "model/weights_io.h"
#include "optim/loss_scaler.h"
#include "optim/resident_adamw.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <type_traits>

namespace shardlab {

namespace {
struct ReferenceOptions {
    std::string weights, data, precision = "fp32", out, checkpoint = "none";
    int batch = 4, seq = 64, start = 0, steps = 50, threads = 0;
    AdamWConfig adam{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    float loss_scale = 65536.0f; // fp16's initial dynamic loss scale
};

struct Batch {
    std::vector<std::uint16_t> inputs, targets;
};

Batch load_batch(const ReferenceOptions& o, int vocab) {
    const TokenData data = load_tokens(o.data);
    if (data.max_token() >= vocab)
        throw UsageError(fmt::format("'{}' holds token id {}, not below the vocabulary size {}",
                                     o.data, data.max_token(), vocab));
    Batch b{std::vector<std::uint16_t>(std::size_t(o.batch) * o.seq),
            std::vector<std::uint16_t>(std::size_t(o.batch) * o.seq)};
    TokenWindows(data.tokens, o.seq)
        .fill(std::size_t(o.start), o.batch, b.inputs.data(), b.targets.data());
    return b;
}

SafeTensor as_f32_tensor(const std::string& name, std::vector<std::int64_t> shape, const void* src,
                         DType t, std::size_t n) {
    SafeTensor s{name, DType::f32, std::move(shape), std::vector<unsigned char>(n * 4)};
    convert(src, t, s.data.data(), DType::f32, n);
    return s;
}

template <typename T>
void write_grads(const ReferenceOptions& o, const ModelWeights& w) {
    MemoryTracker tracker(Device::cpu());
    const ParamLayout layout(w.config);
    ResidentParams params(layout, dtype_of<T>(), tracker);
    params.load(w.units);
    const Batch b = load_batch(o, w.config.vocab);
    GPTModel<T> model(w.config, o.batch, o.seq, parse_checkpoint(o.checkpoint), tracker);
    const double loss = model.forward(params, b.inputs.data(), b.targets.data());
    SafeTensorsFile f;
    const float loss32 = float(loss);
    f.tensors.push_back(as_f32_tensor("loss", {1}, &loss32, DType::f32, 1));
    f.tensors.push_back(as_f32_tensor("logits", {o.batch, o.seq, w.config.vocab}, model.logits(),
                                      dtype_of<T>(),
                                      std::size_t(o.batch) * o.seq * w.config.vocab));
    model.forward_backward(params, b.inputs.data(), b.targets.data(), 1.0f);
    for (std::size_t u = 0; u < layout.num_units(); ++u)
        for (const ParamInfo& p : layout.units()[u].params)
            f.tensors.push_back(
                as_f32_tensor("grad/" + p.name, p.shape,
                              static_cast<const char*>(params.grads(int(u))) + p.offset * sizeof(T),
                              dtype_of<T>(), p.numel));
    write_safetensors(o.out, f);
    fmt::print("loss {:.6f}; wrote logits and {} gradients to {}\n", loss, layout.units().size(),
               o.out);
}

template <typename T>
void write_overfit(const ReferenceOptions& o, const ModelWeights& w) {
    MemoryTracker tracker(Device::cpu());
    const ParamLayout layout(w.config);
    ResidentParams params(layout, dtype_of<T>(), tracker);
    ResidentAdamW adam(params, w.units, tracker, o.adam);
    const Batch b = load_batch(o, w.config.vocab);
    GPTModel<T> model(w.config, o.batch, o.seq, parse_checkpoint(o.checkpoint), tracker);
    // fp16 scales the loss dynamically; fp32 and bf16 have fp32's range and need no scaling.
    LossScaler scaler(std::is_same_v<T, f16_t> ? o.loss_scale : 1.0f);
    std::vector<double> losses;
    for (int s = 0; s < o.steps; ++s) {
        params.zero_grads();
        const float scale = scaler.scale();
        losses.push_back(model.forward_backward(params, b.inputs.data(), b.targets.data(), scale));
        bool overflow = false;
        for (std::size_t u = 0; u < layout.num_units(); ++u)
            overflow = overflow ||
                       has_non_finite(params.grads(int(u)), dtype_of<T>(), layout.units()[u].numel);
        if (scaler.update(overflow)) adam.step(o.adam.lr, 1.0f / scale);
        if (overflow)
            fmt::print("step {:3d} loss {:.6f}  overflow at loss scale {}: step skipped\n", s,
                       losses.back(), scale);
        else if (s % 10 == 0 || s + 1 == o.steps)
            fmt::print("step {:3d} loss {:.6f}\n", s, losses.back());
    }
    write_json_file(o.out, nlohmann::json{{"losses", losses},
                                          {"skipped_steps", scaler.skipped()},
                                          {"final_loss_scale", scaler.scale()}});
}

void add_common(CLI::App& cmd, ReferenceOptions& o) {
    cmd.add_option("--weights", o.weights, "Weights (.safetensors)")->required();
    cmd.add_option("--data", o.data, "Token data (text or llm.c shard)")->required();
    cmd.add_option("--batch", o.batch, "Windows in the batch");
    cmd.add_option("--seq", o.seq, "Tokens per window T");
    cmd.add_option("--start", o.start, "First window");
    cmd.add_option("--precision", o.precision, "fp32 | bf16 | fp16");
    cmd.add_option("--checkpoint", o.checkpoint, "none | all | every:K");
    cmd.add_option("--threads", o.threads, "Threads (default: cores / ranks on this node)");
    cmd.add_option("--out", o.out, "Output file")->required();
}
} // namespace

CommandRunner add_reference_command(CLI::App& cmd) {
    cmd.require_subcommand(1);
    auto o = std::make_shared<ReferenceOptions>();
    CLI::App* grads =
        cmd.add_subcommand("grads", "Loss, logits and all gradients of one batch to safetensors");
    CLI::App* overfit =
        cmd.add_subcommand("overfit", "Losses of an AdamW loop on one fixed batch, to JSON");
    add_common(*grads, *o);
    add_common(*overfit, *o);
    overfit->add_option("--steps", o->steps, "Optimizer steps");
    overfit->add_option("--lr", o->adam.lr, "Learning rate (constant)");
    overfit->add_option("--beta1", o->adam.beta1, "AdamW beta1");
    overfit->add_option("--beta2", o->adam.beta2, "AdamW beta2");
    overfit->add_option("--eps", o->adam.eps, "AdamW epsilon");
    overfit->add_option("--weight-decay", o->adam.weight_decay,
                        "Decoupled weight decay on 2-D weights");
    overfit->add_option("--loss-scale", o->loss_scale, "Initial dynamic loss scale (fp16 only)");
    return [o, grads] {
        const Precision p = parse_precision(o->precision);
        cpu::set_threads(o->threads > 0 ? o->threads : cpu::default_threads());
        const ModelWeights w = load_weights(o->weights);
        with_storage_type(p, [&]<typename T>() {
            grads->parsed() ? write_grads<T>(*o, w) : write_overfit<T>(*o, w);
        });
        return 0;
    };
}

} // namespace shardlab
