// Per row: max, log-sum-exp, loss; then (optionally) the gradient in place. Row losses are summed
// in row order in double, so the mean is independent of the thread count.
#include "model/kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace shardlab::cpu {

template <typename T>
double softmax_cross_entropy(T* logits, const std::uint16_t* targets, int N, int V,
                             float dlogits_scale) {
    using A = acc_t<T>;
    std::vector<double> losses(N);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; ++r) {
        T* z = logits + std::size_t(r) * V;
        A maxv = -INFINITY;
        for (int v = 0; v < V; ++v) maxv = std::max(maxv, to_acc(z[v]));
        A sum = 0;
        for (int v = 0; v < V; ++v) sum += std::exp(to_acc(z[v]) - maxv);
        const A log_sum = std::log(sum) + maxv;
        losses[r] = double(log_sum - to_acc(z[targets[r]]));
        if (dlogits_scale == 0.0f) continue;
        const A scale = A(dlogits_scale);
        for (int v = 0; v < V; ++v) {
            const A p = std::exp(to_acc(z[v]) - log_sum);
            z[v] = from_acc<T>((p - (v == targets[r] ? A(1) : A(0))) * scale);
        }
    }
    double total = 0;
    for (double l : losses) total += l;
    return N > 0 ? total / N : 0.0;
}

template double softmax_cross_entropy<float>(float*, const std::uint16_t*, int, int, float);
template double softmax_cross_entropy<double>(double*, const std::uint16_t*, int, int, float);
template double softmax_cross_entropy<bf16_t>(bf16_t*, const std::uint16_t*, int, int, float);
template double softmax_cross_entropy<f16_t>(f16_t*, const std::uint16_t*, int, int, float);

} // namespace shardlab::cpu
