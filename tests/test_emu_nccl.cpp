// The SIMT emulator's NCCL stand-in (emu/nccl.cpp, test infrastructure) under `mpirun -np K`:
// every collective in and out of place, in fp32/bf16/fp16 and the integer types, with counts 0, 1,
// odd and large; send/recv in a ring inside a group; several communicators at once; stream order;
// messages cut into pieces; refused arguments, a failure inside a task, and abort. Inputs are small
// integers wherever a value is checked, so every expected result is exact and the comparison is of
// bits; where inputs are random, the expected bits are the documented rank-order fp32 reduction,
// and every rank must hold the same bits.
#include <cuda_runtime.h>
#include <nccl.h>

#include "core/dtype.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using shardlab::DType;

namespace {

int world_rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}
int world_size() {
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

// An id made by `maker` (a world rank) and handed to every process.
ncclUniqueId shared_id(int maker = 0) {
    ncclUniqueId id{};
    if (world_rank() == maker) {
        EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    }
    MPI_Bcast(&id, sizeof id, MPI_BYTE, maker, MPI_COMM_WORLD);
    return id;
}

bool contains(const char* text, const std::string& part) {
    return std::string(text).find(part) != std::string::npos;
}

// Emulated device memory; freed at the end of the scope (every test synchronises its streams
// before that, as cudaFree's caller must).
class DeviceBuffer {
  public:
    explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
        EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_), bytes), cudaSuccess);
    }
    explicit DeviceBuffer(const std::vector<char>& host) : DeviceBuffer(host.size()) {
        EXPECT_EQ(cudaMemcpy(p_, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
    ~DeviceBuffer() { cudaFree(p_); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    char* get() const { return p_; }
    // The contents once s has reached this point.
    std::vector<char> read(cudaStream_t s, std::size_t offset = 0, std::size_t bytes = SIZE_MAX) {
        EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
        std::vector<char> h(std::min(bytes, bytes_ - offset));
        EXPECT_EQ(cudaMemcpy(h.data(), p_ + offset, h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        return h;
    }

  private:
    char* p_ = nullptr;
    std::size_t bytes_;
};

// --- values --------------------------------------------------------------------------------------

struct FloatType {
    ncclDataType_t nccl;
    DType dtype;
    const char* name;
};
const FloatType kFloatTypes[] = {{ncclFloat32, DType::f32, "fp32"},
                                 {ncclBfloat16, DType::bf16, "bf16"},
                                 {ncclFloat16, DType::f16, "fp16"}};
const std::size_t kCounts[] = {0, 1, 7, 1000, 4099};

// Rank r's element i: an integer in [-11, 11], exact in every float type; a sum over up to 4
// ranks stays within 44, exact in bf16 (8 significant bits: integers up to 256) and fp16.
float input(int r, std::size_t i) {
    return float(int((i * 31 + std::size_t(r) * 17) % 23) - 11);
}
// For products: +-1, +-2, so that a product over 4 ranks (at most 16) is exact too.
float prod_input(int r, std::size_t i) {
    const float v[] = {1, -1, 2, -2};
    return v[(i + std::size_t(r)) % 4];
}
float any_input(ncclRedOp_t op, int r, std::size_t i) {
    return op == ncclProd ? prod_input(r, i) : input(r, i);
}

std::vector<char> encode(const std::vector<float>& v, DType t) {
    std::vector<char> b(v.size() * shardlab::dtype_size(t));
    for (std::size_t i = 0; i < v.size(); ++i) shardlab::store_from_f32(b.data(), t, i, v[i]);
    return b;
}

// The reduction of element i over `n` ranks, computed exactly (integers). For avg the emulator's
// documented rule: the exact sum divided by n in fp32 (then rounded once to the type by encode):
// the sum is exact, so this is sum/n rounded to fp32, then to the type.
float expected(ncclRedOp_t op, int n, std::size_t i, int first_rank = 0) {
    long sum = 0, prod = 1, hi = LONG_MIN, lo = LONG_MAX;
    for (int r = first_rank; r < first_rank + n; ++r) {
        const long v = long(any_input(op, r, i));
        sum += v, prod *= v, hi = std::max(hi, v), lo = std::min(lo, v);
    }
    switch (op) {
    case ncclSum:
        return float(sum);
    case ncclProd:
        return float(prod);
    case ncclMax:
        return float(hi);
    case ncclMin:
        return float(lo);
    default:
        return float(sum) / float(n);
    }
}

// Rank r's `count` inputs starting at element `from`.
std::vector<float> inputs(ncclRedOp_t op, int r, std::size_t count, std::size_t from = 0) {
    std::vector<float> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = any_input(op, r, from + i);
    return v;
}

// Every rank holds the same bytes (checked on every rank against rank 0's).
void expect_same_on_every_rank(const std::vector<char>& bytes) {
    std::vector<char> all(bytes.size() * std::size_t(world_size()));
    MPI_Allgather(bytes.data(), int(bytes.size()), MPI_BYTE, all.data(), int(bytes.size()),
                  MPI_BYTE, MPI_COMM_WORLD);
    for (int r = 1; r < world_size(); ++r)
        EXPECT_EQ(0,
                  std::memcmp(all.data(), all.data() + std::size_t(r) * bytes.size(), bytes.size()))
            << "rank " << r << " differs from rank 0";
}

// --- fixture: one stream and one communicator over every process --------------------------------

class Nccl : public ::testing::Test {
  protected:
    void SetUp() override {
        rank_ = world_rank(), size_ = world_size();
        ASSERT_EQ(cudaStreamCreate(&s_), cudaSuccess);
        ASSERT_EQ(ncclCommInitRank(&comm_, size_, shared_id(), rank_), ncclSuccess)
            << ncclGetLastError(nullptr);
    }
    void TearDown() override {
        EXPECT_EQ(cudaStreamSynchronize(s_), cudaSuccess) << shardlab::emu::last_fault();
        EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess);
        EXPECT_EQ(cudaStreamDestroy(s_), cudaSuccess);
        MPI_Barrier(MPI_COMM_WORLD); // the next test starts together
    }

    // An all-reduce of every rank's inputs; checks this rank's result and returns its bytes.
    std::vector<char> check_all_reduce(const FloatType& t, ncclRedOp_t op, std::size_t count,
                                       bool in_place) {
        const std::size_t es = shardlab::dtype_size(t.dtype);
        DeviceBuffer send(encode(inputs(op, rank_, count), t.dtype));
        DeviceBuffer recv(std::vector<char>(count * es, 0x55));
        char* out = in_place ? send.get() : recv.get();
        EXPECT_EQ(ncclAllReduce(send.get(), out, count, t.nccl, op, comm_, s_), ncclSuccess);
        std::vector<float> want(count);
        for (std::size_t i = 0; i < count; ++i) want[i] = expected(op, size_, i);
        const std::vector<char> got = (in_place ? send : recv).read(s_);
        EXPECT_EQ(got, encode(want, t.dtype));
        return got;
    }

    int rank_ = 0, size_ = 1;
    cudaStream_t s_ = nullptr;
    ncclComm_t comm_ = nullptr;
};

// --- the library and communicators --------------------------------------------------------------

TEST(NcclApi, VersionAndErrorStrings) {
    int v = 0;
    ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
    EXPECT_EQ(v, NCCL_VERSION_CODE);
    EXPECT_EQ(v, 22809);
    EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
    for (int r = 1; r < ncclNumResults; ++r)
        EXPECT_STRNE(ncclGetErrorString(ncclResult_t(r)), ncclGetErrorString(ncclResult_t(r - 1)));
}

TEST(NcclApi, UniqueIdsDiffer) {
    ncclUniqueId a, b;
    ASSERT_EQ(ncclGetUniqueId(&a), ncclSuccess);
    ASSERT_EQ(ncclGetUniqueId(&b), ncclSuccess);
    EXPECT_NE(0, std::memcmp(a.internal, b.internal, sizeof a.internal));
}

TEST_F(Nccl, CountAndRank) {
    int n = 0, r = -1;
    EXPECT_EQ(ncclCommCount(comm_, &n), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(comm_, &r), ncclSuccess);
    EXPECT_EQ(n, size_);
    EXPECT_EQ(r, rank_);
    ncclResult_t async = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(comm_, &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess);
}

// A communicator's ranks are the ones the callers asked for, not their MPI ranks: an all-gather
// over reversed ranks lays the blocks out in reversed world order.
TEST_F(Nccl, RanksAreTheCallersNotMpis) {
    ncclComm_t rev = nullptr;
    const int me = size_ - 1 - rank_;
    ASSERT_EQ(ncclCommInitRank(&rev, size_, shared_id(), me), ncclSuccess);
    int r = -1;
    EXPECT_EQ(ncclCommUserRank(rev, &r), ncclSuccess);
    EXPECT_EQ(r, me);
    DeviceBuffer send(encode({float(rank_)}, DType::f32));
    DeviceBuffer recv(sizeof(float) * std::size_t(size_));
    EXPECT_EQ(ncclAllGather(send.get(), recv.get(), 1, ncclFloat32, rev, s_), ncclSuccess);
    std::vector<float> want(static_cast<std::size_t>(size_));
    for (int j = 0; j < size_; ++j) want[std::size_t(j)] = float(size_ - 1 - j); // world rank
    EXPECT_EQ(recv.read(s_), encode(want, DType::f32));
    EXPECT_EQ(ncclCommDestroy(rev), ncclSuccess);
}

// Wrong arguments fail on every process (none is left waiting for the others), with a message.
TEST(NcclInit, RefusesWrongArgumentsOnEveryProcess) {
    const int rank = world_rank(), n = world_size();
    auto init = [](int nranks, ncclUniqueId id, int r) {
        ncclComm_t c = nullptr;
        const ncclResult_t res = ncclCommInitRank(&c, nranks, id, r);
        if (res == ncclSuccess) ncclCommDestroy(c);
        return res;
    };
    EXPECT_EQ(init(0, shared_id(), 0), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "nranks")) << ncclGetLastError(nullptr);
    EXPECT_EQ(init(n, shared_id(), n), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "rank")) << ncclGetLastError(nullptr);
    EXPECT_EQ(init(n, ncclUniqueId{}, rank), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "ncclGetUniqueId"))
        << ncclGetLastError(nullptr);
    EXPECT_EQ(ncclCommInitRank(nullptr, n, shared_id(), rank), ncclInvalidArgument);
    // More members announced than called:
    EXPECT_EQ(init(n + 1, shared_id(), rank), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "MPI_COMM_WORLD")) << ncclGetLastError(nullptr);
    // Only rank 0 is wrong: the others find a member missing.
    EXPECT_EQ(init(n, shared_id(), rank == 0 ? -1 : rank), ncclInvalidArgument);
    // Every process claims rank 0: right only when there is one.
    EXPECT_EQ(init(n, shared_id(), 0), n == 1 ? ncclSuccess : ncclInvalidArgument);
}

