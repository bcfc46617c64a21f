// The emulator's cuBLASLt stand-in (emu/cublaslt.cpp) against a float64 reference written here:
// each epilogue shardlab uses (BIAS, GELU_AUX_BIAS, DGELU_BGRAD, BGRADA, BGRADB) at odd shapes,
// both transposes, padded leading dimensions, a 50257-row output (GPT-2's vocabulary), fp32 / bf16
// / fp16; and the combinations it must reject (NOT_SUPPORTED from the heuristic, which is how the
// backend learns to fall back) or find invalid.
#include "core/dtype.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using shardlab::DType;

DType dtype_of(cudaDataType_t t) {
    return t == CUDA_R_16BF ? DType::bf16 : t == CUDA_R_16F ? DType::f16 : DType::f32;
}

// Half an ulp of 1: the relative error of rounding to nearest into t.
double unit_roundoff(cudaDataType_t t) {
    return t == CUDA_R_16BF ? 0x1p-8 : t == CUDA_R_16F ? 0x1p-11 : 0x1p-24;
}
// Half fp16's smallest subnormal: the absolute error of rounding a tiny value into fp16.
double tiny(cudaDataType_t t) {
    return t == CUDA_R_16F ? 0x1p-25 : 0.0;
}

double gelu(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double gelu_grad(double x) {
    const double c = std::sqrt(2.0 / M_PI), t = std::tanh(c * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x);
}
// |gelu'| <= 1.13 everywhere (its maximum, near x = 2.4, is 1.129).
constexpr double kMaxGeluGrad = 1.13;
// The fp32 evaluation of GELU or its derivative (a tanh and a dozen roundings): within 32 units of
// fp32 roundoff of its scale (|x| + 1).
double gelu_f32_error(double x) {
    return 32 * 0x1p-24 * (std::abs(x) + 1);
}

// A column-major matrix on the host, its values exact in `type`, and its copy on the device.
struct Matrix {
    int rows, cols, ld;
    cudaDataType_t type;
    std::vector<float> v;
    void* dev = nullptr;

    Matrix(int r, int c, int pad, cudaDataType_t t, std::mt19937& rng, float scale = 1.0f)
        : rows(r), cols(c), ld(r + pad), type(t), v(std::size_t(ld) * c, 0.0f) {
        std::uniform_real_distribution<float> u(-scale, scale);
        for (float& x : v) {
            const float y = u(rng);
            unsigned char b[4];
            shardlab::convert(&y, DType::f32, b, dtype_of(t), 1);
            x = shardlab::load_as_f32(b, dtype_of(t), 0);
        }
        const std::size_t bytes = v.size() * shardlab::dtype_size(dtype_of(t));
        EXPECT_EQ(cudaMalloc(&dev, bytes), cudaSuccess);
        std::vector<unsigned char> host(bytes);
        shardlab::convert(v.data(), DType::f32, host.data(), dtype_of(t), v.size());
        EXPECT_EQ(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    }
    ~Matrix() { cudaFree(dev); }
    Matrix(const Matrix&) = delete;
    Matrix& operator=(const Matrix&) = delete;

    double at(int i, int j) const { return v[std::size_t(j) * ld + i]; }
    std::vector<float> download() const {
        const std::size_t bytes = v.size() * shardlab::dtype_size(dtype_of(type));
        std::vector<unsigned char> host(bytes);
        EXPECT_EQ(cudaMemcpy(host.data(), dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        std::vector<float> f(v.size());
        shardlab::convert(host.data(), dtype_of(type), f.data(), DType::f32, f.size());
        return f;
    }
};

struct Spec {
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    int m = 37, n = 5, k = 19, pad = 0;
    cudaDataType_t type = CUDA_R_32F, bias_type = CUDA_R_32F;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    float alpha = 1.0f, beta = 0.0f;

    std::string describe() const {
        std::ostringstream s;
        s << "epilogue " << epilogue << " op " << ta << tb << " m " << m << " n " << n << " k " << k
          << " pad " << pad << " type " << type << " bias " << bias_type << " alpha " << alpha
          << " beta " << beta;
        return s.str();
    }
};

// Descriptors of one call, destroyed with it.
struct Call {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~Call() {
        cublasLtMatmulPreferenceDestroy(pref);
        cublasLtMatrixLayoutDestroy(c);
        cublasLtMatrixLayoutDestroy(b);
        cublasLtMatrixLayoutDestroy(a);
        cublasLtMatmulDescDestroy(op);
    }
};

template <typename V>
void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, V v) {
    ASSERT_EQ(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(V)), CUBLAS_STATUS_SUCCESS);
}

class EmuCublasLt : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS); }
    void TearDown() override { EXPECT_EQ(cublasLtDestroy(handle), CUBLAS_STATUS_SUCCESS); }

    // Builds the call's descriptors: A stored for op(A) m x k, B for op(B) k x n, C = D m x n.
    void describe(Call& c, const Spec& s, int lda, int ldb, int ldc, void* bias, void* aux,
                  std::int64_t aux_ld) {
        ASSERT_EQ(cublasLtMatmulDescCreate(&c.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                  CUBLAS_STATUS_SUCCESS);
        set(c.op, CUBLASLT_MATMUL_DESC_TRANSA, std::int32_t(s.ta));
        set(c.op, CUBLASLT_MATMUL_DESC_TRANSB, std::int32_t(s.tb));
        set(c.op, CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t(s.epilogue));
        set(c.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
        set(c.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, std::int32_t(s.bias_type));
        set(c.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
        set(c.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux_ld);
        const bool ta = s.ta != CUBLAS_OP_N, tb = s.tb != CUBLAS_OP_N;
        ASSERT_EQ(cublasLtMatrixLayoutCreate(&c.a, s.type, ta ? s.k : s.m, ta ? s.m : s.k, lda),
                  CUBLAS_STATUS_SUCCESS);
        ASSERT_EQ(cublasLtMatrixLayoutCreate(&c.b, s.type, tb ? s.n : s.k, tb ? s.k : s.n, ldb),
                  CUBLAS_STATUS_SUCCESS);
        ASSERT_EQ(cublasLtMatrixLayoutCreate(&c.c, s.type, s.m, s.n, ldc), CUBLAS_STATUS_SUCCESS);
        ASSERT_EQ(cublasLtMatmulPreferenceCreate(&c.pref), CUBLAS_STATUS_SUCCESS);
    }

    cublasStatus_t heuristic(const Call& c, int* found) {
        cublasLtMatmulHeuristicResult_t r{};
        return cublasLtMatmulAlgoGetHeuristic(handle, c.op, c.a, c.b, c.c, c.c, c.pref, 1, &r,
                                              found);
    }

    void check(const Spec& s);

    cublasLtHandle_t handle = nullptr;
};

// One matmul against the float64 reference. Summing k fp32 products errs by at most k u32 sum|ab|;
// alpha, beta C and the bias add a few roundings: the fp32 pre-epilogue value z is within
// (k + 4) u32 (|alpha| sum|ab| + |beta c| + |bias|). GELU moves that by at most 1.13 times, plus
// its own fp32 evaluation; rounding into the output adds u_out of the magnitude (and fp16's tiny).
void EmuCublasLt::check(const Spec& s) {
    SCOPED_TRACE(s.describe());
    std::mt19937 rng(7);
    const bool ta = s.ta != CUBLAS_OP_N, tb = s.tb != CUBLAS_OP_N;
    Matrix a(ta ? s.k : s.m, ta ? s.m : s.k, s.pad, s.type, rng);
    Matrix b(tb ? s.n : s.k, tb ? s.k : s.n, s.pad, s.type, rng);
    Matrix c(s.m, s.n, s.pad, s.type, rng);
    const bool bgrad_b = s.epilogue == CUBLASLT_EPILOGUE_BGRADB;
    Matrix bias(bgrad_b ? s.n : s.m, 1, 0, s.bias_type, rng);
    const int aux_ld = (s.m + 7) / 8 * 8 + (s.pad ? 8 : 0);
    Matrix aux(aux_ld, s.n, 0, s.type, rng, 3.0f); // DGELU_BGRAD's input: GELU's full curve
    Call call;
    describe(call, s, a.ld, b.ld, c.ld, bias.dev, aux.dev, aux_ld);
    int found = 0;
    ASSERT_EQ(heuristic(call, &found), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(found, 1);
    ASSERT_EQ(cublasLtMatmul(handle, call.op, &s.alpha, a.dev, call.a, b.dev, call.b, &s.beta,
                             c.dev, call.c, c.dev, call.c, nullptr, nullptr, 0, nullptr),
              CUBLAS_STATUS_SUCCESS);
    const std::vector<float> d = c.download(), got_bias = bias.download(), got_aux = aux.download();
    const double u = unit_roundoff(s.type), u32 = 0x1p-24;
    // DGELU_BGRAD's bias gradient sums the fp32 values of D: their errors add up.
    std::vector<double> bias_sum(std::size_t(s.m)), bias_mag(std::size_t(s.m)),
        bias_err(std::size_t(s.m));
    for (int j = 0; j < s.n; ++j)
        for (int i = 0; i < s.m; ++i) {
            double sum = 0, mag = 0;
            for (int l = 0; l < s.k; ++l) {
                const double x = ta ? a.at(l, i) : a.at(i, l), y = tb ? b.at(j, l) : b.at(l, j);
                sum += x * y;
                mag += std::abs(x * y);
            }
            const double old = s.beta != 0.0f ? s.beta * c.at(i, j) : 0.0;
            const bool add_bias = s.epilogue == CUBLASLT_EPILOGUE_BIAS ||
                                  s.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
            const double bv = add_bias ? bias.at(i, 0) : 0.0;
            const double z = s.alpha * sum + old + bv;
            // BIAS into a 16-bit D rounds alpha p + beta c to D's type before the bias add.
            const double product_rounding =
                s.epilogue == CUBLASLT_EPILOGUE_BIAS && s.type != CUDA_R_32F
                    ? u * std::abs(s.alpha * sum + old) + tiny(s.type)
                    : 0.0;
            const double z_err =
                (s.k + 4) * u32 * (std::abs(s.alpha) * mag + std::abs(old) + std::abs(bv)) +
                product_rounding;
            double want = z, err = z_err;
            if (s.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
                const double aux_got = got_aux[std::size_t(j) * aux_ld + i];
                EXPECT_NEAR(aux_got, z, z_err + u * std::abs(z) + tiny(s.type))
                    << "aux at " << i << "," << j;
                want = gelu(z), err = kMaxGeluGrad * z_err + gelu_f32_error(z);
            } else if (s.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
                const double x = aux.at(i, j);
                want = z * gelu_grad(x);
                err = kMaxGeluGrad * z_err + gelu_f32_error(x) * std::abs(z);
                bias_sum[i] += want, bias_mag[i] += std::abs(want) + err, bias_err[i] += err;
            }
            EXPECT_NEAR(d[std::size_t(j) * c.ld + i], want, err + u * std::abs(want) + tiny(s.type))
                << "D at " << i << "," << j;
        }
    // Bias gradients: fp32 sums in some order, within count u32 of the summed magnitudes, then
    // one rounding into the bias type.
    const double ub = unit_roundoff(s.bias_type);
    if (s.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
        for (int i = 0; i < s.m; ++i) {
            EXPECT_NEAR(got_bias[i], bias_sum[i],
                        bias_err[i] + (s.n + 1) * u32 * bias_mag[i] + ub * std::abs(bias_sum[i]) +
                            tiny(s.bias_type))
                << "bias gradient " << i;
        }
    }
    if (s.epilogue == CUBLASLT_EPILOGUE_BGRADA || bgrad_b) {
        const int len = bgrad_b ? s.n : s.m;
        for (int v = 0; v < len; ++v) {
            double sum = 0, mag = 0;
            for (int l = 0; l < s.k; ++l) { // op(A)[v, l] or op(B)[l, v]
                const double x =
                    bgrad_b ? (tb ? b.at(v, l) : b.at(l, v)) : (ta ? a.at(l, v) : a.at(v, l));
                sum += x, mag += std::abs(x);
            }
            EXPECT_NEAR(got_bias[v], sum, s.k * u32 * mag + ub * std::abs(sum) + tiny(s.bias_type))
                << "bias gradient " << v;
        }
    }
}

const cublasOperation_t kOps[] = {CUBLAS_OP_N, CUBLAS_OP_T};
const cudaDataType_t kTypes[] = {CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F};

TEST_F(EmuCublasLt, EveryEpilogueTransposeAndType) {
    for (cublasLtEpilogue_t e :
         {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU_BGRAD,
          CUBLASLT_EPILOGUE_BGRADA, CUBLASLT_EPILOGUE_BGRADB})
        for (cublasOperation_t ta : kOps)
            for (cublasOperation_t tb : kOps)
                for (cudaDataType_t t : kTypes) {
                    if (e == CUBLASLT_EPILOGUE_BGRADA && ta == CUBLAS_OP_T && tb == CUBLAS_OP_T)
                        continue; // no algorithm (UnsupportedCombinationsHaveNoAlgorithm)
                    Spec s;
                    s.epilogue = e, s.ta = ta, s.tb = tb, s.type = t, s.bias_type = t;
                    check(s);
                }
}

TEST_F(EmuCublasLt, PaddedLeadingDimensionsAlphaAndBeta) {
    for (cublasLtEpilogue_t e :
         {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_DGELU_BGRAD, CUBLASLT_EPILOGUE_BGRADA})
        for (float beta : {0.0f, 1.0f}) {
            Spec s;
            s.epilogue = e, s.pad = 3, s.alpha = -0.5f, s.beta = beta, s.m = 13, s.n = 11;
            s.type = s.bias_type = CUDA_R_16BF;
            check(s);
        }
}

// GPT-2's vocabulary as the output's rows (the head GEMM's shape, swapped as the backend does).
TEST_F(EmuCublasLt, VocabularySizedOddRows) {
    for (cudaDataType_t t : kTypes) {
        Spec s;
        s.m = 50257, s.n = 3, s.k = 8, s.type = t, s.bias_type = t, s.ta = CUBLAS_OP_T;
        check(s);
        s.epilogue = CUBLASLT_EPILOGUE_BGRADA, s.ta = CUBLAS_OP_N;
        check(s);
    }
}

// --- what it rejects ----------------------------------------------------------------------------

TEST_F(EmuCublasLt, UnsupportedCombinationsHaveNoAlgorithm) {
    std::mt19937 rng(1);
    Matrix buf(64, 64, 0, CUDA_R_32F, rng);
    struct Case {
        const char* what;
        cublasLtEpilogue_t epilogue;
        cudaDataType_t type, bias_type;
        std::int64_t aux_ld;
    };
    const Case cases[] = {
        {"RELU is not emulated", CUBLASLT_EPILOGUE_RELU_BIAS, CUDA_R_32F, CUDA_R_32F, 8},
        {"GELU without aux", CUBLASLT_EPILOGUE_GELU_BIAS, CUDA_R_16BF, CUDA_R_16BF, 8},
        {"aux ld not a multiple of 8", CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUDA_R_32F, CUDA_R_32F, 9},
        {"aux ld below D's rows", CUBLASLT_EPILOGUE_DGELU_BGRAD, CUDA_R_32F, CUDA_R_32F, 0},
        {"an fp16 bias on bf16", CUBLASLT_EPILOGUE_BIAS, CUDA_R_16BF, CUDA_R_16F, 8},
        {"BGRADA with both transposed", CUBLASLT_EPILOGUE_BGRADA, CUDA_R_32F, CUDA_R_32F, 8},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(k.what);
        Spec s;
        s.m = 5, s.n = 4, s.k = 3, s.epilogue = k.epilogue, s.type = k.type;
        s.bias_type = k.bias_type;
        if (k.epilogue == CUBLASLT_EPILOGUE_BGRADA) s.ta = s.tb = CUBLAS_OP_T;
        Call c;
        describe(c, s, 5, 3, 5, buf.dev, buf.dev, k.aux_ld);
        int found = 7;
        EXPECT_EQ(heuristic(c, &found), CUBLAS_STATUS_NOT_SUPPORTED);
        EXPECT_EQ(found, 0);
        const float one = 1, zero = 0;
        EXPECT_EQ(cublasLtMatmul(handle, c.op, &one, buf.dev, c.a, buf.dev, c.b, &zero, buf.dev,
                                 c.c, buf.dev, c.c, nullptr, nullptr, 0, nullptr),
                  CUBLAS_STATUS_NOT_SUPPORTED);
    }
}

TEST_F(EmuCublasLt, OtherComputeTypesAndMixedOperandsAreNotSupported) {
    Call c;
    ASSERT_EQ(cublasLtMatmulDescCreate(&c.op, CUBLAS_COMPUTE_16F, CUDA_R_16F),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&c.a, CUDA_R_16F, 4, 4, 4), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&c.b, CUDA_R_16BF, 4, 4, 4), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&c.c, CUDA_R_16F, 4, 4, 4), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatmulPreferenceCreate(&c.pref), CUBLAS_STATUS_SUCCESS);
    int found = 0;
    EXPECT_EQ(heuristic(c, &found), CUBLAS_STATUS_NOT_SUPPORTED); // 16F compute
    cublasComputeType_t f32 = CUBLAS_COMPUTE_32F;
    cudaDataType_t scale = CUDA_R_32F;
    set(c.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, f32);
    set(c.op, CUBLASLT_MATMUL_DESC_SCALE_TYPE, scale);
    EXPECT_EQ(heuristic(c, &found), CUBLAS_STATUS_NOT_SUPPORTED); // fp16 A with bf16 B
}

