// Element-wise kernels: accumulate, convert, fill, and the bias rows a GEMM with a bias starts
// from. Each thread moves 16-byte vectors (packed.h) where every pointer is on the 16-byte grid,
// grid-stride, then the tail element by element; a misaligned pointer takes the element path for
// all. Every element's arithmetic is the same on both paths: the bits do not depend on it.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/packed.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;

// Enough blocks for n / width threads (at least one per tail element), within the grid limit.
unsigned grid_for(std::size_t n, int width) {
    return unsigned(std::min<std::size_t>(blocks_for(n / width + width, kThreads), 65535));
}

template <typename T>
__global__ void accumulate_kernel(T* dst, const T* src, std::size_t n, bool vector) {
    for_each_pack<Packed<T>::size>(n, vector, [&](std::size_t i, int width) {
        if (width == 1) {
            dst[i] = from_f32<T>(to_f32(dst[i]) + to_f32(src[i]));
            return;
        }
        Packed<T> d = load_packed(dst + i);
        const Packed<T> a = load_packed(src + i);
        for (int e = 0; e < Packed<T>::size; ++e)
            d.v[e] = from_f32<T>(to_f32(d.v[e]) + to_f32(a.v[e]));
        store_packed(dst + i, d);
    });
}

// W elements a pack step: the wider of the two types' packs (an fp32 side moves two vectors when
// the other side is 16-bit).
template <typename D, typename S>
constexpr int kConvertWidth = Packed<D>::size > Packed<S>::size ? Packed<D>::size : Packed<S>::size;

template <typename D, typename S>
__global__ void convert_kernel(D* dst, const S* src, std::size_t n, bool vector) {
    constexpr int W = kConvertWidth<D, S>;
    for_each_pack<W>(n, vector, [&](std::size_t i, int width) {
        if (width == 1) {
            dst[i] = from_f32<D>(to_f32(src[i]));
            return;
        }
        float f[W];
        for (int k = 0; k < W; k += Packed<S>::size) {
            const Packed<S> a = load_packed(src + i + k);
            for (int e = 0; e < Packed<S>::size; ++e) f[k + e] = to_f32(a.v[e]);
        }
        for (int k = 0; k < W; k += Packed<D>::size) {
            Packed<D> d;
            for (int e = 0; e < Packed<D>::size; ++e) d.v[e] = from_f32<D>(f[k + e]);
            store_packed(dst + i + k, d);
        }
    });
}

template <typename T>
__global__ void fill_kernel(T* dst, std::size_t n, float value, bool vector) {
    const T v = from_f32<T>(value);
    for_each_pack<Packed<T>::size>(n, vector, [&](std::size_t i, int width) {
        if (width == 1) {
            dst[i] = v;
            return;
        }
        Packed<T> d;
        for (int e = 0; e < Packed<T>::size; ++e) d.v[e] = v;
        store_packed(dst + i, d);
    });
}

// A 2-D launch: blockDim.x threads over a row's units (packs when `vector`, else elements),
// blockDim.y rows per block; grid x over rows (no grid limit that matters), y over units. No
// division per element.
template <typename T>
__global__ void bias_rows_kernel(T* out, const T* bias, int rows, int cols, bool vector) {
    const int row = int(blockIdx.x * blockDim.y + threadIdx.y);
    const int unit = int(blockIdx.y * blockDim.x + threadIdx.x);
    if (row >= rows) return;
    T* o = out + std::size_t(row) * cols;
    if (!vector) {
        if (unit < cols) o[unit] = bias[unit];
        return;
    }
    const int c = unit * Packed<T>::size;
    if (c < cols) store_packed(o + c, load_packed(bias + c));
}
} // namespace

void accumulate(cudaStream_t s, void* dst, const void* src, std::size_t n, DType t) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const bool vector = aligned16(dst) && aligned16(src);
        launch("accumulate", accumulate_kernel<T>, grid_for(n, vector ? Packed<T>::size : 1),
               kThreads, 0, s, static_cast<T*>(dst), static_cast<const T*>(src), n, vector);
    });
}

void convert(cudaStream_t s, void* dst, DType dst_type, const void* src, DType src_type,
             std::size_t n) {
    if (n == 0) return;
    if (dst_type == src_type) {
        check_cuda(cudaMemcpyAsync(dst, src, n * dtype_size(dst_type), cudaMemcpyDeviceToDevice, s),
                   "cudaMemcpyAsync");
        return;
    }
    dispatch(dst_type, [&](auto dtag) {
        dispatch(src_type, [&](auto stag) {
            using D = typename decltype(dtag)::type;
            using S = typename decltype(stag)::type;
            const bool vector = aligned16(dst) && aligned16(src);
            launch("convert", convert_kernel<D, S>, grid_for(n, vector ? kConvertWidth<D, S> : 1),
                   kThreads, 0, s, static_cast<D*>(dst), static_cast<const S*>(src), n, vector);
        });
    });
}

void fill(cudaStream_t s, void* dst, DType t, std::size_t n, float value) {
    if (n == 0) return;
    if (value == 0.0f) { // +0 is all zero bits in every dtype
        check_cuda(cudaMemsetAsync(dst, 0, n * dtype_size(t), s), "cudaMemsetAsync");
        return;
    }
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const bool vector = aligned16(dst);
        launch("fill", fill_kernel<T>, grid_for(n, vector ? Packed<T>::size : 1), kThreads, 0, s,
               static_cast<T*>(dst), n, value, vector);
    });
}

void bias_rows(cudaStream_t s, void* out, const void* bias, int rows, int cols, DType t) {
    if (rows == 0 || cols == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        // Vectors when every row starts on the 16-byte grid: the row length a whole number of
        // packs, both pointers aligned.
        const bool vector = cols % Packed<T>::size == 0 && aligned16(out) && aligned16(bias);
        const int units = vector ? cols / Packed<T>::size : cols;
        const unsigned x = std::min(kThreads, (unsigned(units) + 31) / 32 * 32);
        const unsigned y = kThreads / x;
        launch("bias_rows", bias_rows_kernel<T>,
               dim3(blocks_for(std::size_t(rows), y), blocks_for(std::size_t(units), x)),
               dim3(x, y), 0, s, static_cast<T*>(out), static_cast<const T*>(bias), rows, cols,
               vector);
    });
}

} // namespace shardlab::cuda
