// The SIMT emulator's own tests (built with -DSHARDLAB_CUDA=EMU): what CUDA guarantees, kernels
// rely on, and the emulator must reproduce — shared memory private to each block, barriers that
// order it, warp shuffles and votes with CUDA's lane arithmetic, atomics that are atomic across
// blocks running at once, launch limits, stream order — and what CUDA leaves undefined and the
// emulator reports instead: divergent barriers, threads that exit before a barrier, deadlocks,
// misaligned vector loads, cp.async copies never waited for. And its WMMA (emu/include/mma.h):
// products against float64, both layouts, pitches other than 16, CUDA's alignment and ldm rules,
// warp-collective calls; and PTX's mma.m16n8k16 as model/kernels/cuda/mma_m16n8k16.h emulates it,
// in the PTX ISA's layout.
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_stream.h"
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/device_context.h"
#include "core/error.h"
#include "model/kernels/cuda/cp_async.h"
#include "model/kernels/cuda/mma_m16n8k16.h"

#include <gtest/gtest.h>
#include <mma.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace shardlab;

#if defined(__SANITIZE_THREAD__)
// A race report ends the process with 66 at once (SimtRaceDetector's children rely on it).
extern "C" const char* __tsan_default_options() {
    return "halt_on_error=1 exitcode=66";
}
#endif

namespace {

// Device memory holding n values of T, copied back to the host on demand.
template <typename T>
struct DeviceArray {
    explicit DeviceArray(std::size_t n, T init = T{}) : DeviceArray(std::vector<T>(n, init)) {}
    explicit DeviceArray(const std::vector<T>& h) : n(h.size()) {
        cuda::check_cuda(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T)), "cudaMalloc");
        cuda::check_cuda(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), "copy");
    }
    ~DeviceArray() { cudaFree(p); }
    std::vector<T> host() const {
        std::vector<T> h(n);
        cuda::check_cuda(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "copy");
        return h;
    }
    std::size_t n;
    T* p = nullptr;
};

// A fixed pseudo-random sequence in [-2, 2): the tensor-core tests' operands.
struct Uniform2 {
    std::uint32_t state;
    float operator()() {
        state = state * 1664525u + 1013904223u;
        return float(state >> 8) / float(1u << 24) * 4.0f - 2.0f;
    }
};

