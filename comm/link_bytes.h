// Bytes split by the class of link they cross: to a rank on the same node (`intra_node`: shared
// memory, NVLink) or to a rank on another node (`inter_node`: the network). The transport counts
// every byte it sends this way, by the peer's node; the communication model predicts the same
// split, so tests and reports can hold one against the other per link class.
#pragma once

#include <cstdint>

namespace shardlab {

struct LinkBytes {
    std::uint64_t intra_node = 0;
    std::uint64_t inter_node = 0;

    std::uint64_t total() const { return intra_node + inter_node; }
    LinkBytes& operator+=(const LinkBytes& o) {
        intra_node += o.intra_node;
        inter_node += o.inter_node;
        return *this;
    }
    friend LinkBytes operator-(LinkBytes a, const LinkBytes& b) {
        a.intra_node -= b.intra_node;
        a.inter_node -= b.inter_node;
        return a;
    }
    // Written out, not defaulted: nvcc compiles the .cu files that include this as C++17.
    friend bool operator==(const LinkBytes& a, const LinkBytes& b) {
        return a.intra_node == b.intra_node && a.inter_node == b.inter_node;
    }
    friend bool operator!=(const LinkBytes& a, const LinkBytes& b) { return !(a == b); }
    // Adds `bytes` to the class of a link between nodes a and b.
    void add(int node_a, int node_b, std::uint64_t bytes) {
        (node_a == node_b ? intra_node : inter_node) += bytes;
    }
};

} // namespace shardlab
