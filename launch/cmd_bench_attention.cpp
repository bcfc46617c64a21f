// `shardlab bench attention`: causal attention alone, forward + backward, on B x T x H x hd, flash
// and materialize side by side, and the bytes each keeps for backward (flash: the fp32
// log-sum-exps; materialize: the T x T probabilities). On the CPU (the default) it calls the CPU
// kernels directly (model/kernels/cpu), the tile products on the library a training run would use
// (--gemm, as the backend: cpu_gemm.h); bench/attention_cpu.sh sets PyTorch's
// matmul-softmax-matmul beside it. With --device cuda it goes through the backend's Ops, as
// training does, timing forward and backward apart on the stream's events, with the tensor-core
// kernels $SHARDLAB_CUDA_FLASH picks (named in the output as they ran); the GPU lease sets
// PyTorch's scaled_dot_product_attention beside it (tools/torch_bench_attention.py).
#include "core/error.h"
#include "core/timer.h"
#include "launch/commands.h"
#include "launch/device_options.h"
#include "launch/flag_checks.h"
#include "model/backend.h"
#include "model/kernels/cpu/attention.h"
#include "model/kernels/cpu/cpu_gemm.h"
#include "model/kernels/cpu/flash_attention.h"
#include "model/kernels/cpu/threads.h"
#include "model/precision.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

