// What the emulator does to hold the CUDA backend to what CUDA promises rather than to one
// convenient order (docs/GPU.md, "CUDA behaviours shardlab relies on"):
// - SHARDLAB_EMU_HOSTFN=serial (default): every host function of the process (cudaLaunchHostFunc)
//   runs on one emulated driver thread, in the order the streams reach them, so one that blocks
//   blocks all later ones, of every stream — as CUDA may do. `free`: each stream's worker runs its
//   own (the old behaviour, for debugging).
// - SHARDLAB_EMU_STREAMS=interleave:SEED (default interleave:1): before each operation a stream
//   sleeps for a time drawn from a generator seeded by (SEED, the stream's creation index), and
//   the seed gives each stream its own pace, so work that no event orders runs in a different,
//   reproducible order per seed. `issue`: no delays (the old behaviour).
// - SHARDLAB_EMU_STALL=hostfn:K | op:K: on rank 1 (Open MPI's or PMIx's rank variable) the K-th
//   host function, or the K-th stream operation of any kind, never returns (the device watchdog's
//   test).
// Internal to emu/: the runtime routes every stream operation through wrap_operation.
#pragma once

#include <functional>
#include <string>

namespace shardlab::emu {

// One stream's schedule: its creation index decides its generator and its pace.
struct StreamSchedule {
    unsigned index = 0;
    double mean_delay_s = 0; // 0: this stream does not delay its operations
    unsigned long long state = 0;
};

StreamSchedule new_stream_schedule();

// The operation as the stream's worker will run it: delayed as the schedule says, stalled if it is
// the one SHARDLAB_EMU_STALL names, and for a host function run on the host-function thread.
std::function<void()> wrap_operation(StreamSchedule& schedule, std::function<void()> fn,
                                     bool host_function);

// "interleave:SEED (SHARDLAB_EMU_STREAMS=...)", or "issue order": what a failure report names so
// that a run can be repeated.
std::string schedule_description();

} // namespace shardlab::emu
