// One phase after another, each on every rank at once; only numbers every rank agrees on (the
// slowest rank's, or broadcast) enter the profile, so any rank could write it.
#include "measure/calibrate.h"

#include "measure/attention_rate.h"
#include "measure/copy_rate.h"
#include "measure/gemm_rate.h"
#include "measure/host_adamw_rate.h"
#include "measure/kernel_rate.h"
#include "measure/offload_rate.h"
#include "measure/slowest_rank.h"
#include "model/family.h"
#include "model/kernels/cpu/cpu_model.h"

#include <algorithm>
#include <ctime>

namespace shardlab {

namespace {
std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

// The step-weighted rate: what the model's GEMMs of one micro-batch of `tokens` rows achieve
// together; `shapes` receives each product's time.
double step_gemm_rate(Backend& backend, DType t, const CalibrateSpec& spec, std::int64_t tokens,
                      std::vector<GemmSample>& shapes, MPI_Comm comm) {
    double flop = 0, seconds = 0;
    for (const GemmShape& shape : family(spec.config.arch).gemm_shapes(spec.config, tokens)) {
        MPI_Barrier(comm);
        const double s = slowest_rank(gemm_seconds(backend, t, shape, spec.reps), comm);
        shapes.push_back({shape, s});
        flop += shape.per_step * shape.flop();
        seconds += shape.per_step * s;
    }
    return flop / seconds;
}

// At the spec's micro-batch (the shapes kept) and at micro-batch 1 (one sequence: the smallest
// products a run makes), so the time model can price micro-batches between and around them.
GemmRate gemm_rate(Backend& backend, DType t, const CalibrateSpec& spec, MPI_Comm comm) {
    GemmRate r;
    r.flop_per_s = step_gemm_rate(backend, t, spec, spec.tokens, r.shapes, comm);
    r.by_tokens[spec.tokens] = r.flop_per_s;
    const std::int64_t one = spec.config.context;
    if (one != spec.tokens) {
        std::vector<GemmSample> unused;
        r.by_tokens[one] = step_gemm_rate(backend, t, spec, one, unused, comm);
    }
    return r;
}

double host_adamw_params_per_s(std::size_t n, int reps, MPI_Comm comm) {
    std::vector<float> p(n, 0.5f), g(n, 1e-3f), m(n, 0.0f), v(n, 0.0f);
    MPI_Barrier(comm);
    const double s = host_adamw_seconds(p.data(), m.data(), v.data(), g.data(), n, reps);
    return double(n) / slowest_rank(s, comm);
}
} // namespace

CalibrateSpec calibrate_spec_for(const ModelConfig& config, int micro_batch) {
    CalibrateSpec spec;
    spec.config = config;
    spec.tokens = std::int64_t(micro_batch) * config.context;
    spec.model = config_to_json(config);
    spec.model["micro_batch"] = micro_batch;
    spec.model["seq"] = config.context;
    spec.adamw_params = std::int64_t(std::min(double(config.num_params()), 4.0 * (1 << 20)));
    return spec;
}

MachineProfile calibrate_machine(Backend& backend, Communicator& world, const CalibrateSpec& spec) {
    auto note = [&](const std::string& what) {
        if (spec.progress) spec.progress(what);
    };
    const MPI_Comm comm = world.mpi_comm();
    MachineProfile p;
    p.cpu = cpu::cpu_model_name();
    p.device = backend.describe();
    p.date = utc_now();
    p.ranks = world.size();
    p.nodes = world.node_layout().nodes();
    p.layout = world.node_layout().describe();
    p.model = spec.model;
    double bytes = 0, seconds = 0;
    for (DType t : spec.dtypes) {
        note(std::string("GEMMs of the model's step, ") + dtype_name(t));
        p.gemm[dtype_name(t)] = gemm_rate(backend, t, spec, comm);
        note(std::string("attention, ") + dtype_name(t));
        const ModelConfig& c = spec.config;
        for (AttentionKind kind : {AttentionKind::flash, AttentionKind::materialize})
            p.attention[dtype_name(t)][attention_name(kind)] =
                measure_attention_rate(backend, t, kind, int(spec.tokens / c.context), c.context,
                                       c.hidden, c.heads, c.kv_heads, spec.reps, comm);
        note(std::string("memory-bound kernels, ") + dtype_name(t));
        for (const KernelSample& k : measure_memory_kernels(
                 backend, t, spec.tokens, spec.config.hidden, spec.adamw_params, spec.reps, comm)) {
            p.memory_kernels.push_back(k);
            bytes += k.bytes, seconds += k.seconds;
        }
    }
    p.memory_bound_bytes_per_s = bytes / seconds;
    p.memory_bound_by_dtype = memory_bound_per_dtype(p.memory_kernels);
    note("host<->device copies");
    const CopyRates copy = measure_copy_rates(backend.context(), spec.copy_bytes, spec.reps, comm);
    p.copy_bytes = spec.copy_bytes;
    p.h2d_pinned_bytes_per_s = copy.h2d_pinned, p.d2h_pinned_bytes_per_s = copy.d2h_pinned;
    p.h2d_pageable_bytes_per_s = copy.h2d_pageable, p.d2h_pageable_bytes_per_s = copy.d2h_pageable;
    note("host AdamW");
    p.host_adamw_params = std::uint64_t(spec.adamw_params);
    p.host_adamw_params_per_s =
        host_adamw_params_per_s(std::size_t(spec.adamw_params), spec.reps, comm);
    for (DType t : spec.dtypes) {
        note(std::string("offload pipeline, ") + dtype_name(t) + " parameters");
        p.offload_params_per_s[dtype_name(t)] =
            measure_offload_rate(backend, t, spec.config, spec.adamw_params, spec.reps, comm);
    }
    note("collectives per link class");
    p.links = measure_links(backend, world, spec.sweep);
    return p;
}

} // namespace shardlab
