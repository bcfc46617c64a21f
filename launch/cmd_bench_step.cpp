// `shardlab bench step`: time one training step (forward, backward, AdamW) on one rank — the
// ZeRO engine at N = 1, as `shardlab train` runs it — on synthetic tokens, and measure the
// activation bytes the tracker saw. For the side-by-side comparison with PyTorch in
// bench/model_step_vs_torch.sh.
#include "core/error.h"
#include "core/timer.h"
#include "launch/commands.h"
#include "launch/device_options.h"
#include "launch/model_options.h"
#include "model/backend.h"
#include "model/gpt_init.h"
#include "model/gpt_model.h"
#include "model/kernels/cpu/threads.h"
#include "model/precision.h"
#include "optim/device_updater.h"
#include "optim/zero_engine.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

namespace shardlab {

namespace {
struct StepBenchOptions {
    ModelOptions model;
    std::string precision = "fp32", checkpoint = "none";
    int batch = 8, seq = 0, steps = 10, warmup = 2;
    bool json = false;
    DeviceOptions device;
};

nlohmann::json bench_steps(const StepBenchOptions& o, const GPTConfig& c, int seq) {
    const Precision p = parse_precision(o.precision);
    const auto backend = make_backend(o.device, MPI_COMM_WORLD);
    const auto comm = backend->communicator(MPI_COMM_SELF);
    DeviceContext& ctx = backend->context();
    MemoryTracker& tracker = ctx.tracker();
    const ParamLayout layout(c);
    DeviceUpdater updater(ctx, backend->ops(), AdamWConfig{}, p != Precision::fp32);
    const ZeroOptions zero{0, p, 0, 0.0f, 65536.0f}; // stage 0, no clipping
    ZeroEngine engine(layout, zero, *comm, ctx, backend->ops(), updater,
                      gpt2_init(layout, 1, c.layers));
    GPTModel model(c, o.batch, seq, parse_checkpoint(o.checkpoint), param_dtype(p), ctx,
                   backend->ops());
    std::vector<std::uint16_t> in(std::size_t(o.batch) * seq), tg(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        in[i] = std::uint16_t((i * 2654435761u) % unsigned(c.vocab));
        tg[i] = std::uint16_t((i * 40503u + 7) % unsigned(c.vocab));
    }
    std::vector<double> times;
    for (int s = 0; s < o.warmup + o.steps; ++s) {
        const double t0 = now_seconds();
        engine.begin_micro_batch(false);
        model.forward(engine, in.data(), tg.data(), engine.grad_scale());
        model.backward(engine);
        engine.step(1e-4f);
        model.take_losses(); // waits for the step
        if (s >= o.warmup) times.push_back(now_seconds() - t0);
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    const double tokens = double(o.batch) * seq;
    return {{"precision", o.precision},
            {"checkpoint", o.checkpoint},
            {"batch", o.batch},
            {"seq", seq},
            {"device", o.device.device},
            {"threads", o.device.device == "cpu" ? cpu::current_threads() : 0},
            {"params", c.num_params()},
            {"ms_per_step", median * 1e3},
            {"tokens_per_s", tokens / median},
            {"activation_peak_bytes", tracker.peak(Category::activations)},
            {"total_peak_bytes", tracker.counts().total[int(Arena::device)].peak}};
}
} // namespace

CommandRunner add_bench_step_command(CLI::App& cmd) {
    auto o = std::make_shared<StepBenchOptions>();
    add_model_options(cmd, o->model);
    cmd.add_option("--batch", o->batch, "Micro-batch B");
    cmd.add_option("--seq-len", o->seq, "Tokens per sequence (default: the model's context)");
    cmd.add_option("--precision", o->precision, "fp32 | bf16 | fp16");
    cmd.add_option("--checkpoint", o->checkpoint, "none | all | every:K");
    add_device_options(cmd, o->device);
    cmd.add_option("--steps", o->steps, "Timed steps (the median is reported)");
    cmd.add_option("--warmup", o->warmup, "Untimed steps first");
    cmd.add_flag("--json", o->json, "Print one JSON object");
    return [o] {
        const GPTConfig c = o->model.config();
        const int seq = o->seq ? o->seq : c.context;
        if (o->steps < 1 || o->warmup < 0)
            throw UsageError("--steps must be >= 1 and --warmup >= 0");
        const nlohmann::json r = bench_steps(*o, c, seq);
        if (o->json) {
            fmt::print("{}\n", r.dump());
        } else {
            fmt::print("{}, {} x {} tokens, {}, checkpoint {}, {}: {:.1f} ms/step, {:.0f} "
                       "tokens/s, "
                       "activations peak {} B\n",
                       c.describe(), o->batch, seq, o->precision, o->checkpoint,
                       o->device.device == "cpu"
                           ? fmt::format("{} threads", r["threads"].get<int>())
                           : std::string("cuda"),
                       r["ms_per_step"].get<double>(), r["tokens_per_s"].get<double>(),
                       r["activation_peak_bytes"].get<std::size_t>());
        }
        return 0;
    };
}

} // namespace shardlab
