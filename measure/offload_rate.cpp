// The offload pipeline timed on a model's own units (the first that fit in max_params).
#include "measure/offload_rate.h"

#include "core/timer.h"
#include "measure/slowest_rank.h"
#include "model/param_layout.h"
#include "offload/host_updater.h"

#include <vector>

namespace shardlab {

namespace {
// The units the timing updates: the layout's, in order, each that fits in what is left of
// max_params (GPT-2's 38M-parameter embeddings do not); the first block when none does.
std::vector<const ParamUnit*> timed_units(const ParamLayout& layout, std::int64_t max_params) {
    std::vector<const ParamUnit*> units;
    std::int64_t left = max_params;
    for (const ParamUnit& u : layout.units())
        if (std::int64_t(u.numel) <= left) units.push_back(&u), left -= std::int64_t(u.numel);
    if (units.empty()) units.push_back(&layout.units()[std::size_t(layout.block_unit(0))]);
    return units;
}
} // namespace

double measure_offload_rate(Backend& backend, DType param_dtype, const ModelConfig& config,
                            std::int64_t max_params, int reps, MPI_Comm comm) {
    DeviceContext& ctx = backend.context();
    const ParamLayout layout(config);
    const AdamWConfig adam;
    HostUpdater updater(ctx, adam, param_dtype);
    std::vector<Allocation> held;
    std::uint64_t params = 0;
    for (const ParamUnit* u : timed_units(layout, max_params)) {
        const std::size_t bytes = u->numel * dtype_size(param_dtype);
        held.push_back(ctx.tracker().allocate(bytes, Category::workspace, ctx.compute()));
        held.push_back(ctx.tracker().allocate(bytes, Category::workspace, ctx.compute()));
        const Shape shape{std::int64_t(u->numel)};
        const Tensor p{held[held.size() - 2].data(), param_dtype, shape, ctx.device()};
        const Tensor g{held.back().data(), param_dtype, shape, ctx.device()};
        backend.ops().fill(ctx.compute(), p, 0.5f);
        backend.ops().fill(ctx.compute(), g, 1e-3f);
        const std::vector<float> init(u->numel, 0.5f);
        updater.add({&u->params, 0, g, p}, init.data());
        params += u->numel;
    }
    int step = 0;
    MPI_Barrier(comm); // every rank updates at once, as in a run
    const double s = median_seconds(reps, [&] {
        updater.update(ctx.compute().record(), adam.lr, ++step, 1.0f)->synchronize();
    });
    return double(params) / slowest_rank(s, comm);
}

} // namespace shardlab
