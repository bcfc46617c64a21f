// Device buffers over a host transport: each exchange's outgoing bytes are copied into pinned host
// memory, the host transport (MPI) moves them, and the incoming bytes are copied back to the
// device — all three in the stream's order, so the caller sees an ordinary Transport. This is how
// ranks that share one GPU talk (NCCL cannot put two ranks on one GPU), and how a GPU job runs
// without NCCL. The staging is tracked as host `comm_buffers` and released in stream order.
//
// The host transport runs on a host stream of its own (a worker thread), ordered with the
// device stream by events both ways: the host stream's worker waits for the device's event, and
// the device stream waits for the host stream's event on a word of pinned memory
// (core/cuda/host_signal.h). MPI is never called from a CUDA host function, where a CUDA-aware
// MPI's own CUDA calls are forbidden, and no host function waits for a peer: CUDA may run all of
// a process's host functions on one thread (docs/GPU.md).
#pragma once

#include "comm/transport.h"
#include "core/memory_tracker.h"

#include <memory>

namespace shardlab {

class StagedTransport : public Transport {
  public:
    // `host_stream`: where the host transport's work runs (e.g. a CpuStream).
    StagedTransport(std::unique_ptr<Transport> host, std::unique_ptr<Stream> host_stream,
                    MemoryTracker& tracker)
        : host_(std::move(host)), host_stream_(std::move(host_stream)), tracker_(tracker) {}
    ~StagedTransport() override;
    StagedTransport(const StagedTransport&) = delete;
    StagedTransport& operator=(const StagedTransport&) = delete;

    int rank() const override { return host_->rank(); }
    int size() const override { return host_->size(); }
    void native(Stream& s, const CollectiveCall& call) override;
    void native_barrier(Stream& s) override;
    void begin_call(const CollectiveId& id) override {
        Transport::begin_call(id);
        host_->begin_call(id);
    }
    void set_timeout(double seconds) override { host_->set_timeout(seconds); }
    void set_group_name(const std::string& name) override { host_->set_group_name(name); }

  protected:
    void post(Stream& s, const std::vector<Transfer>& transfers) override;

  private:
    Allocation staging(Stream& s, std::size_t bytes) {
        return tracker_.allocate(bytes, Category::comm_buffers, s, Arena::host);
    }

    // The host transport's work on the host stream, between the device stream's events.
    template <typename Work>
    void on_host(Stream& s, Work&& work) {
        host_stream_->wait(s.record());
        work(*host_stream_);
        s.wait(host_stream_->record());
    }

    std::unique_ptr<Transport> host_;
    std::unique_ptr<Stream> host_stream_;
    MemoryTracker& tracker_;
};

} // namespace shardlab