namespace shardlab {

namespace {
struct AttentionBenchOptions {
    int batch = 1, seq = 1024, heads = 12, head_dim = 64, iters = 5;
    std::string precision = "fp32";
    DeviceOptions device;
};

// The median of `iters` timed runs after a warm-up; `once` returns one run's seconds.
template <typename Once>
double median_seconds(int iters, Once&& once) {
    std::vector<double> t;
    for (int i = 0; i <= iters; ++i) { // the first is a warm-up
        const double seconds = once();
        if (i > 0) t.push_back(seconds);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <typename T>
nlohmann::json bench(const AttentionBenchOptions& o, const cpu::TileGemm& tiles) {
    const int B = o.batch, T_ = o.seq, H = o.heads, C = H * o.head_dim;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<T> qkv(std::size_t(B) * T_ * 3 * C), dout(std::size_t(B) * T_ * C),
        out(dout.size()), dqkv(qkv.size()), att(std::size_t(B) * H * T_ * T_);
    std::vector<float> lse(std::size_t(B) * H * T_);
    for (T& x : qkv) x = from_acc<T>(u(rng));
    for (T& x : dout) x = from_acc<T>(u(rng));
    auto median = [&](auto&& run) {
        return median_seconds(o.iters, [&] {
            const double t0 = now_seconds();
            run();
            return now_seconds() - t0;
        });
    };
    // Interleaved, so both see the same machine load.
    std::vector<double> f, m;
    for (int rep = 0; rep < 2; ++rep) {
        f.push_back(median([&] {
            cpu::flash_attention_forward<T>(out.data(), lse.data(), qkv.data(), B, T_, C, H, tiles);
            cpu::flash_attention_backward<T>(dqkv.data(), dout.data(), qkv.data(), out.data(),
                                             lse.data(), B, T_, C, H, tiles);
        }));
        m.push_back(median([&] {
            cpu::attention_forward<T>(out.data(), att.data(), qkv.data(), B, T_, C, H, tiles);
            cpu::attention_backward<T>(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T_, C,
                                       H, tiles);
        }));
    }
    return {{"batch", B},
            {"seq", T_},
            {"heads", H},
            {"head_dim", o.head_dim},
            {"precision", o.precision},
            {"threads", cpu::current_threads()},
            {"tile_gemm", tiles.library()},
            {"flash_ms", *std::min_element(f.begin(), f.end()) * 1e3},
            {"materialize_ms", *std::min_element(m.begin(), m.end()) * 1e3},
            {"flash_kept_bytes", lse.size() * sizeof(float)},
            {"materialize_kept_bytes", att.size() * sizeof(T)}};
}
// Causal attention's model FLOPs, FlashAttention's count: forward's two products over the
// T (T + 1) / 2 query-key pairs each head sees, 2 FLOPs a multiply-add; backward 2.5 times that
// (dV, dP, dQ, dK and S again). The kernels' own work is more (the backward here recomputes S and
// dP for dQ: docs/GPU.md), so this is the rate a peer with the same count is compared by.
double causal_forward_flops(const AttentionBenchOptions& o) {
    const double pairs = double(o.seq) * (double(o.seq) + 1) / 2;
    return 4.0 * o.batch * o.heads * pairs * o.head_dim;
}

// Passes enqueued back to back between a sample's two events: the host's launches of the first
// delay its start by microseconds, which the other passes hide and the division spreads.
constexpr int kPassesPerSample = 5;

// On the backend's device, through its Ops: each kind of pass timed alone, kPassesPerSample of
// them between two events of the compute stream (best of 2 rounds of the median of --iters
// samples), the kinds interleaved.
nlohmann::json bench_on_device(const AttentionBenchOptions& o, Precision p) {
    const auto backend = make_backend(o.device, MPI_COMM_WORLD);
    Stream& s = backend->context().compute();
    MemoryTracker& tracker = backend->context().tracker();
    Ops& ops = backend->ops();
    const DType t = param_dtype(p);
    const std::int64_t B = o.batch, T_ = o.seq, H = o.heads, C = H * o.head_dim;
    std::vector<Allocation> memory;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    // Device memory of `shape`: the inputs random in [-1, 1), the outputs zero (each is written
    // by the pass before the one that reads it: flash forward before backward, and so on).
    auto make = [&](DType dt, Shape shape, bool input) {
        memory.push_back(tracker.allocate(shape.numel() * dtype_size(dt), Category::workspace, s));
        const Tensor x{memory.back().data(), dt, shape, memory.back().device()};
        if (!input) {
            ops.fill(s, x, 0.0f);
            return x;
        }
        std::vector<float> values(shape.numel());
        for (float& v : values) v = u(rng);
        upload_f32(s, x, values.data());
        return x;
    };
    const Tensor qkv = make(t, {B, T_, 3 * C}, true), dout = make(t, {B, T_, C}, true),
                 out = make(t, {B, T_, C}, false), dqkv = make(t, {B, T_, 3 * C}, false),
                 lse = make(DType::f32, {B, H, T_}, false), att = make(t, {B, H, T_, T_}, false);
    const int heads = o.heads;
    auto pass = [&](auto&& enqueue) {
        return median_seconds(o.iters, [&] {
            const EventPtr start = s.record();
            for (int k = 0; k < kPassesPerSample; ++k) enqueue();
            const EventPtr end = s.record();
            s.synchronize();
            return end->seconds_since(*start) / kPassesPerSample;
        });
    };
    double best[4] = {1e30, 1e30, 1e30, 1e30}; // flash forward, backward; materialize's
    for (int round = 0; round < 2; ++round) {
        const double times[4] = {
            pass([&] { ops.flash_attention_forward(s, out, lse, qkv, heads, heads); }),
            pass([&] { ops.flash_attention_backward(s, dqkv, dout, qkv, out, lse, heads, heads); }),
            pass([&] { ops.attention_forward(s, out, att, qkv, heads); }),
            pass([&] { ops.attention_backward(s, dqkv, dout, qkv, att, heads); })};
        for (int k = 0; k < 4; ++k) best[k] = std::min(best[k], times[k]);
    }
    const double fwd = causal_forward_flops(o);
    return {{"device", o.device.device},
            {"batch", o.batch},
            {"seq", o.seq},
            {"heads", o.heads},
            {"head_dim", o.head_dim},
            {"precision", o.precision},
            {"flash_kernels", ops.flash_attention_kernels(t, o.head_dim)},
            {"flash_forward_ms", best[0] * 1e3},
            {"flash_backward_ms", best[1] * 1e3},
            {"flash_ms", (best[0] + best[1]) * 1e3},
            {"flash_forward_tflops", fwd / best[0] / 1e12},
            {"flash_backward_tflops", 2.5 * fwd / best[1] / 1e12},
            {"materialize_forward_ms", best[2] * 1e3},
            {"materialize_backward_ms", best[3] * 1e3},
            {"materialize_ms", (best[2] + best[3]) * 1e3},
            {"flash_kept_bytes", lse.bytes()},
            {"materialize_kept_bytes", att.bytes()}};
}
} // namespace

CommandRunner add_bench_attention_command(CLI::App& cmd) {
    auto o = std::make_shared<AttentionBenchOptions>();
    cmd.add_option("--batch", o->batch, "B")->check(at_least(1));
    cmd.add_option("--seq-len", o->seq, "T")->check(at_least(1));
    cmd.add_option("--heads", o->heads, "H")->check(at_least(1));
    cmd.add_option("--head-dim", o->head_dim, "hd")->check(at_least(1));
    cmd.add_option("--precision", o->precision, "fp32 | bf16 | fp16");
    cmd.add_option("--iters", o->iters, "Timed runs per kind (the median, best of 2 rounds)")
        ->check(at_least(1));
    add_device_options(cmd, o->device);
    return [o] {
        const Precision p = parse_precision(o->precision);
        if (o->device.device != "cpu") {
            fmt::print("{}\n", bench_on_device(*o, p).dump());
            return 0;
        }
        check_device_options(o->device);
        cpu::set_threads(o->device.threads > 0 ? o->device.threads : cpu::default_threads());
        cpu::CpuGemm gemm(o->device.gemm);
        const cpu::TileGemm tiles = gemm.tiles();
        const nlohmann::json r = p == Precision::fp32   ? bench<float>(*o, tiles)
                                 : p == Precision::bf16 ? bench<bf16_t>(*o, tiles)
                                                        : bench<f16_t>(*o, tiles);
        fmt::print("{}\n", r.dump());
        return 0;
    };
}

} // namespace shardlab