// --- collectives ---------------------------------------------------------------------------------

TEST_F(Nccl, AllReduceEveryFloatTypeOpAndCount) {
    for (const FloatType& t : kFloatTypes)
        for (ncclRedOp_t op : {ncclSum, ncclAvg, ncclMax, ncclMin, ncclProd})
            for (bool in_place : {false, true})
                for (std::size_t count : kCounts) {
                    SCOPED_TRACE(std::string(t.name) + " op " + std::to_string(op) +
                                 (in_place ? " in place" : " out of place") + " count " +
                                 std::to_string(count));
                    check_all_reduce(t, op, count, in_place);
                }
}

// The default stream (NULL) works like any other.
TEST_F(Nccl, AllReduceOnTheDefaultStream) {
    DeviceBuffer buf(encode(inputs(ncclSum, rank_, 100), DType::f32));
    EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), 100, ncclFloat32, ncclSum, comm_, nullptr),
              ncclSuccess);
    std::vector<float> want(100);
    for (std::size_t i = 0; i < 100; ++i) want[i] = expected(ncclSum, size_, i);
    EXPECT_EQ(buf.read(nullptr), encode(want, DType::f32));
}

// Integers wrap as two's complement; avg is the wrapped sum divided by N, truncated.
template <typename T>
void check_integer_all_reduce(ncclComm_t comm, cudaStream_t s, ncclDataType_t type) {
    const int rank = world_rank(), n = world_size();
    const std::size_t count = 1000;
    auto value = [](int r, std::size_t i) { // [-100, 120] (signed) or [0, 220]: int8 sums wrap
        const std::int64_t k = std::int64_t((i * 31 + std::size_t(r) * 17) % 23) * 10;
        return std::is_signed_v<T> ? k - 100 : k;
    };
    auto as_t = [](std::int64_t v) {
        if constexpr (std::is_integral_v<T>)
            return T(std::uint64_t(v)); // modulo 2^bits
        else
            return T(v);
    };
    std::vector<T> mine(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = as_t(value(rank, i));
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
        SCOPED_TRACE("type " + std::to_string(type) + " op " + std::to_string(op));
        DeviceBuffer buf(std::vector<char>(reinterpret_cast<const char*>(mine.data()),
                                           reinterpret_cast<const char*>(mine.data() + count)));
        EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), count, type, op, comm, s), ncclSuccess);
        std::vector<T> want(count);
        for (std::size_t i = 0; i < count; ++i) {
            std::int64_t sum = 0, hi = INT64_MIN, lo = INT64_MAX;
            T prod = T(1); // in T, rank by rank: for doubles the sign of a zero product counts
            for (int r = 0; r < n; ++r) {
                const std::int64_t v = value(r, i);
                sum += v, hi = std::max(hi, v), lo = std::min(lo, v);
                prod = T(prod * as_t(v));
            }
            const T exact[] = {as_t(sum), prod, as_t(hi), as_t(lo)}; // ncclSum .. ncclMin
            want[i] = op == ncclAvg ? T(as_t(sum) / T(n)) : exact[op];
        }
        const std::vector<char> got = buf.read(s);
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size()));
    }
}

