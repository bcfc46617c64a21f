// The host AdamW kernel timed alone: the median of `iters` updates of n fp32 parameters.
#include "measure/host_adamw_rate.h"

#include "core/timer.h"
#include "model/kernels/cpu/adamw.h"
#include "optim/adamw.h"

namespace shardlab {

double host_adamw_seconds(float* p, float* m, float* v, const float* g, std::size_t n, int iters) {
    const AdamWConfig cfg;
    int step = 0;
    return median_seconds(iters, [&] {
        cpu::adamw(p, m, v, g, DType::f32, n, adamw_step(cfg, cfg.lr, ++step, true, 1.0f));
    });
}

} // namespace shardlab
