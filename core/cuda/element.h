// The storage types on a GPU — fp32, bf16, fp16 — as kernels see them: loaded into fp32, computed
// in fp32, rounded once to nearest even on store (the numerics contract, as on the CPU). And the
// one host-side switch from a run-time DType to a kernel's storage type. Included by .cu files.
#pragma once

#include "core/dtype.h"
#include "core/error.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace shardlab::cuda {

__device__ __forceinline__ float to_f32(float x) {
    return x;
}
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) {
    return __bfloat162float(x);
}
__device__ __forceinline__ float to_f32(__half x) {
    return __half2float(x);
}

template <typename T>
struct Round;
template <>
struct Round<float> {
    __device__ __forceinline__ static float from(float x) { return x; }
};
template <>
struct Round<__nv_bfloat16> {
    __device__ __forceinline__ static __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
};
template <>
struct Round<__half> {
    __device__ __forceinline__ static __half from(float x) { return __float2half_rn(x); }
};
template <typename T>
__device__ __forceinline__ T from_f32(float x) {
    return Round<T>::from(x);
}

// A 16-byte vector load; p must be 16-byte aligned (the emulator checks, a GPU faults).
__device__ __forceinline__ float4 load4(const float* p) {
#ifdef SHARDLAB_CUDA_EMU
    emu::check_aligned(p, 16, "a float4 load");
#endif
    return *reinterpret_cast<const float4*>(p);
}
// A 16-byte vector store; p must be 16-byte aligned.
__device__ __forceinline__ void store4(float* p, float4 v) {
#ifdef SHARDLAB_CUDA_EMU
    emu::check_aligned(p, 16, "a float4 store");
#endif
    *reinterpret_cast<float4*>(p) = v;
}

// A type as a value, so a generic lambda can receive it without constructing a device type.
template <typename T>
struct TypeTag {
    using type = T;
};

// Calls fn(TypeTag<T>{}) with T the device storage type of t.
template <typename Fn>
void dispatch(DType t, Fn&& fn) {
    switch (t) {
    case DType::f32:
        return fn(TypeTag<float>{});
    case DType::bf16:
        return fn(TypeTag<__nv_bfloat16>{});
    case DType::f16:
        return fn(TypeTag<__half>{});
    case DType::i64: // summed exactly by its own kernels, never loaded as a float
        throw Error("internal: int64 is not a floating-point storage type");
    }
}

} // namespace shardlab::cuda
