// Device buffers over a host transport: each exchange's outgoing bytes are copied into pinned host
// memory, the host transport (MPI) moves them, and the incoming bytes are copied back to the
// device — all three in the stream's order, so the caller sees an ordinary Transport. This is how
// ranks that share one GPU talk (NCCL cannot put two ranks on one GPU), and how a GPU job runs
// without NCCL. The staging is tracked as host `comm_buffers` and released in stream order.
#pragma once

#include "comm/transport.h"
#include "core/memory_tracker.h"

#include <memory>

namespace shardlab {

class StagedTransport : public Transport {
  public:
    StagedTransport(std::unique_ptr<Transport> host, MemoryTracker& tracker)
        : host_(std::move(host)), tracker_(tracker) {}

    int rank() const override { return host_->rank(); }
    int size() const override { return host_->size(); }
    void native(Stream& s, const CollectiveCall& call) override;
    void native_barrier(Stream& s) override { host_->native_barrier(s); }

  protected:
    void post(Stream& s, const std::vector<Transfer>& transfers) override;

  private:
    Allocation staging(Stream& s, std::size_t bytes) {
        return tracker_.allocate(bytes, Category::comm_buffers, s, Arena::host);
    }

    std::unique_ptr<Transport> host_;
    MemoryTracker& tracker_;
};

} // namespace shardlab
