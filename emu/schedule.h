// The order in which the SIMT emulator runs a block's CUDA threads between barriers (test
// infrastructure). CUDA promises no order, so a kernel that is only right in one order has a race;
// SHARDLAB_EMU_SCHEDULE picks the order to expose it: `forward` (thread 0 first, the default),
// `reverse`, or `random:SEED` (a fresh permutation every round, and threads also give way at
// random points inside a barrier interval). The same seed gives the same interleaving in every
// block, whichever OS thread runs it, so a failure reproduces from the seed it prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab::emu {

class Schedule {
  public:
    enum class Kind { forward, reverse, random };
    // Parses forward | reverse | random:SEED; throws std::invalid_argument on anything else.
    static Schedule parse(const std::string& text);
    // SHARDLAB_EMU_SCHEDULE's (forward when unset), read once; announced on stderr when not
    // forward.
    static const Schedule& process();

    Kind kind() const { return kind_; }
    const std::string& text() const { return text_; }

    // One block's source of decisions: seeded by the schedule, the kernel and the block only.
    class Block {
      public:
        Block() = default;
        Block(const Schedule& s, const char* kernel, std::uint64_t block_linear) {
            start(s, kernel, block_linear);
        }
        // Seeds it for another block, keeping the order's storage (one allocation per OS
        // thread, not one per block: under AddressSanitizer each was a fresh page in time).
        void start(const Schedule& s, const char* kernel, std::uint64_t block_linear);
        // The order of `n` threads for the next round (a permutation of 0..n-1).
        const std::vector<unsigned>& next_round(unsigned n);
        // Whether the running thread gives way now (random schedules only; about one in four).
        bool yield_now();

      private:
        std::uint64_t next();
        Kind kind_ = Kind::forward;
        std::uint64_t state_ = 0;
        std::vector<unsigned> order_;
    };

  private:
    Kind kind_ = Kind::forward;
    std::uint64_t seed_ = 0;
    std::string text_ = "forward";
};

} // namespace shardlab::emu
