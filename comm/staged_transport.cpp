// Stage out, move, stage in.
#include "comm/staged_transport.h"

#include <exception>
#include <vector>

namespace shardlab {

// Unwinding from an error, the host stream may wait for a peer that is gone: do not wait long.
StagedTransport::~StagedTransport() {
    if (std::uncaught_exceptions() > 0) host_stream_->abandon(1.0);
}

void StagedTransport::native_barrier(Stream& s) {
    on_host(s, [&](Stream& h) { host_->native_barrier(h); });
}

void StagedTransport::post(Stream& s, const std::vector<Transfer>& transfers) {
    std::vector<Allocation> host(transfers.size());
    std::vector<Transfer> staged = transfers;
    for (std::size_t i = 0; i < transfers.size(); ++i) {
        host[i] = staging(s, transfers[i].bytes);
        staged[i].buf = host[i].data();
        if (transfers[i].is_send) s.memcpy(staged[i].buf, transfers[i].buf, transfers[i].bytes);
    }
    on_host(s, [&](Stream& h) { host_->exchange(h, staged); });
    for (std::size_t i = 0; i < transfers.size(); ++i)
        if (!transfers[i].is_send) s.memcpy(transfers[i].buf, staged[i].buf, transfers[i].bytes);
}

// The whole send and receive buffers are staged; when one lies inside the other (an in-place
// call), one staging buffer holds both at the same offset, so the host library sees it in place.
void StagedTransport::native(Stream& s, const CollectiveCall& call) {
    const CallSizes sz = call_sizes(call.op, call.count, size(), rank(), call.root);
    const std::size_t es = dtype_size(call.dtype);
    const auto* send = static_cast<const char*>(call.send);
    auto* recv = static_cast<char*>(call.recv);
    const std::size_t send_bytes = sz.send * es, recv_bytes = sz.recv * es;
    const bool send_in_recv = sz.recv && send >= recv && send + send_bytes <= recv + recv_bytes;
    const bool recv_in_send = sz.send && recv >= send && recv + recv_bytes <= send + send_bytes;

    CollectiveCall staged = call;
    Allocation a, b;
    if (send_in_recv) {
        a = staging(s, recv_bytes);
        s.memcpy(a.data(), recv, recv_bytes);
        staged.recv = a.data();
        staged.send = a.as<char>() + (send - recv);
    } else if (recv_in_send) {
        a = staging(s, send_bytes);
        s.memcpy(a.data(), send, send_bytes);
        staged.send = a.data();
        staged.recv = a.as<char>() + (recv - send);
    } else {
        a = staging(s, send_bytes);
        b = staging(s, recv_bytes);
        s.memcpy(a.data(), send, send_bytes);
        staged.send = a.data();
        staged.recv = b.data();
    }
    on_host(s, [&](Stream& h) { host_->native(h, staged); });
    if (recv_bytes) s.memcpy(recv, staged.recv, recv_bytes);
}

} // namespace shardlab
