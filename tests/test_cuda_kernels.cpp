// CUDA kernels against their CPU twins on fresh random inputs, by ||gpu - cpu|| / ||cpu||: fp32
// within 1e-5 (CUDA's tanhf and our vectorized tanh differ by a few ulp), bf16 within 1e-2 (one
// bf16 rounding apart at most). Outputs are poisoned with NaN first, so an element a kernel never
// writes fails. Without a GPU every test is skipped, and says so (CTest lists them as skipped).
#include "core/cpu_stream.h"
#include "core/device.h"
#include "core/memory_tracker.h"
#include "model/kernels/cpu/adamw.h"
#include "model/kernels/cpu/gelu.h"
#include "model/kernels/cuda/cuda_kernels.h"
#include "optim/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace shardlab;

namespace {
bool have_gpu(std::string* why) {
    const GpuQuery q = query_gpus();
    *why = q.cuda_built ? q.status : "built without CUDA";
    return !q.gpus.empty();
}

#define REQUIRE_GPU()                                                                              \
    do {                                                                                           \
        std::string why;                                                                           \
        if (!have_gpu(&why))                                                                       \
            GTEST_SKIP() << "no GPU present (" << why << "): GPU kernel test skipped";             \
    } while (0)

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float scale) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

// The order allocations are released in: these kernels are synchronous, so a host-side stream.
CpuStream& host_order() {
    static CpuStream s("host", std::make_shared<StreamGroupState>());
    return s;
}

// A device copy of host values in dtype t, tracked.
Allocation to_device(MemoryTracker& t, const std::vector<float>& host, DType dt) {
    std::vector<unsigned char> bytes(host.size() * dtype_size(dt));
    convert(host.data(), DType::f32, bytes.data(), dt, host.size());
    Allocation a = t.allocate(bytes.size(), Category::workspace, host_order());
    copy_bytes(a.data(), a.device(), bytes.data(), Device::cpu(), bytes.size());
    return a;
}

std::vector<float> to_host(const Allocation& a, std::size_t n, DType dt) {
    std::vector<unsigned char> bytes(n * dtype_size(dt));
    copy_bytes(bytes.data(), Device::cpu(), a.data(), a.device(), bytes.size());
    std::vector<float> out(n);
    convert(bytes.data(), dt, out.data(), DType::f32, n);
    return out;
}

double relative_error(const std::vector<float>& got, const std::vector<float>& ref) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double d = double(got[i]) - double(ref[i]);
        num += d * d; // NaN (never written) propagates and fails the comparison
        den += double(ref[i]) * double(ref[i]);
    }
    return std::sqrt(num / den);
}

template <typename T>
std::vector<float> cpu_gelu(const std::vector<float>& x, const std::vector<float>* dout, DType dt) {
    std::vector<T> in(x.size()), out(x.size()), d(x.size());
    convert(x.data(), DType::f32, in.data(), dt, x.size());
    if (dout) {
        convert(dout->data(), DType::f32, d.data(), dt, x.size());
        cpu::gelu_backward(out.data(), in.data(), d.data(), x.size());
    } else {
        cpu::gelu_forward(out.data(), in.data(), x.size());
    }
    std::vector<float> r(x.size());
    convert(out.data(), dt, r.data(), DType::f32, x.size());
    return r;
}
} // namespace

TEST(CudaKernels, GeluForwardAndBackwardMatchTheCpu) {
    REQUIRE_GPU();
    MemoryTracker tracker(Device::cuda(0));
    const std::size_t n = 100003; // not a multiple of the block size
    const auto x = random_floats(n, 1, 4.0f), g = random_floats(n, 2, 1.0f);
    const std::vector<float> poison(n, NAN);
    for (DType dt : {DType::f32, DType::bf16}) {
        const double tol = dt == DType::f32 ? 1e-5 : 1e-2;
        Allocation in = to_device(tracker, x, dt), dout = to_device(tracker, g, dt);
        Allocation out = to_device(tracker, poison, dt);
        cuda::gelu_forward(out.data(), in.data(), n, dt);
        const auto ref_f =
            dt == DType::f32 ? cpu_gelu<float>(x, nullptr, dt) : cpu_gelu<bf16_t>(x, nullptr, dt);
        EXPECT_LE(relative_error(to_host(out, n, dt), ref_f), tol) << dtype_name(dt);
        out = to_device(tracker, poison, dt);
        cuda::gelu_backward(out.data(), in.data(), dout.data(), n, dt);
        const auto ref_b =
            dt == DType::f32 ? cpu_gelu<float>(x, &g, dt) : cpu_gelu<bf16_t>(x, &g, dt);
        EXPECT_LE(relative_error(to_host(out, n, dt), ref_b), tol) << dtype_name(dt);
    }
}

TEST(CudaKernels, FusedAdamWMatchesTheCpuUpdate) {
    REQUIRE_GPU();
    MemoryTracker tracker(Device::cuda(0));
    const std::size_t n = 70001;
    const AdamWConfig cfg{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    auto master = random_floats(n, 3, 0.1f), m = random_floats(n, 4, 1e-3f),
         v = random_floats(n, 5, 1e-6f);
    for (auto& x : v) x = std::fabs(x);
    const auto grad = random_floats(n, 6, 1e-2f);
    Allocation dm = to_device(tracker, master, DType::f32), dmm = to_device(tracker, m, DType::f32),
               dv = to_device(tracker, v, DType::f32), dg = to_device(tracker, grad, DType::bf16),
               dp = to_device(tracker, std::vector<float>(n, NAN), DType::bf16);
    for (int step = 1; step <= 3; ++step) {
        const AdamWStep k = adamw_step(cfg, cfg.lr, step, true, 0.5f);
        cuda::adamw_update_fused(dm.as<float>(), dmm.as<float>(), dv.as<float>(), dg.data(),
                                 DType::bf16, dp.data(), DType::bf16, n, k);
        std::vector<std::uint16_t> g16(n);
        convert(grad.data(), DType::f32, g16.data(), DType::bf16, n);
        cpu::adamw(master.data(), m.data(), v.data(), g16.data(), DType::bf16, n, k);
    }
    EXPECT_LE(relative_error(to_host(dm, n, DType::f32), master), 1e-6);
    EXPECT_LE(relative_error(to_host(dmm, n, DType::f32), m), 1e-6);
    EXPECT_LE(relative_error(to_host(dv, n, DType::f32), v), 1e-6);
    std::vector<float> rounded(n);
    for (std::size_t i = 0; i < n; ++i) rounded[i] = bf16_to_f32(f32_to_bf16(master[i]));
    EXPECT_LE(relative_error(to_host(dp, n, DType::bf16), rounded), 1e-2);
}
