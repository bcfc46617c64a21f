// A token stream cut into consecutive, non-overlapping windows of T+1 tokens: window w is tokens
// [w(T+1), (w+1)(T+1)); its first T tokens are the input and its last T the targets. A trailing
// partial window is dropped.
#pragma once

#include "core/error.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace shardlab {

// The first window of micro-batch `a` of `step` on `rank`, when `ranks` ranks each run `accum`
// micro-batches of `micro_batch` windows a step: ((step·A + a)·N + rank)·B. So a step reads
// windows [step·G, (step+1)·G) with G = A·N·B, each once: every split of the same global batch
// trains on the same samples, and a window's index is its place in the global batch wherever it
// runs (the order issue 23's rank-count-independent sums follow).
inline std::size_t first_window(int step, int a, int rank, int ranks, int accum, int micro_batch) {
    return ((std::size_t(step) * accum + a) * ranks + rank) * micro_batch;
}

class TokenWindows {
  public:
    TokenWindows(const std::vector<std::uint16_t>& tokens, int seq) : tokens_(tokens), seq_(seq) {}
    std::size_t count() const { return tokens_.size() / (std::size_t(seq_) + 1); }
    // Whether windows first .. first+batch-1 are all there; written so that no sum wraps, so a
    // first window past the end is refused, not wrapped round.
    bool holds(std::size_t first, int batch) const {
        return batch >= 0 && first <= count() && std::size_t(batch) <= count() - first;
    }

    // Copies windows first .. first+batch-1 into inputs / targets [batch, T].
    void fill(std::size_t first, int batch, std::uint16_t* inputs, std::uint16_t* targets) const {
        check(holds(first, batch), "asked for windows " + std::to_string(first) + ".." +
                                       std::to_string(first + batch - 1) + " but the data holds " +
                                       std::to_string(count()) + " windows of " +
                                       std::to_string(seq_ + 1) +
                                       " tokens; use a smaller --batch or --seq, or more data");
        for (int b = 0; b < batch; ++b) {
            const std::uint16_t* w = tokens_.data() + (first + b) * (std::size_t(seq_) + 1);
            std::memcpy(inputs + std::size_t(b) * seq_, w, seq_ * sizeof(std::uint16_t));
            std::memcpy(targets + std::size_t(b) * seq_, w + 1, seq_ * sizeof(std::uint16_t));
        }
    }

    // Like fill, with window indices taken modulo count(): the stream repeats (epochs).
    void fill_wrapped(std::size_t first, int batch, std::uint16_t* inputs,
                      std::uint16_t* targets) const {
        for (int b = 0; b < batch; ++b)
            fill((first + std::size_t(b)) % count(), 1, inputs + std::size_t(b) * seq_,
                 targets + std::size_t(b) * seq_);
    }

  private:
    const std::vector<std::uint16_t>& tokens_;
    int seq_;
};

} // namespace shardlab