// A fault is sticky: the test that provokes one checks it, then starts the device afresh.
// Launches a kernel that faults. Its fault may already be the device's sticky error when the launch
// is checked (it can run at once), so unlike cuda::launch this does not check the launch.
template <typename... KArgs, typename... Args>
void launch_faulting(const char* name, void (*kernel)(KArgs...), dim3 grid, dim3 block,
                     std::size_t smem, cudaStream_t stream, Args&&... args) {
    emu::launch(name, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

std::string expect_fault(cudaError_t expected) {
    const cudaError_t e = cudaDeviceSynchronize();
    EXPECT_EQ(e, expected) << cudaGetErrorName(e);
    EXPECT_EQ(cudaGetLastError(), expected) << "a fault stays until the device is reset";
    std::string what = emu::last_fault();
    emu::reset_device();
    return what;
}

// --- shared memory and barriers ---------------------------------------------------------------

__global__ void reverse_in_block(int* out, const int* in) {
    __shared__ int tile[256];
    const unsigned t = threadIdx.x, base = blockIdx.x * blockDim.x;
    tile[t] = in[base + t];
    __syncthreads(); // every write lands before any read
    out[base + t] = tile[blockDim.x - 1 - t];
}

TEST(Simt, SharedMemoryIsPrivateToEachBlockAndOrderedByBarriers) {
    const unsigned blocks = 64, threads = 256;
    std::vector<int> in(blocks * threads);
    std::iota(in.begin(), in.end(), 0);
    const DeviceArray<int> din(in);
    DeviceArray<int> dout(in.size(), -1);
    cuda::launch("reverse_in_block", reverse_in_block, blocks, threads, 0, nullptr, dout.p,
                 static_cast<const int*>(din.p));
    const std::vector<int> out = dout.host();
    for (unsigned b = 0; b < blocks; ++b)
        for (unsigned t = 0; t < threads; ++t)
            ASSERT_EQ(out[b * threads + t], int(b * threads + threads - 1 - t))
                << "block " << b << " thread " << t;
}

__global__ void dynamic_shared_sum(int* out, int n_per_thread) {
    SHARDLAB_DYNAMIC_SHARED(int, buf);
    const unsigned t = threadIdx.x;
    for (int i = 0; i < n_per_thread; ++i) buf[t * n_per_thread + i] = int(blockIdx.x);
    __syncthreads();
    if (t == 0) {
        int s = 0;
        for (unsigned i = 0; i < blockDim.x * unsigned(n_per_thread); ++i) s += buf[i];
        out[blockIdx.x] = s;
    }
}

TEST(Simt, DynamicSharedMemoryIsPerBlockAndItsLimitNeedsTheAttribute) {
    const int per_thread = 128, threads = 128; // 64 KiB: over the 48 KiB default
    const std::size_t bytes = std::size_t(per_thread) * threads * sizeof(int);
    DeviceArray<int> out(32, -1);
    try {
        cuda::launch("dynamic_shared_sum", dynamic_shared_sum, 32, threads, bytes, nullptr, out.p,
                     per_thread);
        FAIL() << "64 KiB of dynamic shared memory launched without the attribute";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("dynamic_shared_sum"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("cudaFuncSetAttribute"), std::string::npos)
            << e.what();
    }
    ASSERT_EQ(cudaFuncSetAttribute(reinterpret_cast<const void*>(dynamic_shared_sum),
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
              cudaSuccess);
    cuda::launch("dynamic_shared_sum", dynamic_shared_sum, 32, threads, bytes, nullptr, out.p,
                 per_thread);
    const std::vector<int> got = out.host();
    for (int b = 0; b < 32; ++b) EXPECT_EQ(got[b], b * per_thread * threads);
}

__global__ void write_coordinates(int* out) {
    const unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    out[bx * threads + tx] = int(bx * 1000 + tx);
}

TEST(Simt, ThreeDimensionalGridsAndBlocksCoverEveryThreadOnce) {
    const dim3 grid(3, 2, 2), block(4, 3, 2);
    DeviceArray<int> out(12 * 24, -1);
    cuda::launch("write_coordinates", write_coordinates, grid, block, 0, nullptr, out.p);
    const std::vector<int> got = out.host();
    for (int b = 0; b < 12; ++b)
        for (int t = 0; t < 24; ++t) ASSERT_EQ(got[b * 24 + t], b * 1000 + t);
}

// --- warp shuffles and votes ------------------------------------------------------------------

__global__ void shuffles(int* out, int width) {
    const int lane = int(threadIdx.x % 32);
    const int v = lane * 10;
    int* o = out + threadIdx.x * 5;
    o[0] = __shfl_sync(0xffffffffu, v, 3, width);
    o[1] = __shfl_up_sync(0xffffffffu, v, 2, width);
    o[2] = __shfl_down_sync(0xffffffffu, v, 3, width);
    o[3] = __shfl_xor_sync(0xffffffffu, v, 5, width);
    int s = lane;
    for (int m = width / 2; m > 0; m /= 2) s += __shfl_xor_sync(0xffffffffu, s, m, width);
    o[4] = s;
}

TEST(Simt, ShufflesFollowCudasLaneArithmeticForEveryWidth) {
    for (int width : {32, 16, 8}) {
        DeviceArray<int> out(64 * 5, -1);
        cuda::launch("shuffles", shuffles, 1, 64, 0, nullptr, out.p, width);
        const std::vector<int> got = out.host();
        for (int t = 0; t < 64; ++t) {
            const int lane = t % 32, base = lane - lane % width, in_group = lane % width;
            const int* o = &got[std::size_t(t) * 5];
            EXPECT_EQ(o[0], (base + 3 % width) * 10) << "width " << width << " lane " << lane;
            EXPECT_EQ(o[1], (in_group >= 2 ? lane - 2 : lane) * 10);
            EXPECT_EQ(o[2], (in_group + 3 < width ? lane + 3 : lane) * 10);
            EXPECT_EQ(o[3], (((lane ^ 5) < base + width) ? lane ^ 5 : lane) * 10);
            EXPECT_EQ(o[4], width * base + width * (width - 1) / 2); // the group's lane sum
        }
    }
}

__global__ void votes(unsigned* out) {
    const int lane = int(threadIdx.x % 32);
    out[threadIdx.x * 4 + 0] = __ballot_sync(0xffffffffu, lane % 3 == 0);
    out[threadIdx.x * 4 + 1] = unsigned(__any_sync(0xffffffffu, lane == 17));
    out[threadIdx.x * 4 + 2] = unsigned(__all_sync(0xffffffffu, lane < 31));
    out[threadIdx.x * 4 + 3] = unsigned(__all_sync(0xffffffffu, lane < 32));
}

TEST(Simt, VotesSeeEveryLanesPredicate) {
    DeviceArray<unsigned> out(32 * 4);
    cuda::launch("votes", votes, 1, 32, 0, nullptr, out.p);
    const std::vector<unsigned> got = out.host();
    unsigned every_third = 0;
    for (int l = 0; l < 32; l += 3) every_third |= 1u << l;
    for (int t = 0; t < 32; ++t) {
        EXPECT_EQ(got[t * 4 + 0], every_third);
        EXPECT_EQ(got[t * 4 + 1], 1u);
        EXPECT_EQ(got[t * 4 + 2], 0u);
        EXPECT_EQ(got[t * 4 + 3], 1u);
    }
}

__global__ void half_warp_shuffle(int* out) {
    const int lane = int(threadIdx.x % 32);
    if (lane < 16) out[lane] = __shfl_sync(0x0000ffffu, lane + 100, 15 - lane);
    __syncwarp();
}

TEST(Simt, AShuffleAmongPartOfAWarpWaitsOnlyForItsMask) {
    DeviceArray<int> out(16, -1);
    cuda::launch("half_warp_shuffle", half_warp_shuffle, 1, 32, 0, nullptr, out.p);
    const std::vector<int> got = out.host();
    for (int l = 0; l < 16; ++l) EXPECT_EQ(got[l], 115 - l);
}

// --- WMMA (emu/include/mma.h) --------------------------------------------------------------------

namespace wmma = nvcuda::wmma;

// D = 0.5 (A B + C), one warp: A and B 16-bit in the given layouts with pitches lda, ldb; C loaded
// row-major with pitch ldc; D stored column-major with pitch ldd. The halving scales every element
// of the accumulator alike through num_elements and x[], which a fragment's layout must allow.
template <typename T, typename LayoutA, typename LayoutB>
__global__ void wmma_product(float* d, const T* a, const T* b, const float* c, unsigned lda,
                             unsigned ldb, unsigned ldc, unsigned ldd) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, LayoutA> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LayoutB> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, ldb);
    wmma::load_matrix_sync(acc, c, ldc, wmma::mem_row_major);
    wmma::mma_sync(acc, fa, fb, acc);
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] *= 0.5f;
    wmma::store_matrix_sync(d, acc, ldd, wmma::mem_col_major);
}

// Element (r, c) of a 16 x 16 matrix stored with pitch ld in the layout L.
template <typename L>
std::size_t at(int r, int c, unsigned ld) {
    return std::is_same_v<L, wmma::row_major> ? std::size_t(r) * ld + c : std::size_t(c) * ld + r;
}

