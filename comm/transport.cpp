// Byte accounting around the transports' exchanges.
#include "comm/transport.h"

#include "core/error.h"

namespace shardlab {

void Transport::exchange(Stream& s, const std::vector<Transfer>& transfers) {
    for (const Transfer& t : transfers) {
        (t.is_send ? bytes_sent_ : bytes_received_) += t.bytes;
        if (t.is_send)
            node_of_.empty() ? void(sent_by_link_.intra_node += t.bytes)
                             : sent_by_link_.add(node_of_[rank()], node_of_[t.peer], t.bytes);
    }
    post(s, transfers);
}

void Transport::set_nodes(const NodeLayout& layout) {
    check(layout.size() == size(), "a node layout of " + std::to_string(layout.size()) +
                                       " ranks for a transport of " + std::to_string(size()));
    node_of_.clear();
    for (int r = 0; r < layout.size(); ++r) node_of_.push_back(layout.node(r));
}

void Transport::sendrecv(Stream& s, const void* send_buf, std::size_t send_bytes, int dst,
                         void* recv_buf, std::size_t recv_bytes, int src) {
    exchange(s, {{false, recv_buf, recv_bytes, src},
                 {true, const_cast<void*>(send_buf), send_bytes, dst}});
}

void Transport::send(Stream& s, const void* buf, std::size_t bytes, int dst) {
    exchange(s, {{true, const_cast<void*>(buf), bytes, dst}});
}

void Transport::recv(Stream& s, void* buf, std::size_t bytes, int src) {
    exchange(s, {{false, buf, bytes, src}});
}

} // namespace shardlab
