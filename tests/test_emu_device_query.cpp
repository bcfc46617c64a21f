// The device query (`shardlab device`, the tests' "is there a GPU") under the emulator with three
// GPUs: a plain query reads properties only — no context created, the caller's current device
// untouched; asking for free memory creates the contexts it must and still restores the device.
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