template <typename T, typename LayoutA, typename LayoutB>
void check_wmma_product(DType dt) {
    SCOPED_TRACE(testing::Message()
                 << dtype_name(dt) << " A "
                 << (std::is_same_v<LayoutA, wmma::row_major> ? "row" : "col") << " B "
                 << (std::is_same_v<LayoutB, wmma::row_major> ? "row" : "col"));
    const unsigned lda = 24, ldb = 40, ldc = 20, ldd = 36; // none 16; multiples of 16 bytes
    std::vector<T> a(16 * lda), b(16 * ldb);
    std::vector<float> c(16 * ldc), d_init(16 * ldd, NAN);
    double A[16][16], B[16][16], Cm[16][16];
    Uniform2 next{12345u};
    for (int r = 0; r < 16; ++r)
        for (int k = 0; k < 16; ++k) {
            a[at<LayoutA>(r, k, lda)] = cuda::from_f32<T>(next());
            A[r][k] = cuda::to_f32(a[at<LayoutA>(r, k, lda)]);     // the value as stored
            b[at<LayoutB>(r, k, ldb)] = cuda::from_f32<T>(next()); // B(r = k-index, k = column)
            B[r][k] = cuda::to_f32(b[at<LayoutB>(r, k, ldb)]);
            c[std::size_t(r) * ldc + k] = next();
            Cm[r][k] = c[std::size_t(r) * ldc + k];
        }
    const DeviceArray<T> da(a), db(b);
    const DeviceArray<float> dc(c);
    DeviceArray<float> dd(d_init.size(), NAN);
    cuda::launch("wmma_product", wmma_product<T, LayoutA, LayoutB>, 1, 32, 0, nullptr, dd.p,
                 static_cast<const T*>(da.p), static_cast<const T*>(db.p),
                 static_cast<const float*>(dc.p), lda, ldb, ldc, ldd);
    const std::vector<float> got = dd.host();
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            double want = Cm[i][j], mag = std::fabs(Cm[i][j]);
            for (int k = 0; k < 16; ++k) {
                want += A[i][k] * B[k][j];
                mag += std::fabs(A[i][k] * B[k][j]);
            }
            // 16-bit products are exact in fp32; 16 fp32 additions round, each by at most
            // 2^-24 of a partial sum bounded by mag; the halving is exact.
            const double bound = 16 * 0x1p-24 * mag / 2;
            EXPECT_LE(std::fabs(double(got[std::size_t(j) * ldd + i]) - want / 2), bound)
                << "D(" << i << ", " << j << ")";
        }
    for (unsigned col = 0; col < 16; ++col) // the pitch's padding is not written
        for (unsigned r = 16; r < ldd; ++r) EXPECT_TRUE(std::isnan(got[col * ldd + r]));
}

TEST(Simt, WmmaMultipliesAsAFloat64ReferenceInEveryLayout) {
    check_wmma_product<__nv_bfloat16, wmma::row_major, wmma::row_major>(DType::bf16);
    check_wmma_product<__nv_bfloat16, wmma::row_major, wmma::col_major>(DType::bf16);
    check_wmma_product<__nv_bfloat16, wmma::col_major, wmma::row_major>(DType::bf16);
    check_wmma_product<__nv_bfloat16, wmma::col_major, wmma::col_major>(DType::bf16);
    check_wmma_product<__half, wmma::row_major, wmma::col_major>(DType::f16);
    check_wmma_product<__half, wmma::col_major, wmma::row_major>(DType::f16);
}

// A 16-bit matrix at `offset` elements from an aligned base, with pitch ldm.
__global__ void wmma_load(const __nv_bfloat16* m, unsigned offset, unsigned ldm) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, m + offset, ldm);
}

