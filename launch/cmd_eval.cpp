// `shardlab eval`: mean cross-entropy (nats per token) of a weights file over a data file, cut
// into consecutive windows of T+1 tokens, B windows per forward pass.
#include "core/error.h"
#include "launch/commands.h"
#include "launch/device_options.h"
#include "launch/flag_checks.h"
#include "model/backend.h"
#include "model/families.h"
#include "model/precision.h"
#include "model/token_data.h"
#include "model/token_windows.h"
#include "model/weights_io.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>

namespace shardlab {

namespace {
struct EvalOptions {
    std::string weights, data, precision = "fp32", attention = "flash";
    int batch = 8, seq = 0, vocab_multiple = ModelConfig::kDefaultVocabMultiple;
    bool json = false;
    DeviceOptions device;
};

double mean_loss(Backend& backend, const ModelWeights& w, const TokenWindows& windows, int batch,
                 int seq, DType dtype, AttentionKind attention) {
    const ParamLayout layout(w.config);
    ResidentParams params(layout, dtype, backend.context(), backend.ops());
    params.load(w.units);
    double sum = 0; // sum over windows of the window's mean loss
    std::vector<std::uint16_t> in(std::size_t(batch) * seq), tg(std::size_t(batch) * seq);
    std::unique_ptr<Model> model;
    for (std::size_t first = 0; first < windows.count(); first += batch) {
        const int b = int(std::min<std::size_t>(batch, windows.count() - first));
        if (!model || model->batch() != b)
            model = make_model(w.config, b, seq, CheckpointPolicy{}, dtype, backend.context(),
                               backend.ops(), attention);
        windows.fill(first, b, in.data(), tg.data());
        model->forward(params, in.data(), tg.data());
        sum += model->take_losses().front() * b;
    }
    return sum / double(windows.count());
}
} // namespace

CommandRunner add_eval_command(CLI::App& cmd) {
    auto o = std::make_shared<EvalOptions>();
    cmd.add_option("--weights", o->weights,
                   "Weights: a .safetensors file, a Hugging Face folder or its index .json")
        ->required();
    cmd.add_option("--data", o->data, "Text file (bytes as tokens) or llm.c token shard")
        ->required();
    cmd.add_option("--batch", o->batch, "Windows per forward pass");
    cmd.add_option("--seq", o->seq, "Tokens per window T (default: the model's context)");
    cmd.add_option("--precision", o->precision, "fp32 | bf16 | fp16");
    cmd.add_option("--vocab-multiple", o->vocab_multiple,
                   "Pad the vocabulary of wte, the head and the logits to a multiple of this "
                   "(the loss is the same; 1: no padding)")
        ->check(in_range(1, 65536));
    cmd.add_option("--attention", o->attention, "flash | materialize");
    add_device_options(cmd, o->device);
    cmd.add_flag("--json", o->json, "Print a JSON object {loss, tokens, windows}");
    return [o] {
        const Precision p = parse_precision(o->precision);
        const AttentionKind attention = parse_attention(o->attention);
        if (o->batch <= 0) throw UsageError("--batch must be positive");
        const ModelWeights w = load_weights(o->weights, o->vocab_multiple);
        const int seq = o->seq ? o->seq : w.config.context;
        if (seq > w.config.context || seq <= 0)
            throw UsageError(fmt::format("--seq {} is outside 1..{} (the model's context)", seq,
                                         w.config.context));
        const TokenData data = load_tokens(o->data);
        if (data.max_token() >= w.config.vocab)
            throw UsageError(
                fmt::format("'{}' holds token id {} but the model's vocabulary is {}; use data "
                            "tokenized for this model",
                            o->data, data.max_token(), w.config.vocab));
        const TokenWindows windows(data.tokens, seq);
        if (windows.count() == 0)
            throw UsageError(
                fmt::format("'{}' has {} tokens, fewer than one window of {}; use a smaller --seq",
                            o->data, data.tokens.size(), seq + 1));
        if (std::size_t(o->batch) > windows.count())
            throw UsageError(fmt::format("--batch {} is more than the {} windows of {} tokens in "
                                         "'{}'; use --batch {} or less",
                                         o->batch, windows.count(), seq + 1, o->data,
                                         windows.count()));
        const auto backend = make_backend(o->device, MPI_COMM_WORLD);
        const double loss =
            mean_loss(*backend, w, windows, o->batch, seq, param_dtype(p), attention);
        const std::size_t tokens = windows.count() * std::size_t(seq);
        // Every rank evaluates every window on its own device (same weights, same result); one
        // of them speaks.
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        // A NaN or infinite loss means weights that diverged (finite, but huge): a failure, said
        // so, never a number a script would take for a result.
        const int status = std::isfinite(loss) ? 0 : 1;
        if (rank != 0) return status;
        if (o->json)
            fmt::print(
                "{}\n",
                nlohmann::json{{"loss", loss}, {"tokens", tokens}, {"windows", windows.count()}}
                    .dump());
        else
            fmt::print("loss {:.6f}\n", loss);
        if (status)
            fmt::print(stderr,
                       "shardlab eval: the loss is {}: these weights have diverged (training ran "
                       "away); evaluate an earlier checkpoint's weights\n",
                       loss);
        return status;
    };
}

} // namespace shardlab
