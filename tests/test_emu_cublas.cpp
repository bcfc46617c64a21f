// The emulator's cuBLAS stand-in (emu/cublas.cpp) against a float64 reference written here: the
// column-major GEMM of every transpose combination, odd shapes, padded leading dimensions, strided
// and broadcast batches, alpha and beta, bf16 / fp16 operands; cuBLAS's argument checks; stream
// order; and an operand a GPU could not reach becoming the device's sticky error.
#include "core/dtype.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using shardlab::DType;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

DType dtype_of(cudaDataType_t t) {
    return t == CUDA_R_16BF ? DType::bf16 : t == CUDA_R_16F ? DType::f16 : DType::f32;
}

// Half an ulp of 1: the relative error of rounding to nearest into t.
double unit_roundoff(cudaDataType_t t) {
    return t == CUDA_R_16BF ? 0x1p-8 : t == CUDA_R_16F ? 0x1p-11 : 0x1p-24;
}

// x rounded to t and widened back: a value t holds exactly.
float representable(cudaDataType_t t, float x) {
    unsigned char bits[4];
    shardlab::convert(&x, DType::f32, bits, dtype_of(t), 1);
    return shardlab::load_as_f32(bits, dtype_of(t), 0);
}

// --- operands on the host -----------------------------------------------------------------------

// One operand: its matrices of rows x cols (column-major, ld elements between columns, stride
// elements from one matrix to the next). Every element outside them (padding rows, gaps) is NaN, so
// a GEMM reading one poisons its result, and writing one changes bytes that must not change.
struct HostMatrix {
    int rows = 0, cols = 0, ld = 1;
    long long stride = 0;
    cudaDataType_t type = CUDA_R_32F;
    std::vector<float> values; // the whole buffer, each value exact in `type`
    std::vector<bool> element; // whether a buffer index belongs to a matrix

    std::size_t index(int matrix, int i, int j) const {
        return std::size_t(matrix * stride + i + std::int64_t(j) * ld);
    }
    double at(int matrix, int i, int j) const { return values[index(matrix, i, j)]; }
    std::vector<unsigned char> bytes() const {
        std::vector<unsigned char> b(values.size() * shardlab::dtype_size(dtype_of(type)));
        if (!b.empty()) // (an empty vector's data() may be null, which memmove must not get)
            shardlab::convert(values.data(), DType::f32, b.data(), dtype_of(type), values.size());
        return b;
    }
};

struct Layout {
    int pad = 0;            // leading dimension beyond the rows
    long long gap = 0;      // elements between batch matrices beyond one matrix
    bool broadcast = false; // stride 0: one matrix serves the whole batch
};

HostMatrix make_matrix(int rows, int cols, Layout l, int batch, cudaDataType_t t, bool nan,
                       std::mt19937& rng) {
    HostMatrix h;
    h.rows = rows, h.cols = cols, h.type = t;
    h.ld = std::max(1, rows) + l.pad;
    h.stride = l.broadcast ? 0 : h.ld * std::int64_t(cols) + l.gap;
    const int count = l.broadcast ? 1 : batch;
    const std::size_t size = std::size_t((count - 1) * h.stride + h.ld * std::int64_t(cols));
    h.values.assign(size, kNaN);
    h.element.assign(size, false);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int m = 0; m < count; ++m)
        for (int j = 0; j < cols; ++j)
            for (int i = 0; i < rows; ++i) {
                h.values[h.index(m, i, j)] = nan ? kNaN : representable(t, uniform(rng));
                h.element[h.index(m, i, j)] = true;
            }
    return h;
}

