// How a CUDA stream waits for the host without a host function that blocks. CUDA may run every
// host function of a process (cudaLaunchHostFunc) on one driver thread, so a host function that
// waits — for an MPI exchange, for another stream — stops every other stream's host functions
// too, and two ranks sharing a GPU hung that way on an H200 (docs/DECISIONS.md, issue 27). Here
// the stream waits on memory instead: cuStreamWaitValue32 on a word of pinned, mapped host memory
// that the host writes when the awaited host work is done. Nothing on CUDA's side blocks, and
// the host side is a plain store. Included by .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>

namespace shardlab::cuda {

// One stream's word: tickets 1, 2, ... in the order the stream's waits were enqueued; the word
// holds the highest ticket below which every ticket is done, so a ticket done early does not
// release an earlier wait (the waits are in stream order anyway).
class HostSignal {
  public:
    HostSignal();
    ~HostSignal(); // after every wait on it has passed (its owners: the stream and the writers)
    HostSignal(const HostSignal&) = delete;
    HostSignal& operator=(const HostSignal&) = delete;

    // Work enqueued on `s` after this starts once done(ticket) has been called for the returned
    // ticket (and every earlier one).
    std::uint32_t wait(cudaStream_t s);
    // Any thread, no CUDA call: a plain store to pinned memory.
    void done(std::uint32_t ticket);

  private:
    std::uint32_t* word_ = nullptr; // pinned, mapped
    void* device_word_ = nullptr;   // the same word as the device addresses it
    std::mutex mutex_;
    std::uint32_t issued_ = 0, released_ = 0;
    std::set<std::uint32_t> early_; // done, but an earlier ticket is not
};

} // namespace shardlab::cuda
