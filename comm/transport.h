// Transport: how bytes move between ranks — point-to-point transfers grouped into one exchange
// and run in a stream's order (the shape of NCCL's ncclGroupStart / ncclSend / ncclRecv /
// ncclGroupEnd), plus the library's own collectives for comparison. shardlab's collective
// algorithms (comm/algorithms.h) are written against this interface only: MPI on the CPU
// (comm/mpi_transport.h), NCCL on GPUs. Bytes are counted here, as they are handed over — in all
// and by the class of link to the peer (comm/link_bytes.h), once the node layout is known.
#pragma once

#include "comm/collective_id.h"
#include "comm/collective_op.h"
#include "comm/link_bytes.h"
#include "comm/node_layout.h"
#include "core/stream.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

// One transfer of an exchange: send `bytes` from buf to peer, or receive them from peer.
struct Transfer {
    bool is_send = true;
    void* buf = nullptr;
    std::size_t bytes = 0;
    int peer = 0;
};

class Transport {
  public:
    virtual ~Transport() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;

    // Posts all transfers at once and completes them all, in `s`'s order: no transfer waits for
    // another of the same exchange, so a ring step's send and receive cannot deadlock.
    void exchange(Stream& s, const std::vector<Transfer>& transfers);
    void sendrecv(Stream& s, const void* send_buf, std::size_t send_bytes, int dst, void* recv_buf,
                  std::size_t recv_bytes, int src);
    void send(Stream& s, const void* buf, std::size_t bytes, int dst);
    void recv(Stream& s, void* buf, std::size_t bytes, int src);

    // The library's own implementation of a collective / barrier (MPI_*, nccl*), in s's order.
    virtual void native(Stream& s, const CollectiveCall& call) = 0;
    virtual void native_barrier(Stream& s) = 0;

    // The collective the next exchanges belong to, set by the Communicator before it enqueues
    // one: transports tag messages with it and report it when a wait times out.
    virtual void begin_call(const CollectiveId& id) { call_ = id; }
    // How long one collective may wait for its peers before the watchdog ends the job (<= 0:
    // forever). The MPI transports have a watchdog (comm/mpi_watchdog.h); NCCL's waits are on the
    // GPU.
    virtual void set_timeout(double /*seconds*/) {}
    // The group's name for the watchdog's report (comm/process_groups.h: "replicate").
    virtual void set_group_name(const std::string& /*name*/) {}

    std::uint64_t bytes_sent() const { return bytes_sent_; }
    std::uint64_t bytes_received() const { return bytes_received_; }
    // Bytes sent, split by whether the peer is on this rank's node. Until set_nodes is called
    // every rank counts as one node's (all intra_node).
    LinkBytes sent_by_link() const { return sent_by_link_; }
    void set_nodes(const NodeLayout& layout);

  protected:
    const CollectiveId& call() const { return call_; }
    virtual void post(Stream& s, const std::vector<Transfer>& transfers) = 0;

  private:
    CollectiveId call_;
    std::uint64_t bytes_sent_ = 0, bytes_received_ = 0;
    LinkBytes sent_by_link_;
    std::vector<int> node_of_; // by rank of this transport; empty: one node
};

} // namespace shardlab