TEST_F(Nccl, AllReduceIntegerAndDoubleTypes) {
    check_integer_all_reduce<std::int8_t>(comm_, s_, ncclInt8);
    check_integer_all_reduce<std::uint8_t>(comm_, s_, ncclUint8);
    check_integer_all_reduce<std::int32_t>(comm_, s_, ncclInt32);
    check_integer_all_reduce<std::uint32_t>(comm_, s_, ncclUint32);
    check_integer_all_reduce<std::int64_t>(comm_, s_, ncclInt64);
    check_integer_all_reduce<std::uint64_t>(comm_, s_, ncclUint64);
    check_integer_all_reduce<double>(comm_, s_, ncclFloat64);
}

TEST_F(Nccl, ReduceScatterInAndOutOfPlace) {
    const std::size_t n = std::size_t(size_);
    for (const FloatType& t : kFloatTypes)
        for (ncclRedOp_t op : {ncclSum, ncclAvg, ncclMax})
            for (bool in_place : {false, true})
                for (std::size_t count : kCounts) {
                    SCOPED_TRACE(std::string(t.name) + " op " + std::to_string(op) +
                                 (in_place ? " in place" : " out of place") + " count " +
                                 std::to_string(count));
                    const std::size_t es = shardlab::dtype_size(t.dtype);
                    DeviceBuffer send(encode(inputs(op, rank_, count * n), t.dtype));
                    DeviceBuffer recv(std::vector<char>(count * es, 0x55));
                    char* out =
                        in_place ? send.get() + std::size_t(rank_) * count * es : recv.get();
                    EXPECT_EQ(ncclReduceScatter(send.get(), out, count, t.nccl, op, comm_, s_),
                              ncclSuccess);
                    std::vector<float> want(count);
                    for (std::size_t i = 0; i < count; ++i)
                        want[i] = expected(op, size_, std::size_t(rank_) * count + i);
                    const std::vector<char> got =
                        in_place ? send.read(s_, std::size_t(rank_) * count * es, count * es)
                                 : recv.read(s_);
                    EXPECT_EQ(got, encode(want, t.dtype));
                }
}

