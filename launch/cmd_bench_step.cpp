// `shardlab bench step`: time one training step (forward, backward, AdamW) on one rank — the
// ZeRO engine at N = 1, as `shardlab train` runs it — on synthetic tokens, and measure the
// activation bytes the tracker saw. With --peer pytorch the same step is then timed in PyTorch
// eager (launch/pytorch_peer.h) and both figures are printed with their ratio, and the achieved
// GFLOP/s beside the GEMM rate this machine reaches on the model's largest product, measured in
// the same run through the same GEMM path. bench/model_step_vs_torch.sh runs the recorded set.
#include "core/error.h"
#include "launch/commands.h"
#include "launch/device_options.h"
#include "launch/model_options.h"
#include "launch/python_tool.h"
#include "launch/pytorch_peer.h"
#include "measure/gemm_rate.h"
#include "model/backend.h"
#include "model/families.h"
#include "model/family.h"
#include "model/kernels/cpu/cpu_gemm.h"
#include "model/kernels/cpu/cpu_model.h"
#include "model/kernels/cpu/threads.h"
#include "model/precision.h"
#include "train/train_session.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

namespace shardlab {

namespace {
struct StepBenchOptions {
    ModelOptions model;
    std::string precision = "fp32", checkpoint = "none", attention = "flash";
    int batch = 8, seq = 0, steps = 10, warmup = 2;
    bool json = false;
    std::string peer = "none", python = kDefaultPython;
    DeviceOptions device;
};

// Model FLOPs of one training step per token: 6 per weight of every matmul (forward 2, backward
// 4: the block's linears, as the family lists its GEMMs, and the head over the true vocabulary),
// plus causal attention's QK^T and PV — 2 * T * d per layer forward over the lower triangle, times
// 3 with backward. Embeddings, norms, activations and AdamW are not counted (as in the usual 6N
// accounting).
double train_flops_per_token(const ModelConfig& c, int seq) {
    double per_layer = 0; // a block's linears: a forward product's k x n weights
    for (const GemmShape& g : family(c.arch).gemm_shapes(c, 1))
        if (!g.name.starts_with("head.") && g.name.ends_with(".forward"))
            per_layer += double(g.n) * double(g.k);
    const double d = c.hidden, matmul_weights = c.layers * per_layer + double(c.vocab) * d;
    return 6.0 * matmul_weights + 6.0 * c.layers * double(seq) * d;
}

nlohmann::json bench_steps(const StepBenchOptions& o, const ModelConfig& c, int seq) {
    const Precision p = parse_precision(o.precision);
    const auto backend = make_backend(o.device, MPI_COMM_WORLD);
    const auto comm = backend->communicator(MPI_COMM_SELF);
    DeviceContext& ctx = backend->context();
    MemoryTracker& tracker = ctx.tracker();
    // The session of `shardlab train` at N = 1: stage 0, AdamW's defaults, no clipping.
    SessionSpec spec;
    spec.config = c, spec.micro_batch = o.batch, spec.seq = seq, spec.precision = p;
    spec.checkpoint = parse_checkpoint(o.checkpoint), spec.attention = parse_attention(o.attention);
    spec.zero = ZeroOptions{0, p, 0, 0.0f, 65536.0f};
    // The initial values live until the session is built, and it lets go of them once the
    // engine holds its copy.
    TrainSession session(spec, *backend, *comm, backend->ops(),
                         initial_values_from(init_model(c, ParamLayout(c), 1)), nullptr);
    std::vector<std::uint16_t> in(std::size_t(o.batch) * seq), tg(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        in[i] = std::uint16_t((i * 2654435761u) % unsigned(c.vocab));
        tg[i] = std::uint16_t((i * 40503u + 7) % unsigned(c.vocab));
    }
    const BatchFill same = [&](int, std::uint16_t* inputs, std::uint16_t* targets) {
        std::copy(in.begin(), in.end(), inputs);
        std::copy(tg.begin(), tg.end(), targets);
    };
    std::vector<double> times;
    for (int s = 0; s < o.warmup + o.steps; ++s) {
        const StepOutcome step = session.step(s, same, 1e-4f); // waits for the step
        if (s >= o.warmup) times.push_back(step.seconds);
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    const double tokens = double(o.batch) * seq;
    const double gflops = train_flops_per_token(c, seq) * tokens / median / 1e9;
    // The MLP's widening product (tokens x ffn x d: GPT-2's fc at 4d, a Llama's up projection),
    // the largest of a block, in the model's dtype: the "peak" the step's rate is read against.
    const int M = o.batch * seq, N = c.ffn(), K = c.hidden;
    const GemmShape gemm{"mlp.up.forward", M, N, K, false, false, 1};
    std::string gemm_path = "cuBLAS";
    if (o.device.device == "cpu") {
        const std::string all = cpu::CpuGemm(o.device.gemm).describe();
        const std::string key = std::string(dtype_name(param_dtype(p))) + ": ";
        const std::size_t at = all.find(key) + key.size();
        gemm_path = all.substr(at, all.find('\n', at) - at);
    }
    const double gemm_peak = gemm.flop() / gemm_seconds(*backend, param_dtype(p), gemm, 5) / 1e9;
    // The flash kernels as they ran (on a GPU, the forms auto chose in the first step).
    const std::string flash =
        o.attention == "flash"
            ? backend->ops().flash_attention_kernels(param_dtype(p), c.head_dim())
            : "";
    return {{"precision", o.precision},
            {"gflops", gflops},
            {"gemm_peak_gflops", gemm_peak},
            {"gemm_peak_shape", fmt::format("{}x{}x{}", M, N, K)},
            {"gemm_path", gemm_path},
            {"cpu", o.device.device == "cpu" ? cpu::cpu_model_name() + ", " + cpu::cpu_isa() : ""},
            {"checkpoint", o.checkpoint},
            {"attention", o.attention},
            {"flash_kernels", flash},
            {"batch", o.batch},
            {"seq", seq},
            {"device", o.device.device},
            {"threads", o.device.device == "cpu" ? cpu::current_threads() : 0},
            {"vocab", c.vocab},
            {"padded_vocab", c.padded_vocab()},
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
    cmd.add_option("--attention", o->attention, "flash | materialize");
    add_device_options(cmd, o->device);
    cmd.add_option("--steps", o->steps, "Timed steps (the median is reported)");
    cmd.add_option("--warmup", o->warmup, "Untimed steps first");
    cmd.add_flag("--json", o->json, "Print one JSON object");
    cmd.add_option(
        "--peer", o->peer,
        "none | pytorch: then time the same step in PyTorch eager (tools/"
        "torch_bench_step.py; bf16 through torch.autocast) and print both and the ratio");
    cmd.add_option("--python", o->python, "The interpreter for --peer pytorch (one with torch)");
    return [o] {
        const ModelConfig c = o->model.config();
        const int seq = o->seq ? o->seq : c.context;
        if (seq < 1 || seq > c.context) // the model's own message would name train's --seq
            throw UsageError(fmt::format("--seq-len {} is outside 1..{} (the model's context, "
                                         "--seq); use --seq-len <= {} or a longer --seq",
                                         seq, c.context, c.context));
        if (o->steps < 1 || o->warmup < 0)
            throw UsageError("--steps must be >= 1 and --warmup >= 0");
        if (o->peer != "none" && o->peer != "pytorch")
            throw UsageError("--peer " + o->peer + ": use none or pytorch");
        nlohmann::json r = bench_steps(*o, c, seq);
        if (o->peer == "pytorch") {
            const nlohmann::json peer =
                run_pytorch_peer({c, o->batch, seq, r["threads"].get<int>(), o->steps, o->warmup,
                                  o->precision, o->device.device, o->python});
            r["peer"] = peer["peer"];
            r["peer_vocab"] = peer.value("vocab", 0);
            r["peer_adamw"] = peer.value("adamw", "");
            r["peer_blas"] = peer.value("blas", nlohmann::json());
            r["peer_ms_per_step"] = peer["ms_per_step"];
            r["peer_tokens_per_s"] = peer["tokens_per_s"];
            r["ratio"] = r["tokens_per_s"].get<double>() / peer["tokens_per_s"].get<double>();
        }
        if (o->json) {
            fmt::print("{}\n", r.dump());
            return 0;
        }
        const std::string where = o->device.device == "cpu"
                                      ? fmt::format("{} threads", r["threads"].get<int>())
                                      : std::string("cuda");
        fmt::print("{}, {} x {} tokens, {}, checkpoint {}, {} attention, {}\n", c.describe(),
                   o->batch, seq, o->precision, o->checkpoint, o->attention, where);
        if (o->device.device == "cpu") fmt::print("  CPU: {}\n", r["cpu"].get<std::string>());
        fmt::print(
            "  shardlab: {:.1f} ms/step, {:.0f} tokens/s, {:.1f} GFLOP/s = {:.0f}% of the "
            "GEMM rate measured here ({:.1f} GFLOP/s, {} through {}); activations peak {} B\n",
            r["ms_per_step"].get<double>(), r["tokens_per_s"].get<double>(),
            r["gflops"].get<double>(),
            100 * r["gflops"].get<double>() / r["gemm_peak_gflops"].get<double>(),
            r["gemm_peak_gflops"].get<double>(), r["gemm_peak_shape"].get<std::string>(),
            r["gemm_path"].get<std::string>(), r["activation_peak_bytes"].get<std::size_t>());
        if (r.contains("ratio"))
            fmt::print("  {}: {:.1f} ms/step, {:.0f} tokens/s\n  ratio: {:.2f}x\n",
                       r["peer"].get<std::string>(), r["peer_ms_per_step"].get<double>(),
                       r["peer_tokens_per_s"].get<double>(), r["ratio"].get<double>());
        return 0;
    };
}

} // namespace shardlab
