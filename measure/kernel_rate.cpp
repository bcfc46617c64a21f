// Bytes charged per kernel (es = the dtype's size): LayerNorm reads x and writes y ([N, d] each)
// and the fp32 mean and rstd ([N] each), weight and bias ([d]) are read once; GELU reads and
// writes [N, 4d]; AdamW reads and writes master, m and v (fp32), reads the gradient and writes the
// parameters (es each): 24 + 2 es bytes per parameter.
#include "measure/kernel_rate.h"

#include "measure/stream_timing.h"
#include "optim/adamw.h"

namespace shardlab {

namespace {
struct Buffers {
    Backend& backend;
    std::vector<Allocation> held;
    Tensor make(DType t, Shape shape) {
        MemoryTracker& tracker = backend.context().tracker();
        Stream& s = backend.context().compute();
        held.push_back(tracker.allocate(shape.numel() * dtype_size(t), Category::workspace, s));
        const Tensor x{held.back().data(), t, shape, backend.context().device()};
        backend.ops().fill(s, x, 0.5f);
        return x;
    }
};
} // namespace

std::vector<KernelSample> measure_memory_kernels(Backend& backend, DType t, std::int64_t tokens,
                                                 std::int64_t d, std::int64_t adamw_params,
                                                 int reps, MPI_Comm comm) {
    Ops& ops = backend.ops();
    Stream& s = backend.context().compute();
    const double es = double(dtype_size(t)), n = double(tokens);
    Buffers b{backend, {}};
    auto time = [&](auto&& enqueue) { return stream_seconds(s, reps, comm, enqueue); };
    std::vector<KernelSample> out;
    {
        const Tensor x = b.make(t, {tokens, d}), y = b.make(t, {tokens, d});
        const Tensor mean = b.make(DType::f32, {tokens}), rstd = b.make(DType::f32, {tokens});
        const Tensor w = b.make(t, {d}), bias = b.make(t, {d});
        out.push_back({"layernorm.forward", dtype_name(t), 2 * n * d * es + 8 * n + 2 * d * es,
                       time([&] { ops.layernorm_forward(s, y, mean, rstd, x, w, bias); })});
    }
    {
        const Tensor x = b.make(t, {tokens, 4 * d}), y = b.make(t, {tokens, 4 * d});
        out.push_back({"gelu.forward", dtype_name(t), 2 * n * 4 * d * es,
                       time([&] { ops.gelu_forward(s, y, x); })});
    }
    {
        const std::int64_t p = adamw_params;
        const Tensor master = b.make(DType::f32, {p}), m = b.make(DType::f32, {p}),
                     v = b.make(DType::f32, {p}), g = b.make(t, {p}), params = b.make(t, {p});
        const AdamWConfig cfg;
        int step = 0;
        out.push_back({"adamw.device", dtype_name(t), double(p) * (24 + 2 * es), time([&] {
                           ops.adamw(s, {{master, m, v, g, params,
                                          adamw_step(cfg, cfg.lr, ++step, true, 1.0f)}});
                       })});
    }
    return out;
}

} // namespace shardlab
