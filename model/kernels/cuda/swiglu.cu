// SwiGLU (Llama's MLP gate, issue 25; the CPU twin is model/kernels/cpu/swiglu.cpp): loads widened
// to fp32, one rounding on store, 16-byte vectors where every pointer is aligned (packed.h; the
// tail and misaligned pointers element by element, the same arithmetic per element either way).
// The CPU's expressions in the CPU's order; only the exponential differs (CUDA's expf here, the
// CPU's vectorisable Cephes exp there, each within 2 ulp).
//   out = g * sigmoid(g) * u;   dgate = dy * u * s * (1 + g * (1 - s)), dup = dy * g * s
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/packed.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;

__device__ __forceinline__ float sigmoid(float g) {
    return 1.0f / (1.0f + expf(-g));
}

unsigned grid_for(std::size_t n, int width) {
    return unsigned(std::min<std::size_t>(blocks_for(n / width + width, kThreads), 65535));
}

template <typename T>
__global__ void swiglu_forward_kernel(T* out, const T* gate, const T* up, std::size_t n,
                                      bool vector) {
    for_each_pack<Packed<T>::size>(n, vector, [&](std::size_t i, int width) {
        if (width == 1) {
            const float g = to_f32(gate[i]);
            out[i] = from_f32<T>(g * sigmoid(g) * to_f32(up[i]));
            return;
        }
        const Packed<T> gp = load_packed(gate + i), up_p = load_packed(up + i);
        Packed<T> o;
        for (int e = 0; e < Packed<T>::size; ++e) {
            const float g = to_f32(gp.v[e]);
            o.v[e] = from_f32<T>(g * sigmoid(g) * to_f32(up_p.v[e]));
        }
        store_packed(out + i, o);
    });
}

// dgate and dup of one element.
__device__ __forceinline__ void swiglu_grad(float g, float u, float dy, float& dg, float& du) {
    const float s = sigmoid(g);
    dg = dy * u * s * (1.0f + g * (1.0f - s));
    du = dy * g * s;
}

template <typename T>
__global__ void swiglu_backward_kernel(T* dgate, T* dup, const T* dout, const T* gate, const T* up,
                                       std::size_t n, bool vector) {
    for_each_pack<Packed<T>::size>(n, vector, [&](std::size_t i, int width) {
        float dg, du;
        if (width == 1) {
            swiglu_grad(to_f32(gate[i]), to_f32(up[i]), to_f32(dout[i]), dg, du);
            dgate[i] = from_f32<T>(dg), dup[i] = from_f32<T>(du);
            return;
        }
        const Packed<T> gp = load_packed(gate + i), up_p = load_packed(up + i),
                        dp = load_packed(dout + i);
        Packed<T> dgp, dup_p;
        for (int e = 0; e < Packed<T>::size; ++e) {
            swiglu_grad(to_f32(gp.v[e]), to_f32(up_p.v[e]), to_f32(dp.v[e]), dg, du);
            dgp.v[e] = from_f32<T>(dg), dup_p.v[e] = from_f32<T>(du);
        }
        store_packed(dgate + i, dgp);
        store_packed(dup + i, dup_p);
    });
}
} // namespace

void swiglu_forward(cudaStream_t s, void* out, const void* gate, const void* up, std::size_t n,
                    DType t) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const bool vector = aligned16(out) && aligned16(gate) && aligned16(up);
        launch("swiglu_forward", swiglu_forward_kernel<T>,
               grid_for(n, vector ? Packed<T>::size : 1), kThreads, 0, s, static_cast<T*>(out),
               static_cast<const T*>(gate), static_cast<const T*>(up), n, vector);
    });
}

void swiglu_backward(cudaStream_t s, void* dgate, void* dup, const void* dout, const void* gate,
                     const void* up, std::size_t n, DType t) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const bool vector = aligned16(dgate) && aligned16(dup) && aligned16(dout) &&
                            aligned16(gate) && aligned16(up);
        launch("swiglu_backward", swiglu_backward_kernel<T>,
               grid_for(n, vector ? Packed<T>::size : 1), kThreads, 0, s, static_cast<T*>(dgate),
               static_cast<T*>(dup), static_cast<const T*>(dout), static_cast<const T*>(gate),
               static_cast<const T*>(up), n, vector);
    });
}

} // namespace shardlab::cuda
