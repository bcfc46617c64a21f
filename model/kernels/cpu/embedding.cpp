// Embedding: positions grouped by token (a counting sort) so each dwte row is touched once.
#include "model/kernels/cpu/embedding.h"

#include "model/kernels/cpu/residual.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace shardlab::cpu {

template <typename T>
void embedding_forward(T* out, const std::uint16_t* tokens, const T* wte, const T* wpe, int B,
                       int T_, int C) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T_; ++t) {
            const T* we = wte + std::size_t(tokens[b * T_ + t]) * C;
            T* o = out + (std::size_t(b) * T_ + t) * C;
            if (!wpe) { // no position table (Llama: RoPE carries positions)
                std::copy_n(we, C, o);
                continue;
            }
            add_values(o, we, wpe + std::size_t(t) * C, std::size_t(C));
        }
}

template <typename T>
void embedding_backward(T* dwte, T* dwpe, const T* dout, const std::uint16_t* tokens, int B, int T_,
                        int C, int V) {
    using A = acc_t<T>;
    const int N = B * T_;
    // Bucket positions by token: start[v] .. start[v+1] index into `order`, in position order.
    std::vector<int> start(std::size_t(V) + 1, 0), order(N);
    for (int i = 0; i < N; ++i) ++start[tokens[i] + 1];
    for (int v = 0; v < V; ++v) start[v + 1] += start[v];
    std::vector<int> fill(start.begin(), start.end() - 1);
    for (int i = 0; i < N; ++i) order[fill[tokens[i]]++] = i;

#pragma omp parallel for schedule(dynamic, 16)
    for (int v = 0; v < V; ++v) {
        if (start[v] == start[v + 1]) continue;
        std::vector<A> acc(C, A(0));
        for (int k = start[v]; k < start[v + 1]; ++k) {
            const T* g = dout + std::size_t(order[k]) * C;
            for (int c = 0; c < C; ++c) acc[c] += to_acc(g[c]);
        }
        T* row = dwte + std::size_t(v) * C;
        for (int c = 0; c < C; ++c) row[c] = from_acc<T>(to_acc(row[c]) + acc[c]);
    }
    if (!dwpe) return;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T_; ++t) {
        T* row = dwpe + std::size_t(t) * C;
        for (int c = 0; c < C; ++c) {
            A s = 0;
            for (int b = 0; b < B; ++b) s += to_acc(dout[(std::size_t(b) * T_ + t) * C + c]);
            row[c] = from_acc<T>(to_acc(row[c]) + s);
        }
    }
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void embedding_forward<T>(T*, const std::uint16_t*, const T*, const T*, int, int,     \
                                       int);                                                       \
    template void embedding_backward<T>(T*, T*, const T*, const std::uint16_t*, int, int, int, int);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