TEST(Simt, WmmaPointersAndPitchesFollowCudasRules) {
    DeviceArray<__nv_bfloat16> m(64 * 16);
    cuda::launch("wmma_load", wmma_load, 1, 32, 0, nullptr, static_cast<const __nv_bfloat16*>(m.p),
                 16u, 24u); // 32 bytes in, pitch 48 bytes: fine
    cuda::check_cuda(cudaDeviceSynchronize(), "wmma_load");
    launch_faulting("wmma_load", wmma_load, 1, 32, 0, nullptr,
                    static_cast<const __nv_bfloat16*>(m.p), 8u, 24u); // 16 bytes in
    std::string what = expect_fault(cudaErrorMisalignedAddress);
    EXPECT_NE(what.find("wmma::load_matrix_sync at"), std::string::npos) << what;
    EXPECT_NE(what.find("needs 32-byte alignment"), std::string::npos) << what;
    launch_faulting("wmma_load", wmma_load, 1, 32, 0, nullptr,
                    static_cast<const __nv_bfloat16*>(m.p), 0u, 20u); // pitch 40 bytes
    what = expect_fault(cudaErrorLaunchFailure);
    EXPECT_NE(what.find("ldm 20 is not a multiple of 16 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("kernel wmma_load"), std::string::npos) << what;
}

// Lane 31 leaves before the warp-collective load: the others wait for it in vain.
__global__ void wmma_with_exited_lane(const __nv_bfloat16* m) {
    if (threadIdx.x == 31) return;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
    wmma::load_matrix_sync(fb, m, 16);
}

TEST(Simt, AWmmaCallWithALaneMissingIsReported) {
    DeviceArray<__nv_bfloat16> m(16 * 16);
    launch_faulting("wmma_with_exited_lane", wmma_with_exited_lane, 1, 32, 0, nullptr,
                    static_cast<const __nv_bfloat16*>(m.p));
    const std::string what = expect_fault(cudaErrorLaunchFailure);
    EXPECT_NE(what.find("lane 31 of the mask 0xffffffff exited"), std::string::npos) << what;
}

// --- PTX mma.m16n8k16 (model/kernels/cuda/mma_m16n8k16.h) ---------------------------------------

// Where the PTX ISA's fragment tables ("Matrix Fragments for mma.m16n8k16 with floating point
// type") put element i of a lane's operand, written as the tables write them — independently of
// the header's register-wise helpers. g = lane / 4 (groupID), t = lane % 4 (threadID_in_group).
struct PtxAt {
    int row, col;
};
__device__ PtxAt ptx_a(int lane, int i) { // a0..a7: 16 x 16
    const int g = lane / 4, t = lane % 4;
    return {(i < 2 || (i >= 4 && i < 6)) ? g : g + 8, t * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
__device__ PtxAt ptx_b(int lane, int i) { // b0..b3: 16 x 8
    const int g = lane / 4, t = lane % 4;
    return {t * 2 + (i & 1) + (i >= 2 ? 8 : 0), g};
}
__device__ PtxAt ptx_c(int lane, int i) { // c0..c3, d0..d3: 16 x 8
    const int g = lane / 4, t = lane % 4;
    return {i < 2 ? g : g + 8, t * 2 + (i & 1)};
}

// D = A B + C twice, one warp: d_table from operands placed by the PTX tables (A row-major 16 x 16,
// B row-major 16 x 8, C row-major 16 x 8, all pitch 24), d_helpers from the header's loaders (A by
// load_a, B by load_b_cols from the same B, and by load_b_rows from bt = B^T, 8 x 16). a_regs gets
// the A registers a_from makes of two accumulators holding A's columns 0..7 and 8..15, next to
// the table's (32 lanes x 4, then 32 x 4).
template <typename T>
__global__ void ptx_mma_product(float* d_table, float* d_helpers, float* d_rows,
                                std::uint32_t* a_regs, const T* a, const T* b, const T* bt,
                                const float* c) {
    using namespace shardlab::cuda;
    constexpr int ld = 24;
    const int lane = int(threadIdx.x);
    T e[8];
    MmaA fa;
    for (int i = 0; i < 8; ++i) e[i] = a[ptx_a(lane, i).row * ld + ptx_a(lane, i).col];
    for (int j = 0; j < 4; ++j) fa.r[j] = pack2<T>(e[2 * j], e[2 * j + 1]);
    MmaB fb;
    for (int i = 0; i < 4; ++i) e[i] = b[ptx_b(lane, i).row * ld + ptx_b(lane, i).col];
    for (int j = 0; j < 2; ++j) fb.r[j] = pack2<T>(e[2 * j], e[2 * j + 1]);
    MmaD acc, acc2, acc3, lo, hi;
    for (int i = 0; i < 4; ++i) {
        const PtxAt at = ptx_c(lane, i);
        acc.x[i] = acc2.x[i] = acc3.x[i] = c[at.row * ld + at.col];
        lo.x[i] = to_f32(a[at.row * ld + at.col]); // A's columns 0..7 as an accumulator
        hi.x[i] = to_f32(a[at.row * ld + at.col + 8]);
    }
    mma<T>(acc, fa, fb);
    mma<T>(acc2, load_a(a, ld), load_b_cols(b, ld));
    mma<T>(acc3, load_a(a, ld), load_b_rows(bt, ld));
    for (int i = 0; i < 4; ++i) {
        const PtxAt at = ptx_c(lane, i);
        d_table[at.row * 8 + at.col] = acc.x[i];
        d_helpers[at.row * 8 + at.col] = acc2.x[i];
        d_rows[at.row * 8 + at.col] = acc3.x[i];
    }
    const MmaA made = a_from<T>(lo, hi);
    for (int j = 0; j < 4; ++j) {
        a_regs[lane * 4 + j] = made.r[j];
        a_regs[128 + lane * 4 + j] = fa.r[j];
    }
}

template <typename T>
void check_ptx_mma(DType dt) {
    SCOPED_TRACE(dtype_name(dt));
    constexpr int ld = 24;
    std::vector<T> a(16 * ld), b(16 * ld), bt(8 * ld);
    std::vector<float> c(16 * ld);
    double A[16][16], B[16][8], Cm[16][8];
    Uniform2 next{777u};
    for (int r = 0; r < 16; ++r)
        for (int k = 0; k < 16; ++k) {
            a[r * ld + k] = cuda::from_f32<T>(next());
            A[r][k] = cuda::to_f32(a[r * ld + k]);
        }
    for (int k = 0; k < 16; ++k)
        for (int n = 0; n < 8; ++n) {
            b[k * ld + n] = bt[n * ld + k] = cuda::from_f32<T>(next());
            B[k][n] = cuda::to_f32(b[k * ld + n]);
        }
    for (int r = 0; r < 16; ++r)
        for (int n = 0; n < 8; ++n) Cm[r][n] = c[r * ld + n] = next();
    const DeviceArray<T> da(a), db(b), dbt(bt);
    const DeviceArray<float> dc(c);
    DeviceArray<float> d1(128, NAN), d2(128, NAN), d3(128, NAN);
    DeviceArray<std::uint32_t> regs(256);
    cuda::launch("ptx_mma_product", ptx_mma_product<T>, 1, 32, 0, nullptr, d1.p, d2.p, d3.p, regs.p,
                 static_cast<const T*>(da.p), static_cast<const T*>(db.p),
                 static_cast<const T*>(dbt.p), static_cast<const float*>(dc.p));
    const std::vector<float> table = d1.host(), helpers = d2.host(), rows = d3.host();
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
            double want = Cm[i][j], mag = std::fabs(Cm[i][j]);
            for (int k = 0; k < 16; ++k) {
                want += A[i][k] * B[k][j];
                mag += std::fabs(A[i][k] * B[k][j]);
            }
            // 16-bit products are exact in fp32; 16 fp32 additions round, each by at most 2^-24
            // of a partial sum bounded by mag.
            EXPECT_LE(std::fabs(double(table[i * 8 + j]) - want), 16 * 0x1p-24 * mag)
                << "D(" << i << ", " << j << ")";
            // The helpers load the same operands: the same product, bit for bit.
            EXPECT_EQ(helpers[i * 8 + j], table[i * 8 + j])
                << "load_a/load_b_cols D(" << i << ", " << j << ")";
            EXPECT_EQ(rows[i * 8 + j], table[i * 8 + j])
                << "load_b_rows D(" << i << ", " << j << ")";
        }
    const std::vector<std::uint32_t> r = regs.host();
    for (int i = 0; i < 128; ++i) EXPECT_EQ(r[i], r[128 + i]) << "a_from, lane " << i / 4;
}

TEST(Simt, PtxMmaMultipliesAsAFloat64ReferenceInThePtxLayout) {
    check_ptx_mma<__nv_bfloat16>(DType::bf16);
    check_ptx_mma<__half>(DType::f16);
}

// ldmatrix (mma_m16n8k16.h) against the element-wise loaders the test above holds to the PTX
// tables: from a 16 x 24 shared tile of distinct 16-bit patterns (rows 48 bytes apart), an A
// operand at columns 0 and 8, two B operands from rows and from columns; lane l writes its 16
// registers of each kind to got / want [l * 16 ...].
__global__ void ldmatrix_loads(std::uint32_t* got, std::uint32_t* want, const __nv_bfloat16* src) {
    using namespace shardlab::cuda;
    constexpr int ld = 24;
    alignas(16) __shared__ __nv_bfloat16 tile[16 * ld];
    const int lane = int(threadIdx.x);
    for (int i = lane; i < 16 * ld; i += 32) tile[i] = src[i];
    __syncthreads();
    MmaA a0 = ldmatrix_a(tile, ld), a8 = ldmatrix_a(tile + 8, ld);
    MmaB rows[2], cols[2];
    ldmatrix_b_rows(rows, tile, ld);
    ldmatrix_b_cols(cols, tile, ld);
    const std::uint32_t g[16] = {a0.r[0],      a0.r[1],      a0.r[2],      a0.r[3],
                                 a8.r[0],      a8.r[1],      a8.r[2],      a8.r[3],
                                 rows[0].r[0], rows[0].r[1], rows[1].r[0], rows[1].r[1],
                                 cols[0].r[0], cols[0].r[1], cols[1].r[0], cols[1].r[1]};
    const MmaA w0 = load_a(tile, ld), w8 = load_a(tile + 8, ld);
    const MmaB r0 = load_b_rows(tile, ld), r1 = load_b_rows(tile + 8 * ld, ld);
    const MmaB c0 = load_b_cols(tile, ld), c1 = load_b_cols(tile + 8, ld);
    const std::uint32_t w[16] = {w0.r[0], w0.r[1], w0.r[2], w0.r[3], w8.r[0], w8.r[1],
                                 w8.r[2], w8.r[3], r0.r[0], r0.r[1], r1.r[0], r1.r[1],
                                 c0.r[0], c0.r[1], c1.r[0], c1.r[1]};
    for (int i = 0; i < 16; ++i) {
        got[lane * 16 + i] = g[i];
        want[lane * 16 + i] = w[i];
    }
}

TEST(Simt, LdmatrixDeliversTheMmaOperandsTheElementWiseLoadsDo) {
    std::vector<__nv_bfloat16> tile(16 * 24);
    for (std::size_t i = 0; i < tile.size(); ++i) tile[i].__x = std::uint16_t(i + 1);
    const DeviceArray<__nv_bfloat16> src(tile);
    DeviceArray<std::uint32_t> got(32 * 16), want(32 * 16);
    cuda::launch("ldmatrix_loads", ldmatrix_loads, 1, 32, 0, nullptr, got.p, want.p,
                 static_cast<const __nv_bfloat16*>(src.p));
    const std::vector<std::uint32_t> g = got.host(), w = want.host();
    const char* what[] = {"A at column 0", "A at column 8", "B from rows", "B from columns"};
    for (int i = 0; i < 32 * 16; ++i)
        EXPECT_EQ(g[i], w[i]) << what[i % 16 / 4] << ", lane " << i / 16 << ", register " << i % 4;
    for (int i = 0; i < 32 * 16; ++i) EXPECT_NE(w[i], 0u); // every register holds two elements
}

// ldmatrix's rows must be 16-byte aligned: an address 8 bytes off is reported, as a GPU faults.
__global__ void ldmatrix_misaligned(const __nv_bfloat16* src) {
    alignas(16) __shared__ __nv_bfloat16 tile[16 * 24];
    for (int i = int(threadIdx.x); i < 16 * 24; i += 32) tile[i] = src[i];
    __syncthreads();
    shardlab::cuda::ldmatrix_a(tile + 4, 24);
}

TEST(Simt, AMisalignedLdmatrixRowIsReported) {
    DeviceArray<__nv_bfloat16> src(16 * 24);
    launch_faulting("ldmatrix_misaligned", ldmatrix_misaligned, 1, 32, 0, nullptr,
                    static_cast<const __nv_bfloat16*>(src.p));
    const std::string what = expect_fault(cudaErrorMisalignedAddress);
    EXPECT_NE(what.find("ldmatrix's row address"), std::string::npos) << what;
}

// --- cp.async ---------------------------------------------------------------------------------

// Each of 32 threads copies two 16-byte chunks into shared memory by cp.async, in two groups, and
// records what its own destinations hold before each wait (out[t][0..3]: chunk 0 before any wait,
// chunk 0 after wait<1>, chunk 1 after wait<1>, chunk 1 after wait<0>); then, after a barrier,
// a neighbour's chunks (out[t][4..5]). Threads t % 3 == 0 copy chunk 1 as a row past the data:
// zeros.
__global__ void cp_async_groups(int* out, const int* in) {
    alignas(16) __shared__ int tile[2][32 * 4];
    const int t = int(threadIdx.x);
    int* o = out + t * 6;
    shardlab::cuda::cp_async<16>(&tile[0][t * 4], in + t * 4, true);
    shardlab::cuda::cp_async_commit();
    shardlab::cuda::cp_async<16>(&tile[1][t * 4], in + 128 + t * 4, t % 3 != 0);
    shardlab::cuda::cp_async_commit();
    o[0] = tile[0][t * 4];
    shardlab::cuda::cp_async_wait<1>(); // the first group, not the second
    o[1] = tile[0][t * 4];
    o[2] = tile[1][t * 4];
    shardlab::cuda::cp_async_wait<0>();
    o[3] = tile[1][t * 4 + 3];
    __syncthreads(); // every thread's copies are visible to the block
    const int n = (t + 1) % 32;
    o[4] = tile[0][n * 4 + 1];
    o[5] = tile[1][n * 4 + 2];
}

// The emulator lands a copy at the latest moment the wait allows, and until then its destination
// holds 0xFF bytes (-1 as an int): a kernel that read before waiting would see them.
TEST(Simt, CpAsyncLandsByItsGroupsWaitAndZeroFillsRowsPastTheData) {
    std::vector<int> in(256);
    std::iota(in.begin(), in.end(), 1000);
    const DeviceArray<int> din(in);
    DeviceArray<int> out(32 * 6, 7);
    cuda::launch("cp_async_groups", cp_async_groups, 1, 32, 0, nullptr, out.p,
                 static_cast<const int*>(din.p));
    const std::vector<int> o = out.host();
    for (int t = 0; t < 32; ++t) {
        const int n = (t + 1) % 32;
        const int* r = &o[std::size_t(t) * 6];
        EXPECT_EQ(r[0], -1) << "thread " << t << ": chunk 0 before any wait";
        EXPECT_EQ(r[1], 1000 + t * 4) << "thread " << t << ": chunk 0 after wait<1>";
        EXPECT_EQ(r[2], -1) << "thread " << t << ": chunk 1 after wait<1>";
        EXPECT_EQ(r[3], t % 3 ? 1128 + t * 4 + 3 : 0)
            << "thread " << t << ": chunk 1 after wait<0>";
        EXPECT_EQ(r[4], 1000 + n * 4 + 1) << "thread " << t << ": a neighbour's chunk 0";
        EXPECT_EQ(r[5], n % 3 ? 1128 + n * 4 + 2 : 0)
            << "thread " << t << ": a neighbour's chunk 1";
    }
}

__global__ void cp_async_never_waited(const int* in) {
    alignas(16) __shared__ int tile[32 * 4];
    shardlab::cuda::cp_async<16>(&tile[threadIdx.x * 4], in + threadIdx.x * 4, true);
    shardlab::cuda::cp_async_commit();
}

// A thread that ends with copies in flight leaves shared memory undefined: reported.
TEST(Simt, ACpAsyncNeverWaitedForIsReported) {
    DeviceArray<int> in(128);
    launch_faulting("cp_async_never_waited", cp_async_never_waited, 1, 32, 0, nullptr,
                    static_cast<const int*>(in.p));
    const std::string what = expect_fault(cudaErrorLaunchFailure);
    EXPECT_NE(what.find("cp.async copies never waited for"), std::string::npos) << what;
}

// --- atomics ----------------------------------------------------------------------------------

__global__ void count_up(unsigned long long* counter, int* max_seen) {
    atomicAdd(counter, 1ull);
    atomicMax(max_seen, int(blockIdx.x * blockDim.x + threadIdx.x));
}

TEST(Simt, AtomicsAreAtomicAcrossBlocksRunningAtOnce) {
    DeviceArray<unsigned long long> counter(1, 0);
    DeviceArray<int> max_seen(1, -1);
    const unsigned blocks = 512, threads = 128;
    for (int round = 0; round < 3; ++round)
        cuda::launch("count_up", count_up, blocks, threads, 0, nullptr, counter.p, max_seen.p);
    EXPECT_EQ(counter.host()[0], 3ull * blocks * threads);
    EXPECT_EQ(max_seen.host()[0], int(blocks * threads - 1));
}

// --- faults the emulator reports ----------------------------------------------------------------

__global__ void divergent_barrier(int* out) {
    if (threadIdx.x < 16) {
        __syncthreads();
    } else {
        __syncthreads(); // a different barrier: undefined on a GPU
    }
    out[threadIdx.x] = 1;
}

TEST(Simt, ADivergentBarrierIsReportedWithTheBlockAndThreads) {
    DeviceArray<int> out(64);
    launch_faulting("divergent_barrier", divergent_barrier, dim3(2, 1, 1), 32, 0, nullptr, out.p);
    const std::string what = expect_fault(cudaErrorLaunchFailure);
    EXPECT_NE(what.find("divergent barrier"), std::string::npos) << what;
    EXPECT_NE(what.find("kernel divergent_barrier"), std::string::npos) << what;
    EXPECT_NE(what.find("threads 0..15"), std::string::npos) << what;
    EXPECT_NE(what.find("threads 16..31"), std::string::npos) << what;
    EXPECT_NE(what.find("test_simt.cpp"), std::string::npos) << "names the source line: " << what;
}

__global__ void exit_before_barrier(int* out) {
    if (threadIdx.x == 5) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

TEST(Simt, AThreadThatExitsBeforeABarrierIsReported) {
    DeviceArray<int> out(32);
    launch_faulting("exit_before_barrier", exit_before_barrier, 1, 32, 0, nullptr, out.p);
    const std::string what = expect_fault(cudaErrorLaunchFailure);
    EXPECT_NE(what.find("block (0,0,0)"), std::string::npos) << what;
    EXPECT_NE(what.find("threads 5 exited while threads 0..4,6..31 wait at __syncthreads"),
              std::string::npos)
        << what;
}

__global__ void shuffle_against_barrier(int* out) {
    if (threadIdx.x == 0)
        __syncthreads();
    else
        out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0);
}

TEST(Simt, ADeadlockBetweenABarrierAndAWarpOperationIsReported) {
    DeviceArray<int> out(32);
    launch_faulting("shuffle_against_barrier", shuffle_against_barrier, 1, 32, 0, nullptr, out.p);
    const std::string what = expect_fault(cudaErrorLaunchFailure);
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("threads 0 wait at __syncthreads"), std::string::npos) << what;
}

__global__ void shuffle_with_exited_lane(int* out) {
    if (threadIdx.x == 31) return;
    out[threadIdx.x] = __shfl_sync(0xffffffffu, int(threadIdx.x), 0);
}

TEST(Simt, AWarpOperationWhoseMaskNamesAnExitedLaneIsReported) {
    DeviceArray<int> out(32);
    launch_faulting("shuffle_with_exited_lane", shuffle_with_exited_lane, 1, 32, 0, nullptr, out.p);
    const std::string what = expect_fault(cudaErrorLaunchFailure);
    EXPECT_NE(what.find("lane 31 of the mask 0xffffffff exited"), std::string::npos) << what;
}

// Half the warp shuffles while the other half votes: on a GPU the lanes of a warp operation must
// run the same one; here the two would have met as one and exchanged each other's deposits.
__global__ void shuffle_against_vote(unsigned* out) {
    const unsigned lane = threadIdx.x % 32;
    if (lane < 16)
        out[lane] = unsigned(__shfl_sync(0xffffffffu, int(lane), 0));
    else
        out[lane] = __ballot_sync(0xffffffffu, lane % 2 == 0);
}

// The same with __syncwarp, which forms no result, against a shuffle that does, after a shuffle
// of every lane (so that the lane at __syncwarp was last in a shuffle too) and before another (so
// that it runs on into a shuffle, whichever lane resumes first).
__global__ void shuffle_against_syncwarp(unsigned* out) {
    const unsigned lane = threadIdx.x % 32;
    out[lane] = unsigned(__shfl_sync(0xffffffffu, int(lane), 2));
    if (lane == 0)
        __syncwarp();
    else
        out[lane] += unsigned(__shfl_sync(0xffffffffu, int(lane), 1));
    out[lane] += unsigned(__shfl_sync(0xffffffffu, int(lane), 3));
}

TEST(Simt, LanesMeetingInDifferentWarpOperationsAreReported) {
    {
        DeviceArray<unsigned> out(32);
        launch_faulting("shuffle_against_vote", shuffle_against_vote, 1, 32, 0, nullptr, out.p);
        const std::string what = expect_fault(cudaErrorLaunchFailure);
        EXPECT_NE(what.find("meet in different warp operations (test_simt.cpp:"), std::string::npos)
            << what;
        EXPECT_NE(what.find("kernel shuffle_against_vote"), std::string::npos) << what;
    }
    DeviceArray<unsigned> out(32);
    launch_faulting("shuffle_against_syncwarp", shuffle_against_syncwarp, 1, 32, 0, nullptr, out.p);
    const std::string what = expect_fault(cudaErrorLaunchFailure);
    EXPECT_NE(what.find("meet in different warp operations"), std::string::npos) << what;
}

__global__ void vector_load(float* out, const float* in) {
    const float4 v = cuda::load4(in);
    out[0] = v.x + v.y + v.z + v.w;
}

TEST(Simt, AMisalignedVectorLoadIsReported) {
    DeviceArray<float> in(8, 1.0f), out(1);
    cuda::launch("vector_load", vector_load, 1, 1, 0, nullptr, out.p,
                 static_cast<const float*>(in.p));
    EXPECT_EQ(out.host()[0], 4.0f);
    launch_faulting("vector_load", vector_load, 1, 1, 0, nullptr, out.p,
                    static_cast<const float*>(in.p + 1));
    const std::string what = expect_fault(cudaErrorMisalignedAddress);
    EXPECT_NE(what.find("misaligned address: a float4 load"), std::string::npos) << what;
    EXPECT_NE(what.find("kernel vector_load"), std::string::npos) << what;
}

// After a fault every CUDA call reports it, cudaEventRecord included, so freeing a tracked
// allocation cannot record its release point. ~Allocation frees while the fault's error unwinds,
// where a throw is std::terminate: the caching allocator drops the block instead.
TEST(Simt, AnAllocationFreedWhileAFaultUnwindsDoesNotThrow) {
    DeviceArray<float> in(8, 1.0f), out(1);
    {
        const std::unique_ptr<DeviceContext> ctx = make_cuda_context(0);
        Stream& s = ctx->compute();
        std::string what = "nothing thrown";
        try {
            const Allocation a = ctx->tracker().allocate(1024, Category::workspace, s);
            launch_faulting("vector_load", vector_load, 1, 1, 0, cuda::stream_of(s), out.p,
                            static_cast<const float*>(in.p + 1));
            s.synchronize(); // reports the fault; `a` is freed on the way out
        } catch (const Error& e) {
            what = e.what();
        }
        EXPECT_NE(what.find("misaligned"), std::string::npos) << what;
        EXPECT_EQ(cudaEventRecord(nullptr, nullptr), cudaErrorMisalignedAddress)
            << "every call reports the fault";
    }
    emu::reset_device();
}

__global__ void nothing() {}

TEST(Simt, LaunchLimitsAreCheckedAndNamed) {
    for (dim3 block : {dim3(1025), dim3(32, 33), dim3(1, 1, 65), dim3(0)}) {
        try {
            cuda::launch("nothing", nothing, 1, block, 0, nullptr);
            FAIL() << "launched a block of " << block.x << "x" << block.y << "x" << block.z;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("launching kernel nothing"), std::string::npos);
            EXPECT_NE(std::string(e.what()).find("cudaErrorInvalidConfiguration"),
                      std::string::npos)
                << e.what();
        }
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a launch error is returned once, not sticky";
    // The largest block and the largest grid y are accepted (apart: together they are 67 M
    // threads that do nothing, minutes under the sanitizers).
    cuda::launch("nothing", nothing, 1, dim3(32, 32), 0, nullptr);
    cuda::launch("nothing", nothing, dim3(1, 65535), 1, 0, nullptr);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// --- streams ------------------------------------------------------------------------------------

__global__ void add_one(int* x, int n) {
    const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) x[i] += 1;
}

TEST(Simt, StreamsRunInOrderAndEventsOrderOneAfterAnother) {
    cudaStream_t a = nullptr, b = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    DeviceArray<int> x(1000, 0);
    std::atomic<bool> released{false};
    // a: hold until released, then 3 increments; b: waits for a's event, then 1 increment
    cuda::check_cuda(cudaLaunchHostFunc(
                         a,
                         [](void* flag) {
                             while (!static_cast<std::atomic<bool>*>(flag)->load())
                                 std::this_thread::sleep_for(std::chrono::milliseconds(1));
                         },
                         &released),
                     "cudaLaunchHostFunc");
    for (int k = 0; k < 3; ++k) cuda::launch("add_one", add_one, 4, 256, 0, a, x.p, 1000);
    cudaEvent_t done = nullptr;
    cudaEventCreate(&done);
    cudaEventRecord(done, a);
    cudaStreamWaitEvent(b, done, 0);
    cuda::launch("add_one", add_one, 4, 256, 0, b, x.p, 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(cudaStreamQuery(b), cudaErrorNotReady) << "b must wait for a's event";
    EXPECT_EQ(cudaEventQuery(done), cudaErrorNotReady);
    released = true;
    ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
    for (int v : x.host()) ASSERT_EQ(v, 4);
    cudaEventDestroy(done);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
}

TEST(Simt, CopiesFromPageableMemoryAreStagedAtTheCall) {
    cudaStream_t s = nullptr;
    cudaStreamCreate(&s);
    DeviceArray<int> x(4, 0);
    std::atomic<bool> released{false};
    cudaLaunchHostFunc(
        s,
        [](void* flag) {
            while (!static_cast<std::atomic<bool>*>(flag)->load())
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        &released);
    std::vector<int> src = {1, 2, 3, 4};
    ASSERT_EQ(cudaMemcpyAsync(x.p, src.data(), 16, cudaMemcpyHostToDevice, s), cudaSuccess);
    src.assign(4, -7); // the caller may reuse pageable memory at once
    released = true;
    cudaStreamSynchronize(s);
    EXPECT_EQ(x.host(), (std::vector<int>{1, 2, 3, 4}));
    cudaStreamDestroy(s);
}

// CUDA forbids CUDA calls inside a host function (they can deadlock on a GPU): refused, named.
TEST(Simt, ACudaCallInsideAHostFunctionIsRefused) {
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    auto allocate = [](void*) {
        void* p = nullptr;
        (void)cudaMalloc(&p, 4);
    };
    ASSERT_EQ(cudaLaunchHostFunc(s, allocate, nullptr), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorLaunchFailure);
    const std::string what = emu::last_fault();
    EXPECT_NE(what.find("cudaMalloc called inside a host function"), std::string::npos) << what;
    EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
    emu::reset_device();
}

TEST(Simt, AFaultIsStickyUntilTheDeviceIsReset) {
    DeviceArray<int> out(32);
    launch_faulting("exit_before_barrier", exit_before_barrier, 1, 32, 0, nullptr, out.p);
    EXPECT_NE(cudaDeviceSynchronize(), cudaSuccess);
    int v = 0;
    EXPECT_NE(cudaMemcpy(&v, out.p, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess)
        << "after a fault every call fails";
    EXPECT_NE(cudaGetLastError(), cudaSuccess);
    emu::reset_device();
    EXPECT_EQ(cudaMemcpy(&v, out.p, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
}

// --- the race detector's view of warp operations (ThreadSanitizer builds: scripts/tsan.sh) ------
#if defined(__SANITIZE_THREAD__)

// Lane 1 writes a shared word that lane 0 then reads, the whole warp running `between` in between.
// Only __syncwarp orders the two: CUDA promises memory ordering for it ("among threads
// participating in the barrier") and for no shuffle, vote, mma.sync or WMMA function, and
// compute-sanitizer's racecheck reports the read after a shuffle alone as a hazard too.
enum class Between { syncwarp, shuffle, vote, mma, wmma };
__global__ void write_then_read(int* out, const __nv_bfloat16* tile, Between between) {
    __shared__ int word;
    const unsigned lane = threadIdx.x;
    if (lane == 1) word = 7;
    if (between == Between::syncwarp) __syncwarp();
    if (between == Between::shuffle) out[1 + lane] = __shfl_sync(0xffffffffu, int(lane), 3);
    if (between == Between::vote) out[1 + lane] = int(__ballot_sync(0xffffffffu, lane % 2));
    if (between == Between::mma) {
        cuda::MmaD d{};
        cuda::mma<__nv_bfloat16>(d, cuda::MmaA{}, cuda::MmaB{});
        out[1 + lane] = int(d.x[0]);
    }
    if (between == Between::wmma) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> f;
        wmma::load_matrix_sync(f, tile, 16);
        out[1 + lane] = int(__bfloat162float(f.x[0]));
    }
    if (lane == 0) out[0] = word;
}

// In a child process (a gtest death test, which re-runs this binary for the one statement): the
// kernel, then exit(0) — or, if ThreadSanitizer reported a race, its exit code 66 at the report
// (halt_on_error=1: this binary's defaults, at the top of the file; scripts/tsan.sh sets the same).
void expect_race(Between between, bool race) {
    const DeviceArray<__nv_bfloat16> tile(256);
    DeviceArray<int> out(33);
    auto run = [&] {
        cuda::launch("write_then_read", write_then_read, 1, 32, 0, nullptr, out.p,
                     static_cast<const __nv_bfloat16*>(tile.p), between);
        std::exit(out.host()[0] == 7 ? 0 : 1);
    };
    if (race)
        EXPECT_EXIT(run(), testing::ExitedWithCode(66), "ThreadSanitizer: data race");
    else
        EXPECT_EXIT(run(), testing::ExitedWithCode(0), "");
}

TEST(SimtRaceDetector, SyncwarpOrdersTheLanesMemory) {
    GTEST_FLAG_SET(death_test_style, "threadsafe"); // the emulator's pool runs threads
    expect_race(Between::syncwarp, false);
}

TEST(SimtRaceDetector, ShufflesVotesMmaAndWmmaOrderNoMemory) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    for (const Between b : {Between::shuffle, Between::vote, Between::mma, Between::wmma}) {
        SCOPED_TRACE(int(b));
        expect_race(b, true);
    }
}
#endif

} // namespace