// A device allocation holding a copy of host bytes.
struct DeviceBuffer {
    void* p = nullptr;
    std::size_t bytes = 0;
    explicit DeviceBuffer(const std::vector<unsigned char>& host) : bytes(host.size()) {
        EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
        if (bytes) {
            EXPECT_EQ(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
        }
    }
    explicit DeviceBuffer(const std::vector<float>& host)
        : DeviceBuffer(std::vector<unsigned char>(
              reinterpret_cast<const unsigned char*>(host.data()),
              reinterpret_cast<const unsigned char*>(host.data() + host.size()))) {}
    ~DeviceBuffer() { cudaFree(p); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    std::vector<unsigned char> download() const {
        std::vector<unsigned char> host(bytes);
        if (bytes) {
            EXPECT_EQ(cudaMemcpy(host.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        }
        return host;
    }
    std::vector<float> floats() const {
        const auto b = download();
        std::vector<float> f(b.size() / sizeof(float));
        std::memcpy(f.data(), b.data(), f.size() * sizeof(float));
        return f;
    }
};

// --- one GEMM against the reference -------------------------------------------------------------

enum class Api { strided_batched, gemm_ex, sgemm };

struct Spec {
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    int m = 3, n = 5, k = 7, batch = 1;
    Layout a, b, c;
    float alpha = 0.5f, beta = 0.0f;
    cudaDataType_t ab = CUDA_R_32F, ct = CUDA_R_32F;
    bool nan_c = false; // C's elements start as NaN (with beta == 0 they must not matter)
    Api api = Api::strided_batched;

    std::string describe() const {
        std::ostringstream s;
        s << "op " << ta << tb << " m " << m << " n " << n << " k " << k << " batch " << batch
          << " pads " << a.pad << "," << b.pad << "," << c.pad << " gaps " << a.gap << "," << b.gap
          << "," << c.gap << " broadcast " << a.broadcast << b.broadcast << " alpha " << alpha
          << " beta " << beta << " types " << ab << "->" << ct << " api " << int(api);
        return s.str();
    }
};

cublasStatus_t call(cublasHandle_t h, const Spec& s, const HostMatrix& a, const void* da,
                    const HostMatrix& b, const void* db, const HostMatrix& c, void* dc) {
    switch (s.api) {
    case Api::sgemm:
        return cublasSgemm(h, s.ta, s.tb, s.m, s.n, s.k, &s.alpha, static_cast<const float*>(da),
                           a.ld, static_cast<const float*>(db), b.ld, &s.beta,
                           static_cast<float*>(dc), c.ld);
    case Api::gemm_ex:
        return cublasGemmEx(h, s.ta, s.tb, s.m, s.n, s.k, &s.alpha, da, s.ab, a.ld, db, s.ab, b.ld,
                            &s.beta, dc, s.ct, c.ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    case Api::strided_batched:
        break;
    }
    return cublasGemmStridedBatchedEx(h, s.ta, s.tb, s.m, s.n, s.k, &s.alpha, da, s.ab, a.ld,
                                      a.stride, db, s.ab, b.ld, b.stride, &s.beta, dc, s.ct, c.ld,
                                      c.stride, s.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// The exact result of one element of C and how far the GEMM may be from it. The operands hold
// values exact in their type, so the reference sees what the GEMM sees, and float64 holds each
// product exactly. Summing k fp32 products in any order (with or without FMA) errs by at most
// about k u32 sum|a b|; alpha, beta * C and their sum add three more roundings; so the fp32 value
// is within (k + 4) u32 (|alpha| sum|a b| + |beta c|). Rounding it once into C's type adds u_C of
// its magnitude (2^-8 bf16, 2^-11 fp16, 2^-24 fp32), and for fp16 half its smallest subnormal.
struct Expected {
    double value, tolerance;
};

Expected expected(const Spec& s, const HostMatrix& a, const HostMatrix& b, const HostMatrix& c,
                  int matrix, int i, int j) {
    double sum = 0, magnitude = 0;
    for (int l = 0; l < s.k; ++l) {
        const double x = s.ta == CUBLAS_OP_N ? a.at(matrix, i, l) : a.at(matrix, l, i);
        const double y = s.tb == CUBLAS_OP_N ? b.at(matrix, l, j) : b.at(matrix, j, l);
        sum += x * y;
        magnitude += std::abs(x * y);
    }
    const double old = s.beta != 0.0f ? s.beta * c.at(matrix, i, j) : 0.0; // beta 0: C unread
    const double value = s.alpha * sum + old;
    const double fp32 = (s.k + 4) * 0x1p-24 * (std::abs(s.alpha) * magnitude + std::abs(old));
    const double u = unit_roundoff(s.ct);
    const double tolerance =
        fp32 * (1 + u) + u * std::abs(value) + (s.ct == CUDA_R_16F ? 0x1p-25 : 0.0);
    return {value, tolerance};
}

// Every element of C against the reference; every other byte of C's buffer unchanged.
void compare(const Spec& s, const HostMatrix& a, const HostMatrix& b, const HostMatrix& c,
             const std::vector<unsigned char>& before, const std::vector<unsigned char>& after) {
    const DType t = dtype_of(s.ct);
    const std::size_t size = shardlab::dtype_size(t);
    int reported = 0;
    for (int matrix = 0; matrix < s.batch; ++matrix)
        for (int j = 0; j < s.n; ++j)
            for (int i = 0; i < s.m; ++i) {
                const Expected e = expected(s, a, b, c, matrix, i, j);
                const double got = shardlab::load_as_f32(after.data(), t, c.index(matrix, i, j));
                if (std::abs(got - e.value) <= e.tolerance || reported > 4) continue;
                ++reported;
                ADD_FAILURE() << "C[" << matrix << "](" << i << "," << j << ") = " << got
                              << ", expected " << e.value << " +- " << e.tolerance;
            }
    for (std::size_t x = 0; x < c.values.size(); ++x)
        if (!c.element[x] && std::memcmp(&before[x * size], &after[x * size], size) != 0 &&
            reported++ < 5)
            ADD_FAILURE() << "C's padding at buffer element " << x << " was written";
}

void check_gemm(cublasHandle_t h, const Spec& s) {
    SCOPED_TRACE(s.describe());
    std::mt19937 rng(20240613u + unsigned(s.m * 131 + s.n * 17 + s.k));
    const bool ta = s.ta != CUBLAS_OP_N, tb = s.tb != CUBLAS_OP_N;
    const HostMatrix a =
        make_matrix(ta ? s.k : s.m, ta ? s.m : s.k, s.a, s.batch, s.ab, false, rng);
    const HostMatrix b =
        make_matrix(tb ? s.n : s.k, tb ? s.k : s.n, s.b, s.batch, s.ab, false, rng);
    const HostMatrix c = make_matrix(s.m, s.n, s.c, s.batch, s.ct, s.nan_c, rng);
    const DeviceBuffer da(a.bytes()), db(b.bytes()), dc(c.bytes());
    ASSERT_EQ(call(h, s, a, da.p, b, db.p, c, dc.p), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    compare(s, a, b, c, c.bytes(), dc.download());
}

class EmuCublas : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS); }
    void TearDown() override { EXPECT_EQ(cublasDestroy(handle), CUBLAS_STATUS_SUCCESS); }
    cublasHandle_t handle = nullptr;
};

const cublasOperation_t kOps[] = {CUBLAS_OP_N, CUBLAS_OP_T};
struct Shape {
    int m, n, k;
};
const Shape kShapes[] = {{3, 5, 7}, {1, 1, 1}, {17, 13, 9}};

// --- semantics ----------------------------------------------------------------------------------

TEST_F(EmuCublas, Fp32EveryTransposeShapeAndBeta) {
    for (cublasOperation_t ta : kOps)
        for (cublasOperation_t tb : kOps)
            for (Shape sh : kShapes)
                for (float beta : {0.0f, 1.0f, -2.0f}) {
                    Spec s;
                    s.ta = ta, s.tb = tb, s.m = sh.m, s.n = sh.n, s.k = sh.k, s.beta = beta;
                    check_gemm(handle, s);
                }
}

TEST_F(EmuCublas, PaddedLeadingDimensionsLeavePaddingUntouched) {
    for (cublasOperation_t ta : kOps)
        for (cublasOperation_t tb : kOps)
            for (float beta : {0.0f, -2.0f}) {
                Spec s;
                s.ta = ta, s.tb = tb, s.m = 17, s.n = 13, s.k = 9, s.beta = beta;
                s.a.pad = 3, s.b.pad = 2, s.c.pad = 5;
                check_gemm(handle, s);
            }
}

TEST_F(EmuCublas, StridedBatchesWithGapsAndBroadcasts) {
    for (cublasOperation_t ta : kOps)
        for (cublasOperation_t tb : kOps)
            for (int broadcast = 0; broadcast < 3; ++broadcast) { // none, B, A
                Spec s;
                s.ta = ta, s.tb = tb, s.m = 5, s.n = 4, s.k = 3, s.batch = 3, s.beta = 1.0f;
                s.a.pad = 1, s.b.pad = 2, s.c.pad = 1;
                s.a.gap = 5, s.b.gap = 3, s.c.gap = 7;
                s.b.broadcast = broadcast == 1, s.a.broadcast = broadcast == 2;
                check_gemm(handle, s);
            }
}

TEST_F(EmuCublas, OpCIsOpTForRealTypes) {
    Spec s;
    s.ta = CUBLAS_OP_C, s.tb = CUBLAS_OP_C, s.m = 4, s.n = 6, s.k = 5, s.beta = 1.0f;
    check_gemm(handle, s);
}

TEST_F(EmuCublas, BetaZeroNeverReadsC) {
    const cudaDataType_t types[][2] = {
        {CUDA_R_32F, CUDA_R_32F}, {CUDA_R_16BF, CUDA_R_16BF}, {CUDA_R_16F, CUDA_R_32F}};
    for (auto [ab, ct] : types) {
        Spec s;
        s.m = 7, s.n = 3, s.k = 5, s.batch = 2, s.c.pad = 2, s.nan_c = true, s.beta = 0.0f;
        s.ab = ab, s.ct = ct;
        check_gemm(handle, s); // a NaN result fails the comparison
    }
}

TEST_F(EmuCublas, SixteenBitInputsIntoEitherOutputType) {
    const cudaDataType_t types[][2] = {{CUDA_R_16BF, CUDA_R_16BF},
                                       {CUDA_R_16BF, CUDA_R_32F},
                                       {CUDA_R_16F, CUDA_R_16F},
                                       {CUDA_R_16F, CUDA_R_32F}};
    const Shape shapes[] = {{3, 5, 7}, {17, 13, 9}, {8, 6, 100}};
    for (auto [ab, ct] : types)
        for (cublasOperation_t ta : kOps)
            for (cublasOperation_t tb : kOps)
                for (Shape sh : shapes)
                    for (float beta : {0.0f, -2.0f}) {
                        Spec s;
                        s.ta = ta, s.tb = tb, s.m = sh.m, s.n = sh.n, s.k = sh.k, s.beta = beta;
                        s.ab = ab, s.ct = ct, s.c.pad = 3, s.batch = 2, s.b.broadcast = true;
                        check_gemm(handle, s);
                    }
}

TEST_F(EmuCublas, EmptyInnerDimensionOrZeroAlphaScalesC) {
    Spec s;
    s.m = 4, s.n = 3, s.k = 0, s.beta = -2.0f, s.c.pad = 1;
    check_gemm(handle, s); // C = beta * C, A and B never read
    s.k = 6, s.alpha = 0.0f;
    check_gemm(handle, s);
}

TEST_F(EmuCublas, GemmExAndSgemmAreTheUnbatchedCase) {
    for (Api api : {Api::gemm_ex, Api::sgemm})
        for (cublasOperation_t ta : kOps) {
            Spec s;
            s.api = api, s.ta = ta, s.tb = CUBLAS_OP_T, s.m = 17, s.n = 13, s.k = 9;
            s.beta = -2.0f, s.a.pad = 2, s.c.pad = 3;
            check_gemm(handle, s);
        }
    Spec s;
    s.api = Api::gemm_ex, s.ab = CUDA_R_16BF, s.ct = CUDA_R_32F, s.beta = 1.0f;
    check_gemm(handle, s);
}

// --- the handle and argument checks -------------------------------------------------------------

TEST_F(EmuCublas, HandleSettings) {
    EXPECT_EQ(cublasCreate(nullptr), CUBLAS_STATUS_INVALID_VALUE);
    cudaStream_t s = reinterpret_cast<cudaStream_t>(1);
    EXPECT_EQ(cublasGetStream(handle, &s), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(s, nullptr); // the default stream until set
    cudaStream_t mine;
    ASSERT_EQ(cudaStreamCreate(&mine), cudaSuccess);
    EXPECT_EQ(cublasSetStream(handle, mine), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasGetStream(handle, &s), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(s, mine);
    EXPECT_EQ(cublasGetStream(handle, nullptr), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(cublasSetStream(handle, nullptr), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaStreamDestroy(mine), cudaSuccess);

    for (cublasMath_t mode :
         {CUBLAS_DEFAULT_MATH, CUBLAS_PEDANTIC_MATH, CUBLAS_TF32_TENSOR_OP_MATH})
        EXPECT_EQ(cublasSetMathMode(handle, mode), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(
        cublasSetMathMode(handle, cublasMath_t(CUBLAS_TF32_TENSOR_OP_MATH |
                                               CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
        CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasSetMathMode(handle, cublasMath_t(5)), CUBLAS_STATUS_INVALID_VALUE);

    void* workspace = nullptr;
    ASSERT_EQ(cudaMalloc(&workspace, 4096), cudaSuccess); // 256-byte aligned, as cudaMalloc's are
    EXPECT_EQ(cublasSetWorkspace(handle, workspace, 4096), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasSetWorkspace(handle, static_cast<char*>(workspace) + 8, 1024),
              CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(cublasSetWorkspace(handle, nullptr, 0), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaFree(workspace), cudaSuccess);

    EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
    EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
    EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
    EXPECT_STRNE(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE), "");
    EXPECT_STRNE(cublasGetStatusString(cublasStatus_t(12)), "");
}

TEST_F(EmuCublas, NullHandleIsNotInitialized) {
    const float one = 1.0f;
    float x = 0.0f;
    cudaStream_t s;
    EXPECT_EQ(cublasDestroy(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_EQ(cublasSetStream(nullptr, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_EQ(cublasGetStream(nullptr, &s), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_EQ(cublasSetMathMode(nullptr, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_EQ(cublasSetWorkspace(nullptr, nullptr, 0), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_EQ(
        cublasSgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &x, 1, &x, 1, &one, &x, 1),
        CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_EQ(cublasGemmEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &x, CUDA_R_32F, 1, &x,
                           CUDA_R_32F, 1, &one, &x, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_NOT_INITIALIZED);
}

// A valid call's arguments, to break one at a time: 2 GEMMs of C[4x3] = A[4x2] B[2x3].
struct Args {
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    int m = 4, n = 3, k = 2, lda = 4, ldb = 2, ldc = 4, batch = 2;
    cudaDataType_t a = CUDA_R_32F, b = CUDA_R_32F, c = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    bool null_alpha = false;
};

class EmuCublasArgs : public EmuCublas {
  protected:
    static constexpr int kElems = 256; // room for every call below, in every type
    cublasStatus_t call(const Args& g, void* c) {
        const float one = 1.0f;
        return cublasGemmStridedBatchedEx(
            handle, g.ta, g.tb, g.m, g.n, g.k, g.null_alpha ? nullptr : &one, da.p, g.a, g.lda, 64,
            db.p, g.b, g.ldb, 64, &one, c, g.c, g.ldc, 64, g.batch, g.compute, CUBLAS_GEMM_DEFAULT);
    }
    // Each case returns `status` and queues nothing: C is unchanged after the device drains.
    void expect(cublasStatus_t status, const Args& g, const char* what) {
        SCOPED_TRACE(what);
        EXPECT_EQ(call(g, dc.p), status);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(dc.floats(), c0);
    }
    std::vector<float> c0 = std::vector<float>(kElems, 3.0f);
    DeviceBuffer da{std::vector<float>(kElems, 1.0f)}, db{std::vector<float>(kElems, 2.0f)}, dc{c0},
        scratch{c0};
};

TEST_F(EmuCublasArgs, ValidBaselineAndTransposedLeadingDimensions) {
    EXPECT_EQ(call(Args{}, scratch.p), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(scratch.floats()[0], 3.0f + 2 * 1.0f * 2.0f); // it ran: C = A B + C
    Args t;
    t.ta = CUBLAS_OP_T, t.lda = 2; // A stored k x m: lda >= k suffices
    t.tb = CUBLAS_OP_T, t.ldb = 3; // B stored n x k
    EXPECT_EQ(call(t, scratch.p), CUBLAS_STATUS_SUCCESS);
    Args empty;
    empty.m = 0, empty.lda = 1, empty.ldc = 1; // nothing to compute, yet valid
    expect(CUBLAS_STATUS_SUCCESS, empty, "m = 0");
}

TEST_F(EmuCublasArgs, InvalidValues) {
    const auto with = [](auto change) {
        Args g;
        change(g);
        return g;
    };
    const cublasStatus_t bad = CUBLAS_STATUS_INVALID_VALUE;
    expect(bad, with([](Args& g) { g.m = -1; }), "m < 0");
    expect(bad, with([](Args& g) { g.n = -1; }), "n < 0");
    expect(bad, with([](Args& g) { g.k = -1; }), "k < 0");
    expect(bad, with([](Args& g) { g.batch = -1; }), "batch < 0");
    expect(bad, with([](Args& g) { g.lda = 3; }), "lda < m with A as is");
    expect(bad, with([](Args& g) { g.ta = CUBLAS_OP_T, g.lda = 1; }), "lda < k with A^T");
    expect(bad, with([](Args& g) { g.ldb = 1; }), "ldb < k with B as is");
    expect(bad, with([](Args& g) { g.tb = CUBLAS_OP_T, g.ldb = 2; }), "ldb < n with B^T");
    expect(bad, with([](Args& g) { g.ldc = 3; }), "ldc < m");
    expect(bad, with([](Args& g) { g.m = 0, g.lda = 0, g.ldc = 1; }), "lda 0 for empty A");
    expect(bad, with([](Args& g) { g.m = 0, g.lda = 1, g.ldc = 0; }), "ldc 0 for empty C");
    // 3 is cuBLAS's CUBLAS_OP_CONJG, which no GEMM accepts (and, unlike a value outside the enum's
    // range, a defined value of the type).
    expect(bad, with([](Args& g) { g.ta = cublasOperation_t(3); }), "unknown transa");
    expect(bad, with([](Args& g) { g.tb = cublasOperation_t(3); }), "unknown transb");
    expect(bad, with([](Args& g) { g.null_alpha = true; }), "null alpha");
}

TEST_F(EmuCublasArgs, UnsupportedTypeCombinations) {
    const auto with = [](cudaDataType_t a, cudaDataType_t b, cudaDataType_t c,
                         cublasComputeType_t compute) {
        Args g;
        g.a = a, g.b = b, g.c = c, g.compute = compute;
        return g;
    };
    const cublasStatus_t no = CUBLAS_STATUS_NOT_SUPPORTED;
    const cublasComputeType_t f32 = CUBLAS_COMPUTE_32F;
    expect(no, with(CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F, f32), "A bf16, B fp16");
    expect(no, with(CUDA_R_32F, CUDA_R_32F, CUDA_R_16BF, f32), "fp32 into bf16");
    expect(no, with(CUDA_R_16F, CUDA_R_16F, CUDA_R_16BF, f32), "fp16 into bf16");
    expect(no, with(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16F, f32), "bf16 into fp16");
    expect(no, with(CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_64F), "fp32, 64F compute");
    expect(no, with(CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F), "fp64");
    expect(no, with(CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F), "16F compute");
    // The fp32 variants are fp32 here.
    for (cublasComputeType_t c : {CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F_FAST_TF32})
        EXPECT_EQ(call(with(CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, c), scratch.p),
                  CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// --- stream order -------------------------------------------------------------------------------

// C[2x2] = A B with A = [1 2; 3 4] and B = [5 6; 7 8] (row by row): exact in fp32.
const std::vector<float> kA = {1, 3, 2, 4}, kB = {5, 7, 6, 8}, kAB = {19, 43, 22, 50};

TEST_F(EmuCublas, GemmSeesEarlierCopiesOnItsStream) {
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    ASSERT_EQ(cublasSetStream(handle, s), CUBLAS_STATUS_SUCCESS);
    float* pinned = nullptr;
    ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&pinned), 4 * sizeof(float), 0), cudaSuccess);
    std::copy(kA.begin(), kA.end(), pinned);
    DeviceBuffer da(std::vector<float>(4, 0.0f)), db(kB), dc(std::vector<float>(4, 0.0f));
    // The copy is held back behind a slow task: a GEMM not in stream order would see A = 0.
    shardlab::emu::enqueue(s, [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
    ASSERT_EQ(cudaMemcpyAsync(da.p, pinned, 4 * sizeof(float), cudaMemcpyHostToDevice, s),
              cudaSuccess);
    const float one = 1.0f, zero = 0.0f;
    ASSERT_EQ(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one,
                          static_cast<float*>(da.p), 2, static_cast<float*>(db.p), 2, &zero,
                          static_cast<float*>(dc.p), 2),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(dc.floats(), kAB);
    EXPECT_EQ(cublasSetStream(handle, nullptr), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
    EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

TEST_F(EmuCublas, GemmRunsOnTheHandlesStreamAndReturnsAtOnce) {
    cudaStream_t s2;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cublasSetStream(handle, s2), CUBLAS_STATUS_SUCCESS);
    DeviceBuffer da(kA), db(kB), dc(std::vector<float>(4, kNaN));
    // s2 is held by a task until the test opens the gate (a time limit keeps a broken stand-in
    // from hanging the test): the GEMM queued behind it cannot have run before then.
    std::promise<void> open;
    std::shared_future<void> gate = open.get_future().share();
    auto passed = std::make_shared<std::atomic<bool>>(false); // outlives a test that fails early
    shardlab::emu::enqueue(s2, [gate, passed] {
        gate.wait_for(std::chrono::seconds(10));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        *passed = true;
    });
    const float one = 1.0f, zero = 0.0f;
    ASSERT_EQ(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, da.p, CUDA_R_32F, 2,
                           db.p, CUDA_R_32F, 2, &zero, dc.p, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_FALSE(*passed); // the call did not wait for its stream
    // Had the handle ignored its stream, the GEMM would be on the (idle) default stream and done.
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    for (float x : dc.floats()) EXPECT_TRUE(std::isnan(x));
    open.set_value();
    ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
    EXPECT_TRUE(*passed);
    EXPECT_EQ(dc.floats(), kAB);
    EXPECT_EQ(cublasSetStream(handle, nullptr), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaStreamDestroy(s2), cudaSuccess);
}

TEST_F(EmuCublas, PinnedHostOperandsAreReachable) {
    // Under unified addressing a GPU reads pinned host memory directly, so this is legal CUDA.
    float* pinned = nullptr;
    ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&pinned), 4 * sizeof(float), 0), cudaSuccess);
    std::copy(kA.begin(), kA.end(), pinned);
    DeviceBuffer db(kB), dc(std::vector<float>(4, 0.0f));
    const float one = 1.0f, zero = 0.0f;
    ASSERT_EQ(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, pinned, 2,
                          static_cast<float*>(db.p), 2, &zero, static_cast<float*>(dc.p), 2),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    EXPECT_EQ(dc.floats(), kAB);
    EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

// --- faults
// ---------------------------------------------------------------------------------------

// Their own suite, registered last so it runs last: a fault fails the whole device until
// reset_device(), which each test calls (so even a shuffled order starts every test clean).
class EmuCublasFaults : public EmuCublas {};

// The device's sticky error after a faulting GEMM, and its message; then a clean device again.
std::string fault_then_reset() {
    EXPECT_NE(cudaStreamSynchronize(nullptr), cudaSuccess);
    EXPECT_NE(cudaDeviceSynchronize(), cudaSuccess); // sticky: every later call reports it
    const std::string fault = shardlab::emu::last_fault();
    shardlab::emu::reset_device();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return fault;
}

TEST_F(EmuCublasFaults, PageableHostOperandIsAnAsynchronousFault) {
    const std::vector<float> host_a = kA; // pageable: no GPU can read it
    DeviceBuffer db(kB), dc(std::vector<float>(4, 0.0f));
    const float one = 1.0f, zero = 0.0f;
    // As on a GPU, the call itself succeeds; the fault surfaces when the stream gets there.
    EXPECT_EQ(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, host_a.data(), 2,
                          static_cast<float*>(db.p), 2, &zero, static_cast<float*>(dc.p), 2),
              CUBLAS_STATUS_SUCCESS);
    const std::string fault = fault_then_reset();
    EXPECT_NE(fault.find("cuBLAS"), std::string::npos) << fault;
    EXPECT_NE(fault.find(" A "), std::string::npos) << fault;
    EXPECT_NE(fault.find("not device memory"), std::string::npos) << fault;
    EXPECT_EQ(dc.floats(), std::vector<float>(4, 0.0f)); // nothing was computed

    // The device works again.
    DeviceBuffer da(kA);
    ASSERT_EQ(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one,
                          static_cast<float*>(da.p), 2, static_cast<float*>(db.p), 2, &zero,
                          static_cast<float*>(dc.p), 2),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    EXPECT_EQ(dc.floats(), kAB);
}

TEST_F(EmuCublasFaults, OperandRunningPastItsAllocationIsAFault) {
    // C needs 3 x 5 floats at ldc 3; its allocation holds one fewer.
    DeviceBuffer da(std::vector<float>(3 * 2, 1.0f)), db(std::vector<float>(2 * 5, 1.0f)),
        dc(std::vector<float>(3 * 5 - 1, 0.0f));
    const float one = 1.0f, zero = 0.0f;
    EXPECT_EQ(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 3, 5, 2, &one,
                          static_cast<float*>(da.p), 3, static_cast<float*>(db.p), 2, &zero,
                          static_cast<float*>(dc.p), 3),
              CUBLAS_STATUS_SUCCESS);
    const std::string fault = fault_then_reset();
    EXPECT_NE(fault.find("cuBLAS"), std::string::npos) << fault;
    EXPECT_NE(fault.find(" C "), std::string::npos) << fault;
    EXPECT_NE(fault.find("past its allocation"), std::string::npos) << fault;
}

} // namespace
