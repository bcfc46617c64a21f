// Sum of squares in double, deterministic: a part of n elements is cut into a number of blocks
// that depends on n only; each thread sums its strided elements in order (their loads issued
// ahead of the adds: in_order.h), each block its threads by a fixed tree into one partial; then
// the partials are added by a fixed tree too (thread i of one block takes partials i, i + 256, ...
// in order). The same parts give the same bits on every call — what keeps ZeRO stages bitwise
// equal on a GPU.
//
// The parts go kNormParts to a launch, their table passed by value as the kernel's argument
// (part_table.h): a GPT-2 step's 14 unit shards are one launch (the first GPU run measured 1.0 ms
// for the norm, with a launch per unit and a one-thread finish over some 13,000 partials).
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/in_order.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/part_table.h"
#include "model/kernels/cuda/warp_reduce.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;
constexpr std::size_t kMaxBlocks = 1024;
constexpr int kNormParts = 32;

struct NormPart {
    const void* x;
    std::size_t n;
    std::size_t first_block; // of this launch's grid; its partials start at the same offset
    DType dtype;
};
struct NormParts {
    NormPart part[kNormParts];
    int count;
};

// How many blocks (and partials) a part of numel elements gets: a function of numel alone.
__host__ __device__ std::size_t part_blocks(std::size_t numel) {
    const std::size_t blocks = (numel + kThreads - 1) / kThreads;
    return blocks < 1 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : blocks;
}

template <typename T>
__device__ double squares(const void* x, std::size_t n, std::size_t block, std::size_t blocks) {
    const T* v = static_cast<const T*>(x);
    const std::size_t first = block * kThreads + threadIdx.x, stride = blocks * kThreads;
    const std::size_t mine = first < n ? (n - first + stride - 1) / stride : 0;
    double s = 0;
    in_order(
        mine, [&](std::size_t j) { return v[first + j * stride]; },
        [&](T x) {
            const double e = to_f32(x);
            s += e * e;
        });
    return s;
}

// One block per (part, block of it); partial[blockIdx.x] is that block's sum.
__global__ void squared_norm_kernel(NormParts parts, double* partial) {
    const NormPart& part = parts.part[part_of_block(parts)];
    const std::size_t block = blockIdx.x - part.first_block;
    const std::size_t blocks = part_blocks(part.n);
    double s = 0;
    switch (part.dtype) {
    case DType::f32:
        s = squares<float>(part.x, part.n, block, blocks);
        break;
    case DType::bf16:
        s = squares<__nv_bfloat16>(part.x, part.n, block, blocks);
        break;
    default:
        s = squares<__half>(part.x, part.n, block, blocks);
        break;
    }
    s = block_reduce<kThreads>(s, Plus{});
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void sum_partials_kernel(const double* partials, std::size_t count, float* out) {
    double s = 0;
    for (std::size_t i = threadIdx.x; i < count; i += kThreads) s += partials[i];
    s = block_reduce<kThreads>(s, Plus{});
    if (threadIdx.x == 0) *out = float(s);
}
} // namespace

std::size_t squared_norm_scratch(const NormInput* parts, std::size_t count) {
    std::size_t blocks = 0;
    for (std::size_t i = 0; i < count; ++i) blocks += part_blocks(parts[i].numel);
    return blocks;
}

void squared_norm(cudaStream_t s, const NormInput* parts, std::size_t count, double* partials,
                  float* out) {
    std::size_t at = 0; // partials written so far
    for (std::size_t first = 0; first < count; first += kNormParts) {
        NormParts batch{};
        std::size_t blocks = 0;
        for (std::size_t i = first; i < count && batch.count < kNormParts; ++i) {
            check(parts[i].dtype != DType::i64, "internal: the squared norm of an int64 tensor");
            batch.part[batch.count++] = {parts[i].data, parts[i].numel, blocks, parts[i].dtype};
            blocks += part_blocks(parts[i].numel);
        }
        launch("squared_norm", squared_norm_kernel, unsigned(blocks), kThreads, 0, s, batch,
               partials + at);
        at += blocks;
    }
    launch("squared_norm_finish", sum_partials_kernel, 1, kThreads, 0, s, partials, at, out);
}

} // namespace shardlab::cuda
