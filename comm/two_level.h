// The two levels a hierarchical collective runs on, seen from one rank of a layout whose nodes
// all hold L ranks (M nodes): its node's ranks (the intra-node group, ordered by rank) and the
// ranks that have its place in every node (the inter-node group, ordered by node). Each is a
// SubTransport of the collective's own transport, so bytes are counted, and messages tagged, as
// the whole collective's.
#pragma once

#include "comm/collective_context.h"
#include "comm/sub_transport.h"

#include <vector>

namespace shardlab {

struct TwoLevel {
    int nodes = 1, per_node = 1;          // M, L
    int node = 0, local = 0;              // this rank's node and place in it
    std::vector<std::vector<int>> member; // member[m][l]: the rank at place l of node m
    SubTransport intra, inter;

    // Throws UsageError unless c.layout gives every node the same number of ranks.
    explicit TwoLevel(CollectiveContext& c);
    CollectiveContext intra_context(CollectiveContext& c) { return sub(c, intra); }
    CollectiveContext inter_context(CollectiveContext& c) { return sub(c, inter); }

  private:
    static CollectiveContext sub(CollectiveContext& c, SubTransport& t) {
        return {t, c.elements, c.stream, c.tracker, nullptr, nullptr};
    }
};

} // namespace shardlab