// The workspace an algorithm asks for is handed over or the call is refused: the heuristic's
// answer follows the preference's maximum (the emulator's one algorithm asks for 1 MiB when
// offered that much or more, as split-K algorithms do on a GPU), cublasLtMatmul refuses less than
// that, and a workspace that is not device memory is the device's fault when the stream gets there.
TEST_F(EmuCublasLt, AnAlgorithmGetsTheWorkspaceItAskedFor) {
    std::mt19937 rng(3);
    Spec s;
    Matrix a(s.m, s.k, 0, s.type, rng), b(s.k, s.n, 0, s.type, rng), c(s.m, s.n, 0, s.type, rng),
        bias(s.m, 1, 0, s.type, rng);
    Call call;
    describe(call, s, a.ld, b.ld, c.ld, bias.dev, nullptr, 0);
    auto offer = [&](std::uint64_t bytes) {
        EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(
                      call.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof(bytes)),
                  CUBLAS_STATUS_SUCCESS);
        cublasLtMatmulHeuristicResult_t r{};
        int found = 0;
        EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, call.op, call.a, call.b, call.c, call.c,
                                                 call.pref, 1, &r, &found),
                  CUBLAS_STATUS_SUCCESS);
        EXPECT_EQ(found, 1);
        return r;
    };
    auto matmul = [&](const cublasLtMatmulHeuristicResult_t& r, void* ws, std::size_t bytes) {
        return cublasLtMatmul(handle, call.op, &s.alpha, a.dev, call.a, b.dev, call.b, &s.beta,
                              c.dev, call.c, c.dev, call.c, &r.algo, ws, bytes, nullptr);
    };
    const cublasLtMatmulHeuristicResult_t none = offer(0), some = offer(32 << 20);
    EXPECT_EQ(none.workspaceSize, 0u);
    EXPECT_EQ(some.workspaceSize, std::size_t(1) << 20);
    EXPECT_EQ(matmul(none, nullptr, 0), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(matmul(some, nullptr, 0), CUBLAS_STATUS_INVALID_VALUE);
    void* ws = nullptr;
    ASSERT_EQ(cudaMalloc(&ws, some.workspaceSize), cudaSuccess);
    EXPECT_EQ(matmul(some, ws, some.workspaceSize - 1), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(matmul(some, ws, some.workspaceSize), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(ws);
    std::vector<char> host(some.workspaceSize); // host memory: a GPU cannot reach it
    EXPECT_EQ(matmul(some, host.data(), host.size()), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
    EXPECT_NE(std::string(shardlab::emu::last_fault()).find("its workspace"), std::string::npos)
        << shardlab::emu::last_fault();
    shardlab::emu::reset_device(); // the fault is sticky: the device afresh for the next test
}

// As cuBLASLt 13.1 answered on an H200: a bias (or bias gradient) vector beside a 16-bit D must
// have D's type; fp32 is an invalid value there, not an unsupported combination.
TEST_F(EmuCublasLt, AnFp32BiasBesideA16BitOutputIsInvalid) {
    std::mt19937 rng(3);
    Matrix buf(64, 64, 0, CUDA_R_32F, rng);
    for (cublasLtEpilogue_t e :
         {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU_BGRAD,
          CUBLASLT_EPILOGUE_BGRADA, CUBLASLT_EPILOGUE_BGRADB})
        for (cudaDataType_t t : kTypes) {
            SCOPED_TRACE(testing::Message() << "epilogue " << e << " type " << t);
            Spec s;
            s.m = 5, s.n = 4, s.k = 3, s.epilogue = e, s.type = t, s.bias_type = CUDA_R_32F;
            Call c;
            describe(c, s, 5, 3, 5, buf.dev, buf.dev, 8);
            int found = 7;
            EXPECT_EQ(heuristic(c, &found),
                      t == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE);
            EXPECT_EQ(found, t == CUDA_R_32F ? 1 : 0);
        }
}

TEST_F(EmuCublasLt, ShapesThatDoNotChainOrAMissingBiasAreInvalid) {
    std::mt19937 rng(2);
    Matrix buf(64, 8, 0, CUDA_R_32F, rng);
    Spec s;
    s.m = 5, s.n = 4, s.k = 3;
    {
        Call c;
        describe(c, s, 5, 3, 5, nullptr, nullptr, 0); // BIAS without a bias pointer
        int found = 0;
        EXPECT_EQ(heuristic(c, &found), CUBLAS_STATUS_INVALID_VALUE);
    }
    {
        Call c;
        describe(c, s, 5, 3, 5, buf.dev, nullptr, 0);
        cublasLtMatrixLayoutDestroy(c.b);
        ASSERT_EQ(cublasLtMatrixLayoutCreate(&c.b, CUDA_R_32F, 2, 4, 2), CUBLAS_STATUS_SUCCESS);
        int found = 0; // op(B) is 2 x 4 where k = 3
        EXPECT_EQ(heuristic(c, &found), CUBLAS_STATUS_INVALID_VALUE);
    }
}

} // namespace
