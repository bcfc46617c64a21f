// Building the two groups from the layout.
#include "comm/two_level.h"

#include "core/error.h"

namespace shardlab {

namespace {
const NodeLayout& checked_layout(const CollectiveContext& c) {
    check(c.layout != nullptr && c.layout->size() == c.size(),
          "a hierarchical collective needs the communicator's node layout");
    if (c.layout->uniform_ranks_per_node() == 0)
        throw UsageError("--algo hier needs every node to hold the same number of ranks; this "
                         "layout is " +
                         c.layout->describe());
    return *c.layout;
}

std::vector<std::vector<int>> members(const NodeLayout& l) {
    std::vector<std::vector<int>> m;
    for (int node = 0; node < l.nodes(); ++node) m.push_back(l.members(node));
    return m;
}

std::vector<int> column(const std::vector<std::vector<int>>& m, int place) {
    std::vector<int> out;
    for (const auto& node : m) out.push_back(node[std::size_t(place)]);
    return out;
}
} // namespace

TwoLevel::TwoLevel(CollectiveContext& c)
    : nodes(checked_layout(c).nodes()), per_node(c.layout->uniform_ranks_per_node()),
      node(c.layout->node(c.rank())), local(c.layout->local_index(c.rank())),
      member(members(*c.layout)), intra(c.transport, member[std::size_t(node)]),
      inter(c.transport, column(member, local)) {}

} // namespace shardlab
