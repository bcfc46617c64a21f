// `shardlab reference grads`: what the PyTorch reference (tools/torch_reference.py) compares
// against — one batch's loss, logits and every gradient, in fp32, written to safetensors. (The
// optimizer is checked against PyTorch through `shardlab train` itself.)
#include "core/error.h"
#include "launch/cli_util.h"
#include "launch/commands.h"
#include "launch/flag_checks.h"
#include "model/backend.h"
#include "model/families.h"
#include "model/kernels/cpu/threads.h"
#include "model/precision.h"
#include "model/safetensors.h"
#include "model/token_data.h"
#include "model/token_windows.h"
#include "model/weights_io.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>

namespace shardlab {

namespace {
struct ReferenceOptions {
    std::string weights, data, precision = "fp32", out, checkpoint = "none", attention = "flash";
    int batch = 4, seq = 0, start = 0, threads = 0; // seq 0: the model's context
};

struct Batch {
    std::vector<std::uint16_t> inputs, targets;
};

Batch load_batch(const ReferenceOptions& o, int vocab) {
    const TokenData data = load_tokens(o.data);
    if (data.max_token() >= vocab)
        throw UsageError(fmt::format("'{}' holds token id {}, not below the vocabulary size {}",
                                     o.data, data.max_token(), vocab));
    const TokenWindows windows(data.tokens, o.seq);
    if (!windows.holds(std::size_t(o.start), o.batch)) // --start is >= 0
        throw UsageError(fmt::format(
            "--start {} --batch {} asks for windows {}..{}, but '{}' holds {} windows of {} "
            "tokens; use a smaller --start, --batch or --seq, or more data",
            o.start, o.batch, o.start, std::int64_t(o.start) + o.batch - 1, o.data, windows.count(),
            o.seq + 1));
    Batch b{std::vector<std::uint16_t>(std::size_t(o.batch) * o.seq),
            std::vector<std::uint16_t>(std::size_t(o.batch) * o.seq)};
    windows.fill(std::size_t(o.start), o.batch, b.inputs.data(), b.targets.data());
    return b;
}

SafeTensor f32_tensor(const std::string& name, std::vector<std::int64_t> shape, const float* src,
                      std::size_t n) {
    SafeTensor s{name, DType::f32, std::move(shape), std::vector<unsigned char>(n * 4)};
    std::memcpy(s.data.data(), src, n * 4);
    return s;
}

void write_grads(const ReferenceOptions& o, const ModelWeights& w, Backend& backend) {
    const DType dtype = param_dtype(parse_precision(o.precision));
    const ParamLayout layout(w.config);
    ResidentParams params(layout, dtype, backend.context(), backend.ops());
    params.load(w.units);
    const Batch b = load_batch(o, w.config.vocab);
    const std::unique_ptr<Model> made =
        make_model(w.config, o.batch, o.seq, parse_checkpoint(o.checkpoint), dtype,
                   backend.context(), backend.ops(), parse_attention(o.attention));
    Model& model = *made;
    model.forward(params, b.inputs.data(), b.targets.data());
    const float loss = float(model.take_losses().front());
    const std::vector<float> logits = model.logits();
    SafeTensorsFile f;
    f.tensors.push_back(f32_tensor("loss", {1}, &loss, 1));
    f.tensors.push_back(
        f32_tensor("logits", {o.batch, o.seq, w.config.vocab}, logits.data(), logits.size()));
    model.forward(params, b.inputs.data(), b.targets.data(), 1.0f);
    model.backward(params);
    model.take_losses();
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        const std::vector<float> g = params.grads_to_host(int(u));
        for (const ParamInfo& p : layout.units()[u].params)
            f.tensors.push_back(
                f32_tensor("grad/" + p.name, p.shape, g.data() + p.offset, p.numel));
    }
    write_safetensors(o.out, f);
    fmt::print("loss {:.6f}; wrote logits and {} gradients to {}\n", loss, layout.units().size(),
               o.out);
}
} // namespace

CommandRunner add_reference_command(CLI::App& cmd) {
    cmd.require_subcommand(1);
    auto o = std::make_shared<ReferenceOptions>();
    CLI::App* grads =
        cmd.add_subcommand("grads", "Loss, logits and all gradients of one batch to safetensors");
    grads
        ->add_option("--weights", o->weights,
                     "Weights: a .safetensors file, a Hugging Face folder or its index .json")
        ->required();
    grads->add_option("--data", o->data, "Token data (text or llm.c shard)")->required();
    grads->add_option("--batch", o->batch, "Windows in the batch")->check(at_least(1));
    grads->add_option("--seq", o->seq, "Tokens per window T (default: the model's context)")
        ->check(at_least(1));
    grads->add_option("--start", o->start, "First window (0 the data's first)")->check(at_least(0));
    grads->add_option("--precision", o->precision, "fp32 | bf16 | fp16");
    grads->add_option("--checkpoint", o->checkpoint, "none | all | every:K");
    grads->add_option("--attention", o->attention, "flash | materialize");
    grads
        ->add_option(
            "--threads", o->threads,
            "Threads (default: the CPUs the rank is bound to, else cores / ranks on this node)")
        ->check(at_least(0));
    grads->add_option("--out", o->out, "Output file")->required();
    return [o] {
        parse_precision(o->precision); // a bad name is a usage error before any work
        parse_attention(o->attention);
        const ModelWeights w = load_weights(o->weights);
        if (o->seq == 0) o->seq = w.config.context;
        const auto backend = make_cpu_backend(o->threads > 0 ? o->threads : cpu::default_threads());
        write_grads(*o, w, *backend);
        return 0;
    };
}

} // namespace shardlab
