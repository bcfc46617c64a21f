// Two copies of one piece of kernel code, picked at run time by a condition and each compiled with
// it known: the copy for the common case has none of the other's tests and branches. The flash
// kernels' tiles that the causal diagonal or the sequence's end cuts, or not
// (flash_attention_mma.cu); cross-entropy's batches of whole chunks, or not (cross_entropy.cu).
// Included by .cu files only.
#pragma once

#include <type_traits>

namespace shardlab::cuda {

// Calls f(std::true_type{}) where `cond` holds, else f(std::false_type{}); f reads the condition as
// decltype(arg)::value.
template <typename F>
__device__ __forceinline__ void with_constant(bool cond, F&& f) {
    if (cond)
        f(std::true_type{});
    else
        f(std::false_type{});
}

} // namespace shardlab::cuda
