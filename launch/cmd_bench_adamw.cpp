// `shardlab bench adamw`: parameters per second of the host AdamW update (the offload path) on
// one shard, against its bandwidth bound — the bytes the update must touch per parameter (read
// grad, master, m, v; write master, m, v: 28 B in fp32) divided by the memory bandwidth this
// machine gives a kernel with exactly that traffic and no arithmetic.
#include "core/error.h"
#include "core/target_clones.h"
#include "core/timer.h"
#include "launch/cli_util.h"
#include "launch/commands.h"
#include "launch/flag_checks.h"
#include "measure/host_adamw_rate.h"
#include "model/kernels/cpu/threads.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <omp.h>

#include <memory>
#include <vector>

namespace shardlab {

namespace {
struct AdamBenchOptions {
    double params = 100e6;
    int threads = 0, iters = 10;
    std::string json_path;
};

// Reads g, p, m, v and writes p, m, v — the update's traffic — compiled like the update itself.
SHARDLAB_TARGET_CLONES void touch(float* __restrict p, float* __restrict m, float* __restrict v,
                                  const float* __restrict g, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const float x = g[i];
        p[i] += x;
        m[i] += x;
        v[i] += x;
    }
}

int run(const AdamBenchOptions& o) {
    if (o.iters < 1) throw UsageError("--iters must be at least 1");
    cpu::set_threads(o.threads > 0 ? o.threads : cpu::default_threads());
    const std::size_t n = std::size_t(o.params);
    std::vector<float> p(n, 0.5f), g(n, 1e-3f), m(n, 0.0f), v(n, 0.0f);
    const double adam = host_adamw_seconds(p.data(), m.data(), v.data(), g.data(), n, o.iters);
    // The same traffic as the update — 4 streams read, 3 written — with no arithmetic to speak of.
    const double touch_s = median_seconds(o.iters, [&] {
#pragma omp parallel
        {
            const std::size_t t = std::size_t(omp_get_thread_num()),
                              nt = std::size_t(omp_get_num_threads());
            const std::size_t lo = n * t / nt, hi = n * (t + 1) / nt;
            touch(p.data() + lo, m.data() + lo, v.data() + lo, g.data() + lo, hi - lo);
        }
    });
    const double bytes_per_param = 28.0;
    const nlohmann::json r = {
        {"params", n},
        {"threads", cpu::current_threads()},
        {"seconds_per_step", adam},
        {"params_per_s", double(n) / adam},
        {"bytes_per_param", bytes_per_param},
        {"memory_bandwidth_gbps", bytes_per_param * double(n) / touch_s / 1e9},
        {"bandwidth_bound_params_per_s", double(n) / touch_s},
        {"fraction_of_bound", touch_s / adam}};
    fmt::print("{}\n", r.dump());
    if (!o.json_path.empty()) write_json_file(o.json_path, r);
    return 0;
}
} // namespace

CommandRunner add_bench_adamw_command(CLI::App& cmd) {
    auto o = std::make_shared<AdamBenchOptions>();
    cmd.add_option("--params", o->params, "Parameters in the shard (e.g. 100e6)")
        ->check(in_range(1, 4e9));
    cmd.add_option("--threads", o->threads, "Threads (default: cores / ranks on this node)");
    cmd.add_option("--iters", o->iters, "Timed updates (the median is reported)");
    cmd.add_option("--json", o->json_path, "Also write the result to this JSON file");
    return [o] { return run(*o); };
}

} // namespace shardlab
