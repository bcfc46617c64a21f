// Enqueues the host reduction loop.
#include "comm/cpu_element_ops.h"

#include "comm/reduce_kernels.h"

namespace shardlab {

void CpuElementOps::reduce_add(Stream& s, void* out, const void* a, const void* b, std::size_t n,
                               DType t, float divisor) {
    if (n == 0) return;
    s.enqueue([=] { shardlab::reduce_add(out, a, b, n, t, divisor); });
}

} // namespace shardlab
