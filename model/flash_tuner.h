// The fastest form of each mma flash kernel, found by timing them on the GPU that runs them
// ($SHARDLAB_CUDA_FLASH=auto, the default on a GPU). The forms (flash_attention_path.h: plain,
// regs, wide) give the same bits, so which one runs changes only the time; which is fastest depends
// on the GPU (shared-memory bandwidth against occupancy) and the shape. On the first call for a
// shape each form is timed on the call's stream, the host waiting for the events: once per shape,
// in the first step, never in a warm one. Then every call runs the forms chosen.
//
// The backward's two kernels (dK/dV, then dQ) run one after the other in every call, so they are
// timed one at a time: the dK/dV kernel's forms with dQ plain, then dQ's forms with the dK/dV form
// chosen. Each time is the whole backward's, the other kernel's share the same in each comparison.
#pragma once

#include "core/dtype.h"
#include "core/stream.h"
#include "model/kernels/cuda/flash_attention_path.h"

#include <array>
#include <functional>
#include <map>
#include <string>
#include <tuple>

namespace shardlab {

// What a flash call's time depends on besides the forms.
struct FlashShape {
    DType dtype;
    int B, T, C, H, Hkv;
    int head_dim() const { return C / H; }
    bool operator<(const FlashShape& o) const { // a map key (C++17: the .cu files' standard)
        return std::tie(dtype, B, T, C, H, Hkv) < std::tie(o.dtype, o.B, o.T, o.C, o.H, o.Hkv);
    }
};

class FlashTuner {
  public:
    // Enqueues one forward, or one backward, on the stream with the given kernels.
    using Run = std::function<void(const cuda::FlashKernels&)>;

    // Each form is launched once untimed (a first launch loads the module), then `timed_runs`
    // times, its best time kept.
    explicit FlashTuner(int timed_runs) : timed_runs_(timed_runs) {}

    // Runs the forward (backward) of `shape` once, in the forms chosen for it: timing each form
    // first if the shape is new, the last of those runs being the call's (every form writes the
    // same bits).
    void forward(Stream& s, const FlashShape& shape, const Run& run);
    void backward(Stream& s, const FlashShape& shape, const Run& run);

    // The forms chosen for the shape of storage t and this head dim timed last, and their times:
    // "auto: forward mma_wide, dK/dV mma_regs, dQ mma_wide (forward ms: mma 0.312 mma_regs 0.305
    // mma_wide 0.248; backward by dK/dV form ms: ...)"; "auto" before any.
    std::string describe(DType t, int head_dim) const;

  private:
    using Times = std::array<double, 3>; // milliseconds, by MmaForm
    struct Choice {
        bool forward_timed = false, backward_timed = false;
        cuda::FlashKernels kernels;
        Times forward_ms{}, kv_ms{}, q_ms{};
    };
    double best_ms(Stream& s, const Run& run, const cuda::FlashKernels& k) const;

    int timed_runs_;
    std::map<FlashShape, Choice> choices_;
    std::map<std::pair<DType, int>, FlashShape> last_; // by storage and head dim
};

} // namespace shardlab