TEST_F(Nccl, AllGatherInAndOutOfPlace) {
    const std::size_t n = std::size_t(size_);
    for (const FloatType& t : kFloatTypes)
        for (bool in_place : {false, true})
            for (std::size_t count : kCounts) {
                SCOPED_TRACE(std::string(t.name) + (in_place ? " in place" : " out of place") +
                             " count " + std::to_string(count));
                const std::size_t es = shardlab::dtype_size(t.dtype);
                const std::vector<char> mine = encode(inputs(ncclSum, rank_, count), t.dtype);
                std::vector<char> init(count * n * es, 0x55);
                if (in_place)
                    std::copy(mine.begin(), mine.end(), init.begin() + rank_ * count * es);
                DeviceBuffer send(mine), recv(init);
                const char* in =
                    in_place ? recv.get() + std::size_t(rank_) * count * es : send.get();
                EXPECT_EQ(ncclAllGather(in, recv.get(), count, t.nccl, comm_, s_), ncclSuccess);
                std::vector<float> want;
                for (int r = 0; r < size_; ++r) {
                    const std::vector<float> block = inputs(ncclSum, r, count);
                    want.insert(want.end(), block.begin(), block.end());
                }
                EXPECT_EQ(recv.read(s_), encode(want, t.dtype));
            }
}

TEST_F(Nccl, BroadcastFromEveryRoot) {
    const std::size_t count = 1000;
    for (int root = 0; root < size_; ++root)
        for (int form = 0; form < 3; ++form) { // out of place, in place, ncclBcast
            SCOPED_TRACE("root " + std::to_string(root) + " form " + std::to_string(form));
            DeviceBuffer send(encode(inputs(ncclSum, rank_, count), DType::bf16));
            DeviceBuffer recv(std::vector<char>(count * 2, 0x55));
            char* out = form == 0 ? recv.get() : send.get();
            const ncclResult_t res =
                form == 2 ? ncclBcast(out, count, ncclBfloat16, root, comm_, s_)
                          : ncclBroadcast(send.get(), out, count, ncclBfloat16, root, comm_, s_);
            EXPECT_EQ(res, ncclSuccess);
            EXPECT_EQ((form == 0 ? recv : send).read(s_),
                      encode(inputs(ncclSum, root, count), DType::bf16));
        }
}

