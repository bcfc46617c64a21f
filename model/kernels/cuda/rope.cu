// Rotary position embedding (Llama's, issue 25), Hugging Face's rotate-half layout, in place: one
// thread per (row, pair j), rotating pair j of each of the row's `heads` heads, so neighbouring
// threads touch neighbouring elements and no two threads touch the same one. The angle is the
// CPU's (model/kernels/cpu/rope.cpp) expression in double, p * f_j (rope_frequency.h), its cos and
// sin rounded once to fp32: one pow, cos and sin per thread, shared by its heads. Under the
// emulator these are the CPU's own libm calls, so the result is the CPU's bit for bit; on a GPU
// CUDA's double functions are within 2 ulp of double, which changes the fp32 cos or sin only when
// the value lies that close to a rounding boundary of fp32.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"

#include <cmath>

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;

// sign +1: the rotation; -1: its inverse (backward).
template <typename T>
__global__ void rope_kernel(T* x, int rows, int seq, int heads, int D, int stride, Rope rope,
                            int sign) {
    const int half = D / 2;
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= std::size_t(rows) * half) return;
    const std::size_t r = i / half;
    const int j = int(i % half);
    const double p = double(r % std::size_t(seq));
    const double angle = p * rope_frequency(rope, j, D);
    const float c = float(cos(angle)), s = float(sign * sin(angle));
    for (int h = 0; h < heads; ++h) {
        T* v = x + r * std::size_t(stride) + std::size_t(h) * std::size_t(D);
        const float a = to_f32(v[j]), b = to_f32(v[j + half]);
        v[j] = from_f32<T>(a * c - b * s);
        v[j + half] = from_f32<T>(b * c + a * s);
    }
}

void launch_rope(const char* name, cudaStream_t s, void* x, int rows, int seq, int heads,
                 int head_dim, int stride, const Rope& rope, DType t, int sign) {
    const std::size_t threads = std::size_t(rows) * (head_dim / 2);
    if (threads == 0 || heads == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch(name, rope_kernel<T>, blocks_for(threads, kThreads), kThreads, 0, s,
               static_cast<T*>(x), rows, seq, heads, head_dim, stride, rope, sign);
    });
}
} // namespace

void rope_forward(cudaStream_t s, void* x, int rows, int seq, int heads, int head_dim, int stride,
                  const Rope& rope, DType t) {
    launch_rope("rope_forward", s, x, rows, seq, heads, head_dim, stride, rope, t, +1);
}

void rope_backward(cudaStream_t s, void* dx, int rows, int seq, int heads, int head_dim, int stride,
                   const Rope& rope, DType t) {
    launch_rope("rope_backward", s, dx, rows, seq, heads, head_dim, stride, rope, t, -1);
}

} // namespace shardlab::cuda
