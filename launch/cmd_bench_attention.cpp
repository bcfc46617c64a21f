// `shardlab bench attention`: causal attention alone, forward + backward, on B x T x H x hd, flash
// and materialize side by side on the CPU kernels (model/kernels/cpu): the median time of each
// and the bytes each keeps for backward (flash: the fp32 log-sum-exps; materialize: the T x T
// probabilities). The tile products run on the library a training run would use (--gemm, as the
// backend: cpu_gemm.h). bench/attention_cpu.sh sets PyTorch's matmul-softmax-matmul beside it.
#include "core/error.h"
#include "core/timer.h"
#include "launch/commands.h"
#include "launch/flag_checks.h"
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
    int batch = 1, seq = 1024, heads = 12, head_dim = 64, iters = 5, threads = 0;
    std::string precision = "fp32";
    std::string gemm = cpu::default_gemm_request();
};

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
        std::vector<double> t;
        for (int i = 0; i <= o.iters; ++i) { // the first is a warm-up
            const double t0 = now_seconds();
            run();
            if (i > 0) t.push_back(now_seconds() - t0);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
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
    cmd.add_option("--threads", o->threads, "Threads (default: this rank's share of the cores)");
    cmd.add_option("--gemm", o->gemm,
                   "auto | openblas | onednn — the library of the tile products, as for training "
                   "(default $SHARDLAB_GEMM or auto)");
    return [o] {
        cpu::set_threads(o->threads > 0 ? o->threads : cpu::default_threads());
        const Precision p = parse_precision(o->precision);
        cpu::CpuGemm gemm(o->gemm);
        const cpu::TileGemm tiles = gemm.tiles();
        const nlohmann::json r = p == Precision::fp32   ? bench<float>(*o, tiles)
                                 : p == Precision::bf16 ? bench<bf16_t>(*o, tiles)
                                                        : bench<f16_t>(*o, tiles);
        fmt::print("{}\n", r.dump());
        return 0;
    };
}

} // namespace shardlab