TEST_F(Nccl, ReduceToEveryRoot) {
    const std::size_t count = 1000;
    for (int root = 0; root < size_; ++root)
        for (ncclRedOp_t op : {ncclSum, ncclAvg, ncclMin})
            for (bool in_place : {false, true}) {
                SCOPED_TRACE("root " + std::to_string(root) + " op " + std::to_string(op) +
                             (in_place ? " in place" : " out of place"));
                DeviceBuffer send(encode(inputs(op, rank_, count), DType::f16));
                DeviceBuffer recv(std::vector<char>(count * 2, 0x55));
                // Off the root, recvbuff may be NULL.
                char* out = in_place ? send.get() : rank_ == root ? recv.get() : nullptr;
                EXPECT_EQ(ncclReduce(send.get(), out, count, ncclFloat16, op, root, comm_, s_),
                          ncclSuccess);
                std::vector<float> want(count);
                for (std::size_t i = 0; i < count; ++i) want[i] = expected(op, size_, i);
                const std::vector<char> got = (in_place ? send : recv).read(s_);
                if (rank_ == root) {
                    EXPECT_EQ(got, encode(want, DType::f16));
                }
            }
}

// Random inputs: the result is the rank-order fp32 reduction, rounded once — the same bits on
// every rank (and every run).
TEST_F(Nccl, SameBitsOnEveryRank) {
    const std::size_t count = 4099;
    auto random_inputs = [&](int r) {
        std::mt19937 gen(1234u + unsigned(r));
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<float> v(count);
        for (float& x : v) x = u(gen);
        return v;
    };
    for (const FloatType& t : kFloatTypes)
        for (ncclRedOp_t op : {ncclSum, ncclAvg}) {
            SCOPED_TRACE(std::string(t.name) + " op " + std::to_string(op));
            DeviceBuffer buf(encode(random_inputs(rank_), t.dtype));
            EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), count, t.nccl, op, comm_, s_),
                      ncclSuccess);
            std::vector<float> acc(count, 0.0f);
            for (int r = 0; r < size_; ++r) {
                const std::vector<char> c = encode(random_inputs(r), t.dtype);
                for (std::size_t i = 0; i < count; ++i) {
                    const float x = shardlab::load_as_f32(c.data(), t.dtype, i);
                    acc[i] = r == 0 ? x : acc[i] + x;
                }
            }
            if (op == ncclAvg)
                for (float& a : acc) a /= float(size_);
            const std::vector<char> got = buf.read(s_);
            EXPECT_EQ(got, encode(acc, t.dtype));
            expect_same_on_every_rank(got);
        }
}

// --- point-to-point ------------------------------------------------------------------------------

// Each round every rank sends to rank+1 and receives from rank-1, 1 MiB each way: too large for
// MPI to buffer, so without the group every rank would wait in its send for a receive never
// posted. After round k a rank holds the data of rank - k.
TEST_F(Nccl, RingExchangeInAGroup) {
    const std::size_t count = 1 << 18;
    const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
    DeviceBuffer a(encode(inputs(ncclSum, rank_, count), DType::f32)), b(count * 4);
    char* cur = a.get();
    char* next = b.get();
    const int rounds = size_ + 2;
    for (int k = 1; k <= rounds; ++k) {
        EXPECT_EQ(ncclGroupStart(), ncclSuccess);
        EXPECT_EQ(ncclGroupStart(), ncclSuccess); // groups nest: only the outer End issues
        EXPECT_EQ(ncclSend(cur, count, ncclFloat32, right, comm_, s_), ncclSuccess);
        EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
        EXPECT_EQ(ncclRecv(next, count, ncclFloat32, left, comm_, s_), ncclSuccess);
        EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
        std::swap(cur, next);
    }
    const int origin = ((rank_ - rounds) % size_ + size_) % size_;
    DeviceBuffer& last = cur == a.get() ? a : b;
    EXPECT_EQ(last.read(s_), encode(inputs(ncclSum, origin, count), DType::f32));
}

// Outside a group each send and receive is its own stream task, matched in program order.
TEST_F(Nccl, SendAndRecvOutsideAGroup) {
    if (size_ < 2) GTEST_SKIP() << "needs two ranks";
    const std::size_t count = 5000;
    DeviceBuffer mine(encode(inputs(ncclSum, rank_, count), DType::f32)), got(count * 4);
    if (rank_ == 0) {
        EXPECT_EQ(ncclSend(mine.get(), count, ncclFloat32, 1, comm_, s_), ncclSuccess);
        EXPECT_EQ(ncclRecv(got.get(), count, ncclFloat32, 1, comm_, s_), ncclSuccess);
    } else if (rank_ == 1) {
        EXPECT_EQ(ncclRecv(got.get(), count, ncclFloat32, 0, comm_, s_), ncclSuccess);
        EXPECT_EQ(ncclSend(mine.get(), count, ncclFloat32, 0, comm_, s_), ncclSuccess);
    }
    if (rank_ < 2) {
        EXPECT_EQ(got.read(s_), encode(inputs(ncclSum, 1 - rank_, count), DType::f32));
    }
}

// --- several communicators -----------------------------------------------------------------------

