// The device query (`shardlab device`, the tests' "is there a GPU") under the emulator with three
// GPUs: a plain query reads properties only — no context created, the caller's current device
// untouched; asking for free memory creates the contexts it must and still restores the device;
// the opt-in shared memory per block reads the same from every query.
#include "core/device.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

using namespace shardlab;

TEST(DeviceQuery, CreatesNoContextAndKeepsTheCallersDevice) {
    int n = 0;
    ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    ASSERT_EQ(n, 3) << "run with SHARDLAB_EMU_GPUS=3 (CTest does)";
    ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
    ASSERT_EQ(emu::contexts_created(), 1);

    const GpuQuery q = query_gpus();
    ASSERT_EQ(q.gpus.size(), 3u);
    EXPECT_GT(q.gpus[2].total_bytes, 0u); // from the properties
    EXPECT_EQ(emu::contexts_created(), 1) << "a property query created contexts";
    int current = -1;
    cudaGetDevice(&current);
    EXPECT_EQ(current, 1) << "the query moved this thread to another device";

    const GpuQuery with_free = query_gpus(/*measure_free=*/true);
    EXPECT_GT(with_free.gpus[0].free_bytes, 0u);
    EXPECT_EQ(emu::contexts_created(), 3);
    cudaGetDevice(&current);
    EXPECT_EQ(current, 1) << "measuring free memory moved this thread to another device";
}

// The shared memory a block may opt in to, as the attribute and as the properties report it: an
// H100's 227 KiB unless a test sets less (the flash kernels pick their stages by it).
TEST(DeviceQuery, SharedMemoryOptInIsOneFigureEverywhere) {
    int optin = 0;
    ASSERT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0),
              cudaSuccess);
    EXPECT_EQ(optin, 227 * 1024);
    const std::size_t h100 = emu::set_shared_optin(99 * 1024);
    cudaDeviceProp p{};
    ASSERT_EQ(cudaGetDeviceProperties(&p, 2), cudaSuccess);
    EXPECT_EQ(p.sharedMemPerBlockOptin, std::size_t(99 * 1024));
    ASSERT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 1),
              cudaSuccess);
    EXPECT_EQ(optin, 99 * 1024);
    EXPECT_EQ(cudaFuncSetAttribute(reinterpret_cast<const void*>(&optin),
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024),
              cudaErrorInvalidValue); // over the limit
    cudaGetLastError();
    emu::set_shared_optin(h100);
    EXPECT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 3),
              cudaErrorInvalidDevice);
    cudaGetLastError();
}
