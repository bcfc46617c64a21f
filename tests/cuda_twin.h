// The harness of the CUDA op tests (test_cuda_ops.cpp, test_cuda_llama_ops.cpp): the CPU and the
// CUDA backend side by side (a Twin), tensors made on each from the same host values, and the
// comparisons and bounds the tests share. Each test calls both backends through the Ops
// interface on their own streams; a build or machine without a CUDA device skips, saying why.
#pragma once

#include "core/device_context.h"
#include "core/error.h"
#include "model/kernels/cuda/kernels.h"
#include "model/ops_cpu.h"
#include "model/ops_cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace shardlab::cuda_test {

// One backend's context and ops, and tensors made on it from host values.
struct Side {
    std::unique_ptr<DeviceContext> ctx;
    std::unique_ptr<Ops> ops;
    std::vector<Allocation> memory;

    Stream& s() { return ctx->compute(); }
    Tensor make(const std::vector<float>& values, DType t, Shape shape) {
        Allocation a =
            ctx->tracker().allocate(values.size() * dtype_size(t), Category::workspace, s());
        Tensor x{a.data(), t, shape, a.device()};
        upload_f32(s(), x, values.data());
        memory.push_back(std::move(a));
        return x;
    }
    template <typename T>
    T* scalar() {
        Allocation a = ctx->tracker().allocate(sizeof(T), Category::workspace, s());
        T* p = a.as<T>();
        memory.push_back(std::move(a));
        return p;
    }
    std::vector<float> read(const Tensor& x) { return to_host_f32(s(), x); }
    std::vector<char> bits(const Tensor& x) {
        std::vector<char> raw(x.bytes());
        s().memcpy(raw.data(), x.data, raw.size());
        s().synchronize();
        return raw;
    }
    template <typename T>
    T value(const T* p) {
        T v{};
        s().memcpy(&v, p, sizeof(T));
        s().synchronize();
        return v;
    }
};

struct Twin {
    Side cpu, gpu;
};

// The CPU reference, on the GEMM library $SHARDLAB_GEMM names (test_cuda_ops_onednn: oneDNN, as
// `auto` picks on an AVX-512 host) — checked, so a reference that fell back to another library
// cannot pass for it.
inline std::unique_ptr<Ops> cpu_reference_ops(DeviceContext& ctx) {
    auto ops = std::make_unique<CpuOps>(ctx.tracker(), "");
    const std::string named = cpu::default_gemm_request();
    if (named != "auto") {
        EXPECT_EQ(ops->gemm_paths().f32,
                  named == "onednn" ? cpu::GemmLibrary::onednn : cpu::GemmLibrary::openblas)
            << "the fp32 CPU reference is not on " << named;
    }
    if (named == "onednn" && ops->gemm_paths().bf16 != cpu::GemmLibrary::onednn)
        std::printf("note: oneDNN has no bf16 matmul on this CPU (%s): the bf16 reference is "
                    "OpenBLAS's\n",
                    cpu::cpu_isa().c_str());
    return ops;
}

// Both backends, or a skip that says why.
#define MAKE_TWIN(twin)                                                                            \
    const GpuQuery query = query_gpus();                                                           \
    if (query.gpus.empty())                                                                        \
        GTEST_SKIP() << "no CUDA device (" << (query.cuda_built ? query.status : "no CUDA build")  \
                     << "): the CUDA ops are checked on a GPU or under -DSHARDLAB_CUDA=EMU";       \
    Twin twin;                                                                                     \
    twin.cpu.ctx = make_cpu_context();                                                             \
    twin.cpu.ops = cpu_reference_ops(*twin.cpu.ctx);                                               \
    twin.gpu.ctx = make_cuda_context(0);                                                           \
    twin.gpu.ops = make_cuda_ops(twin.gpu.ctx->tracker())

inline std::vector<float> random_values(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
}

// The spacing of dtype t's values around |x| (its unit in the last place), for bounds.
inline double ulp(DType t, double x) {
    const int mantissa = t == DType::f32 ? 23 : t == DType::bf16 ? 7 : 10;
    const double min_normal = t == DType::f32 ? 0x1p-126 : t == DType::bf16 ? 0x1p-126 : 0x1p-14;
    const double a = std::max(std::fabs(x), min_normal);
    return std::ldexp(1.0, std::ilogb(a) - mantissa);
}

// One rounding to a 16-bit type of values that close (they may land on neighbouring values);
// none for fp32, whose results are compared before any rounding of their own.
inline double rounding(DType t, double x) {
    return t == DType::f32 ? 0.0 : ulp(t, x);
}

// The CUDA column sums' order (kernels.h: bias and norm parameter gradients over many rows),
// computed here in fp32: each chunk of kColumnChunkRows rows summed in row order, the chunks'
// partials summed in chunk order, added to dst0 and rounded to t. The C++ is compiled without
// FMA contraction, so each operation rounds as the kernel's does: the same bits, or the kernels
// sum in another order. term(r): row r's fp32 term, from the values as stored in t.
template <typename Term>
float chunked_column_sum(float dst0, int rows, DType t, Term term) {
    float total = 0;
    for (int first = 0; first < rows; first += cuda::kColumnChunkRows) {
        float partial = 0;
        for (int r = first; r < std::min(rows, first + cuda::kColumnChunkRows); ++r)
            partial += term(r);
        total += partial;
    }
    std::uint32_t stored = 0; // room for any dtype's element
    store_from_f32(&stored, t, 0, dst0 + total);
    return load_as_f32(&stored, t, 0);
}

// Whether the GPU is the emulator: its cuBLASLt uses the kernels' formulas and order of sums, and
// its device maths (pow, cos, sin, tanh) is the C library's, so results a GPU computes its own
// way are the CPU's bits here.
#ifdef SHARDLAB_CUDA_EMU
inline constexpr bool kEmulated = true;
#else
inline constexpr bool kEmulated = false;
#endif

inline void expect_within(const std::vector<float>& got, const std::vector<float>& want,
                          const std::vector<double>& bound, const char* what) {
    ASSERT_EQ(got.size(), want.size());
    int reported = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double d = std::fabs(double(got[i]) - double(want[i]));
        if (!(d <= bound[i]) && reported++ < 5)
            ADD_FAILURE() << what << "[" << i << "]: cuda " << got[i] << " cpu " << want[i]
                          << " differ by " << d << " > bound " << bound[i];
    }
}

// ||got - want|| / ||want||: for ops whose every output mixes many reductions (attention).
inline double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double d = double(got[i]) - double(want[i]);
        num += d * d; // a NaN (an element never written) fails the comparison
        den += double(want[i]) * double(want[i]);
    }
    return std::sqrt(num / den);
}

inline constexpr DType kAll[] = {DType::f32, DType::bf16, DType::f16};

// A view of x without its first `skip` elements (1-D): off the 16-byte grid when skip is odd, so
// the kernels' element-by-element fallback is exercised.
inline Tensor skip_front(const Tensor& x, std::int64_t skip) {
    return Tensor{static_cast<char*>(x.data) + skip * dtype_size(x.dtype), x.dtype,
                  Shape{std::int64_t(x.numel()) - skip}, x.device};
}

} // namespace shardlab::cuda_test