// Three communicators at once — all processes, all reversed, and evens / odds (each of those two
// from its own id) — on two streams; then two of them in one group, called in a different order
// on odd and even ranks (NCCL runs a group's operations together, and so does the emulator).
TEST_F(Nccl, CommunicatorsDoNotInterfere) {
    const std::size_t count = 999;
    ncclComm_t rev = nullptr, half = nullptr;
    ASSERT_EQ(ncclCommInitRank(&rev, size_, shared_id(), size_ - 1 - rank_), ncclSuccess);
    const ncclUniqueId even = shared_id(0), odd = size_ > 1 ? shared_id(1) : even;
    const int half_size = (size_ - rank_ % 2 + 1) / 2;
    ASSERT_EQ(ncclCommInitRank(&half, half_size, rank_ % 2 ? odd : even, rank_ / 2), ncclSuccess)
        << ncclGetLastError(nullptr);
    cudaStream_t s2 = nullptr;
    ASSERT_EQ(cudaStreamCreate(&s2), cudaSuccess);

    DeviceBuffer x(encode(inputs(ncclSum, rank_, count), DType::f32));
    DeviceBuffer y(encode(inputs(ncclMax, rank_, count), DType::f32));
    DeviceBuffer z(encode(inputs(ncclSum, rank_, count), DType::f32));
    DeviceBuffer gathered(count * 4 * std::size_t(half_size));
    for (int round = 0; round < 3; ++round) { // sums of sums: rounds stay exact (|x| <= 11*4^3)
        EXPECT_EQ(ncclAllReduce(x.get(), x.get(), count, ncclFloat32, ncclSum, comm_, s_),
                  ncclSuccess);
        EXPECT_EQ(ncclAllReduce(y.get(), y.get(), count, ncclFloat32, ncclMax, rev, s2),
                  ncclSuccess);
    }
    EXPECT_EQ(ncclAllGather(z.get(), gathered.get(), count, ncclFloat32, half, s_), ncclSuccess);

    std::vector<float> want_x(count), want_y(count), want_g;
    for (std::size_t i = 0; i < count; ++i) {
        want_x[i] = expected(ncclSum, size_, i) * float(size_ * size_);
        want_y[i] = expected(ncclMax, size_, i);
    }
    for (int j = 0; j < half_size; ++j) { // member j of my half is world rank 2j + parity
        const std::vector<float> v = inputs(ncclSum, 2 * j + rank_ % 2, count);
        want_g.insert(want_g.end(), v.begin(), v.end());
    }
    EXPECT_EQ(x.read(s_), encode(want_x, DType::f32));
    EXPECT_EQ(y.read(s2), encode(want_y, DType::f32));
    EXPECT_EQ(gathered.read(s_), encode(want_g, DType::f32));

    DeviceBuffer p(encode(inputs(ncclSum, rank_, count), DType::f32));
    DeviceBuffer q(encode(inputs(ncclMin, rank_, count), DType::f32));
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    for (int k = 0; k < 2; ++k) {
        const bool on_p = (k == 0) == (rank_ % 2 == 0);
        EXPECT_EQ(on_p ? ncclAllReduce(p.get(), p.get(), count, ncclFloat32, ncclSum, comm_, s_)
                       : ncclAllReduce(q.get(), q.get(), count, ncclFloat32, ncclMin, rev, s_),
                  ncclSuccess);
    }
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    std::vector<float> want_p(count), want_q(count);
    for (std::size_t i = 0; i < count; ++i)
        want_p[i] = expected(ncclSum, size_, i), want_q[i] = expected(ncclMin, size_, i);
    EXPECT_EQ(p.read(s_), encode(want_p, DType::f32));
    EXPECT_EQ(q.read(s_), encode(want_q, DType::f32));

    EXPECT_EQ(cudaStreamDestroy(s2), cudaSuccess);
    EXPECT_EQ(ncclCommDestroy(rev), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(half), ncclSuccess);
}

// --- stream order --------------------------------------------------------------------------------

