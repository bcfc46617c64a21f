// Per row (of stride ld; only the first V columns are the vocabulary): max, the exponentials into a
// row buffer (vectorized: vexp, compiled per ISA), their sum in eight interleaved partial sums
// combined in a fixed order, the loss; then (optionally) the gradient in place, p = e / sum. Row
// losses are summed in row order in double, so the mean is independent of the thread count.
#include "model/kernels/cpu/cross_entropy.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/vec_math.h"

#include <cmath>
#include <cstddef>
#include <vector>

namespace shardlab::cpu {

namespace {
constexpr int kLanes = 8;

// e[v] = exp(z[v] - max z) for one row; returns their sum (lane v % 8, lanes added pairwise) and
// sets maxv.
template <typename T>
SHARDLAB_TARGET_CLONES acc_t<T> row_exp(const T* __restrict z, acc_t<T>* __restrict e, int V,
                                        acc_t<T>& max_out) {
    using A = acc_t<T>;
    A maxv = to_acc(z[0]);
    for (int v = 1; v < V; ++v) maxv = to_acc(z[v]) > maxv ? to_acc(z[v]) : maxv;
    max_out = maxv;
    for (int v = 0; v < V; ++v) e[v] = vexp(to_acc(z[v]) - maxv);
    A lane[kLanes] = {};
    int v = 0;
    for (; v + kLanes <= V; v += kLanes)
        for (int l = 0; l < kLanes; ++l) lane[l] += e[v + l];
    for (int l = 0; v < V; ++v, ++l) lane[l] += e[v];
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// z[v] = (e[v] / sum - [v == target]) * scale: the fused backward, written over the logits.
template <typename T>
SHARDLAB_TARGET_CLONES void row_grad(T* __restrict z, const acc_t<T>* __restrict e, int V,
                                     acc_t<T> inv_sum, acc_t<T> scale) {
    for (int v = 0; v < V; ++v) z[v] = from_acc<T>(e[v] * inv_sum * scale);
}
} // namespace

template <typename T>
double softmax_cross_entropy(T* logits, const std::uint16_t* targets, int N, int V, int ld,
                             float dlogits_scale) {
    using A = acc_t<T>;
    std::vector<double> losses(N);
#pragma omp parallel
    {
        std::vector<A> e(V);
#pragma omp for schedule(static)
        for (int r = 0; r < N; ++r) {
            T* z = logits + std::size_t(r) * ld;
            A maxv;
            const A sum = row_exp(z, e.data(), V, maxv);
            const int t = targets[r];
            losses[r] = double(std::log(sum) + maxv - to_acc(z[t])); // log-sum-exp - z_t
            if (dlogits_scale == 0.0f) continue;
            const A scale = A(dlogits_scale), inv_sum = A(1) / sum;
            row_grad(z, e.data(), V, inv_sum, scale);
            z[t] = from_acc<T>((e[t] * inv_sum - A(1)) * scale);
            for (int v = V; v < ld; ++v) z[v] = from_acc<T>(A(0)); // padded vocabulary: no gradient
        }
    }
    double total = 0;
    for (double l : losses) total += l;
    return N > 0 ? total / N : 0.0;
}

template double softmax_cross_entropy<float>(float*, const std::uint16_t*, int, int, int, float);
template double softmax_cross_entropy<double>(double*, const std::uint16_t*, int, int, int, float);
template double softmax_cross_entropy<bf16_t>(bf16_t*, const std::uint16_t*, int, int, int, float);
template double softmax_cross_entropy<f16_t>(f16_t*, const std::uint16_t*, int, int, int, float);

} // namespace shardlab::cpu
