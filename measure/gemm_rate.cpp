// Operands in the layout the shape's transposes ask for (A stored [k, m] when trans_a, B stored
// [n, k] when trans_b), so the library runs the same kernel it runs in the model.
#include "measure/gemm_rate.h"

#include "core/timer.h"

namespace shardlab {

double gemm_seconds(Backend& backend, DType t, const GemmShape& g, int reps) {
    MemoryTracker& tracker = backend.context().tracker();
    Stream& s = backend.context().compute();
    const Device dev = backend.context().device();
    const std::size_t es = dtype_size(t);
    const std::size_t a_n = std::size_t(g.m * g.k), b_n = std::size_t(g.k * g.n);
    Allocation a = tracker.allocate(a_n * es, Category::workspace, s);
    Allocation b = tracker.allocate(b_n * es, Category::workspace, s);
    Allocation c = tracker.allocate(std::size_t(g.m * g.n) * es, Category::workspace, s);
    const Shape a_shape = g.trans_a ? Shape{g.k, g.m} : Shape{g.m, g.k};
    const Shape b_shape = g.trans_b ? Shape{g.n, g.k} : Shape{g.k, g.n};
    const Tensor A{a.as<void>(), t, a_shape, dev}, B{b.as<void>(), t, b_shape, dev},
        C{c.as<void>(), t, {g.m, g.n}, dev};
    backend.ops().fill(s, A, 0.01f);
    backend.ops().fill(s, B, 0.01f);
    backend.ops().fill(s, C, 0.0f);
    s.synchronize();
    return median_seconds(reps, [&] {
        backend.ops().gemm(s, A, g.trans_a, B, g.trans_b, C, 1.0f, 0.0f);
        s.synchronize();
    });
}

} // namespace shardlab