// The call returns at once; the operation reads its input when the stream reaches it — after a
// copy enqueued before it, held back here until the call has returned.
TEST_F(Nccl, RunsInStreamOrder) {
    const std::size_t count = 1000;
    DeviceBuffer fresh(encode(inputs(ncclSum, rank_, count), DType::f32));
    DeviceBuffer send(std::vector<char>(count * 4, 0)), recv(std::vector<char>(count * 4, 0x55));
    std::atomic<bool> gate{false}, watchdog_fired{false};
    std::thread watchdog([&] { // so that a call that blocked cannot hang the test
        for (int i = 0; i < 500 && !gate.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        watchdog_fired = !gate.exchange(true);
    });
    shardlab::emu::enqueue(s_, [&] {
        while (!gate.load()) std::this_thread::yield();
    });
    EXPECT_EQ(cudaMemcpyAsync(send.get(), fresh.get(), count * 4, cudaMemcpyDeviceToDevice, s_),
              cudaSuccess);
    EXPECT_EQ(ncclAllReduce(send.get(), recv.get(), count, ncclFloat32, ncclSum, comm_, s_),
              ncclSuccess);
    EXPECT_EQ(cudaStreamQuery(s_), cudaErrorNotReady);
    // Emulated device memory is host memory: peek that nothing was written yet.
    EXPECT_EQ(std::vector<char>(recv.get(), recv.get() + count * 4),
              std::vector<char>(count * 4, 0x55));
    gate = true;
    watchdog.join();
    EXPECT_FALSE(watchdog_fired.load()) << "ncclAllReduce waited for its stream";
    std::vector<float> want(count);
    for (std::size_t i = 0; i < count; ++i) want[i] = expected(ncclSum, size_, i);
    EXPECT_EQ(recv.read(s_), encode(want, DType::f32));
}

// --- messages cut into pieces --------------------------------------------------------------------

// Messages above INT_MAX bytes are cut into pieces; a small piece size exercises the same code
// on every operation (pieces of 10 fp32 / 20 bf16 elements, counts not a multiple of them).
TEST_F(Nccl, LargeMessagesAreCutIntoPieces) {
    shardlab::emu::nccl_set_piece_bytes(40);
    const std::size_t count = 1003, n = std::size_t(size_);
    check_all_reduce(kFloatTypes[0], ncclSum, count, false);
    check_all_reduce(kFloatTypes[1], ncclAvg, count, true);

    DeviceBuffer rs_in(encode(inputs(ncclSum, rank_, count * n), DType::f32)), rs_out(count * 4);
    DeviceBuffer ag_out(count * n * 4), bc(encode(inputs(ncclSum, rank_, count), DType::f32));
    DeviceBuffer red(count * 4), ring_in(bc.read(s_)), ring_out(count * 4);
    EXPECT_EQ(ncclReduceScatter(rs_in.get(), rs_out.get(), count, ncclFloat32, ncclSum, comm_, s_),
              ncclSuccess);
    EXPECT_EQ(ncclAllGather(ring_in.get(), ag_out.get(), count, ncclFloat32, comm_, s_),
              ncclSuccess);
    EXPECT_EQ(ncclReduce(ring_in.get(), red.get(), count, ncclFloat32, ncclMax, 0, comm_, s_),
              ncclSuccess);
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclSend(ring_in.get(), count, ncclFloat32, (rank_ + 1) % size_, comm_, s_),
              ncclSuccess);
    EXPECT_EQ(ncclRecv(ring_out.get(), count, ncclFloat32, (rank_ + size_ - 1) % size_, comm_, s_),
              ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(ncclBroadcast(bc.get(), bc.get(), count, ncclFloat32, size_ - 1, comm_, s_),
              ncclSuccess);

    std::vector<float> want_rs(count), want_red(count), want_ag;
    for (std::size_t i = 0; i < count; ++i) {
        want_rs[i] = expected(ncclSum, size_, std::size_t(rank_) * count + i);
        want_red[i] = expected(ncclMax, size_, i);
    }
    for (int r = 0; r < size_; ++r) {
        const std::vector<float> v = inputs(ncclSum, r, count);
        want_ag.insert(want_ag.end(), v.begin(), v.end());
    }
    EXPECT_EQ(rs_out.read(s_), encode(want_rs, DType::f32));
    EXPECT_EQ(ag_out.read(s_), encode(want_ag, DType::f32));
    if (rank_ == 0) {
        EXPECT_EQ(red.read(s_), encode(want_red, DType::f32));
    }
    EXPECT_EQ(ring_out.read(s_),
              encode(inputs(ncclSum, (rank_ + size_ - 1) % size_, count), DType::f32));
    EXPECT_EQ(bc.read(s_), encode(inputs(ncclSum, size_ - 1, count), DType::f32));
    shardlab::emu::nccl_set_piece_bytes(std::size_t(1) << 30);
}

// --- refused calls -------------------------------------------------------------------------------

TEST_F(Nccl, RefusesInvalidArguments) {
    DeviceBuffer buf(4096);
    char* d = buf.get();
    std::vector<float> host(16);
    auto refused = [](ncclResult_t r, const char* call, const char* about) {
        EXPECT_EQ(r, ncclInvalidArgument);
        EXPECT_TRUE(contains(ncclGetLastError(nullptr), call)) << ncclGetLastError(nullptr);
        EXPECT_TRUE(contains(ncclGetLastError(nullptr), about)) << ncclGetLastError(nullptr);
    };
    refused(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, nullptr, s_), "ncclAllReduce", "comm");
    // (13: no type, yet inside the enum's range; a value past its range, such as 42, would be
    // undefined behaviour before the call is made, which UBSan reports.)
    refused(ncclAllReduce(d, d, 4, ncclDataType_t(13), ncclSum, comm_, s_), "ncclAllReduce",
            "datatype");
    refused(ncclAllReduce(d, d, 4, ncclFloat32, ncclRedOp_t(9), comm_, s_), "ncclAllReduce", "op");
    refused(ncclAllReduce(d, d, 4, ncclFloat8e4m3, ncclSum, comm_, s_), "ncclAllReduce", "fp8");
    refused(ncclAllReduce(nullptr, d, 4, ncclFloat32, ncclSum, comm_, s_), "ncclAllReduce",
            "sendbuff is NULL");
    refused(ncclAllReduce(host.data(), d, 4, ncclFloat32, ncclSum, comm_, s_), "ncclAllReduce",
            "pageable");
    refused(ncclSend(d, 4, ncclFloat32, size_, comm_, s_), "ncclSend", "peer");
    refused(ncclRecv(d, 4, ncclFloat32, -1, comm_, s_), "ncclRecv", "peer");
    refused(ncclBroadcast(d, d, 4, ncclFloat32, size_, comm_, s_), "ncclBroadcast", "root");
    refused(ncclReduce(d, d, 4, ncclFloat32, ncclMax, -1, comm_, s_), "ncclReduce", "root");
    refused(ncclReduceScatter(d, nullptr, 4, ncclFloat32, ncclSum, comm_, s_), "ncclReduceScatter",
            "recvbuff");
    refused(ncclAllGather(d, d, SIZE_MAX / 2, ncclFloat32, comm_, s_), "ncclAllGather",
            "too large");
    // Nothing to move: NULL buffers are fine.
    EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm_, s_), ncclSuccess);

    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
    // A refused call inside a group refuses the group: nothing in it runs, on any rank.
    DeviceBuffer sum(encode(inputs(ncclSum, rank_, 64), DType::f32));
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(sum.get(), sum.get(), 64, ncclFloat32, ncclSum, comm_, s_),
              ncclSuccess);
    EXPECT_EQ(ncclBroadcast(d, d, 4, ncclFloat32, -3, comm_, s_), ncclInvalidArgument);
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "root")) << ncclGetLastError(nullptr);
    EXPECT_EQ(sum.read(s_), encode(inputs(ncclSum, rank_, 64), DType::f32));
}

