// The NCCL transport's error paths, under the emulator's NCCL (emu/nccl.cpp), run by CTest on 2
// ranks in two worlds: SHARDLAB_EMU_NCCL_FAIL=ncclBroadcast, where a call inside a group is
// refused — the group must still be closed, or the next collective would join it and never run;
// and NCCL_COMM_BLOCKING=0, where every call answers ncclInProgress and the communicator takes no
// other until ncclCommGetAsyncError says it is done. Either way a collective after it is exact.
#include "comm/nccl_transport.h"
#include "core/device_context.h"
#include "core/error.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace shardlab;

namespace {

struct Rank {
    std::unique_ptr<DeviceContext> ctx = make_cuda_context(0);
    std::unique_ptr<Transport> transport = make_nccl_transport(MPI_COMM_WORLD);
    std::vector<Allocation> memory;

    Stream& s() { return ctx->comm(); }
    float* device(const std::vector<float>& values) {
        Allocation a =
            ctx->tracker().allocate(values.size() * sizeof(float) + 1, Category::workspace, s());
        float* p = a.as<float>();
        s().memcpy(p, values.data(), values.size() * sizeof(float));
        memory.push_back(std::move(a));
        return p;
    }
    std::vector<float> host(const float* p, std::size_t n) {
        std::vector<float> v(n);
        s().memcpy(v.data(), p, n * sizeof(float));
        s().synchronize();
        return v;
    }
    // All-reduce of (rank + 1) * {1, 2, 3}: the sum over the ranks, exactly.
    void expect_allreduce_is_exact() {
        const int r = transport->rank(), n = transport->size();
        float* x = device({float(r + 1), float(2 * (r + 1)), float(3 * (r + 1))});
        transport->native(s(), {CollectiveOp::allreduce, x, x, 3, DType::f32});
        const float total = float(n * (n + 1) / 2);
        EXPECT_EQ(host(x, 3), (std::vector<float>{total, 2 * total, 3 * total}));
    }
};

bool env_is(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v && std::strcmp(v, value) == 0;
}

} // namespace

// An all-gather of 3 elements over 2 ranks is uneven: one ncclBroadcast per rank in a group.
TEST(NcclTransport, AGroupWhoseCallFailsIsClosedAndTheNextCollectiveRuns) {
    if (!env_is("SHARDLAB_EMU_NCCL_FAIL", "ncclBroadcast"))
        GTEST_SKIP() << "run with SHARDLAB_EMU_NCCL_FAIL=ncclBroadcast (CTest does)";
    Rank x;
    ASSERT_EQ(x.transport->size(), 2) << "run on 2 ranks";
    float* send = x.device({1.0f, 2.0f});
    float* recv = x.device({0.0f, 0.0f, 0.0f});
    try {
        x.transport->native(x.s(), {CollectiveOp::allgather, send, recv, 3, DType::f32});
        FAIL() << "the injected ncclBroadcast failure was not reported";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("ncclBroadcast"), std::string::npos) << e.what();
    }
    x.expect_allreduce_is_exact();
}

TEST(NcclTransport, ANonBlockingCommunicatorIsWaitedForNotTakenAsDone) {
    if (!env_is("NCCL_COMM_BLOCKING", "0"))
        GTEST_SKIP() << "run with NCCL_COMM_BLOCKING=0 (CTest does)";
    Rank x;
    x.expect_allreduce_is_exact();
    const int r = x.transport->rank();
    float* send = x.device({float(10 * r), float(10 * r + 1)});
    float* recv = x.device({0.0f, 0.0f, 0.0f});
    x.transport->native(x.s(), {CollectiveOp::allgather, send, recv, 3, DType::f32}); // a group
    EXPECT_EQ(x.host(recv, 3), (std::vector<float>{0.0f, 1.0f, 10.0f}));
    x.expect_allreduce_is_exact();
}
