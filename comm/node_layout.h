// NodeLayout: which node each rank of a communicator lives on — the physical half of the rank
// mesh. Found from MPI_COMM_TYPE_SHARED (ranks that share memory are one node), or declared as
// consecutive blocks of K ranks (`--ranks-per-node K`: one machine pretending to be N/K nodes,
// for tests and teaching). A value: communicators, process groups and the communication model
// each take one explicitly. Nodes are numbered 0.. in order of their lowest rank.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace shardlab {

class NodeLayout {
  public:
    NodeLayout() = default;
    explicit NodeLayout(std::vector<int> node_of_rank); // renumbered by first appearance

    static NodeLayout single_node(int n) { return NodeLayout(std::vector<int>(n, 0)); }
    // Ranks [k*K, (k+1)*K) form node k. Throws UsageError unless K divides n.
    static NodeLayout blocks(int n, int ranks_per_node);
    // Collective over comm: ranks that MPI_COMM_TYPE_SHARED puts together are one node.
    static NodeLayout detect(MPI_Comm comm);
    // ranks_per_node > 0: blocks(size of comm, K); 0: detect(comm); negative: a UsageError.
    static NodeLayout from_flag(MPI_Comm comm, int ranks_per_node);

    int size() const { return int(node_.size()); }
    int nodes() const { return nodes_; }
    int node(int rank) const { return node_[rank]; }
    // The ranks of node m, ascending.
    std::vector<int> members(int node) const;
    // Rank r's position among its node's ranks.
    int local_index(int rank) const;
    // Ranks per node when every node has the same number, else 0.
    int uniform_ranks_per_node() const;
    // The layout of a group of this communicator's ranks, in the group's rank order.
    NodeLayout restrict_to(const std::vector<int>& ranks) const;
    std::string describe() const; // "2 nodes x 3 ranks" or "3 nodes: 2+1+3 ranks"

  private:
    std::vector<int> node_;
    int nodes_ = 0;
};

} // namespace shardlab