// --- failures and abort (own streams: a failure is the device's sticky error) --------------------

// A receive shorter than the message fails inside the task: the stream reports the device's
// sticky error, naming the call and MPI's error, and the communicator reports an async error.
TEST(NcclFailure, MpiErrorInATaskIsStickyAndAsync) {
    const int rank = world_rank(), n = world_size();
    // Open MPI's path to the process itself truncates without an error.
    if (n < 2) GTEST_SKIP() << "needs two ranks";
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, n, shared_id(), rank), ncclSuccess);
    DeviceBuffer big(std::vector<char>(32, 1)), small(16);
    EXPECT_EQ(ncclGroupStart(), ncclSuccess); // each rank's receive fails alike: none hangs
    EXPECT_EQ(ncclSend(big.get(), 8, ncclInt32, (rank + 1) % n, comm, s), ncclSuccess);
    EXPECT_EQ(ncclRecv(small.get(), 4, ncclInt32, (rank + n - 1) % n, comm, s), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorLaunchFailure);
    EXPECT_TRUE(contains(shardlab::emu::last_fault(), "ncclRecv: MPI_Irecv failed"))
        << shardlab::emu::last_fault();
    EXPECT_TRUE(contains(shardlab::emu::last_fault(), "MPI_ERR_TRUNCATE"))
        << shardlab::emu::last_fault();
    ncclResult_t async = ncclSuccess;
    EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_EQ(async, ncclRemoteError);
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
    shardlab::emu::reset_device();
    MPI_Barrier(MPI_COMM_WORLD);
}

// Abort returns at once, releases an operation waiting for a peer that never comes, and drops the
// operations queued behind it; the stream completes without an error.
TEST(NcclFailure, AbortReleasesAWaitingOperation) {
    const int rank = world_rank();
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, world_size(), shared_id(), rank), ncclSuccess);
    DeviceBuffer buf(std::vector<char>(64, 0x55));
    EXPECT_EQ(ncclRecv(buf.get(), 16, ncclFloat32, rank, comm, s), ncclSuccess); // never sent
    EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), 16, ncclFloat32, ncclSum, comm, s), ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // let the receive start waiting
    EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess) << shardlab::emu::last_fault();
    EXPECT_EQ(buf.read(s), std::vector<char>(64, 0x55));
    EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
    MPI_Barrier(MPI_COMM_WORLD);
}

} // namespace
