// Node layouts: declared, detected, restricted to a group.
#include "comm/node_layout.h"

#include "comm/mpi_error.h"
#include "core/error.h"

#include <map>

namespace shardlab {

NodeLayout::NodeLayout(std::vector<int> node_of_rank) : node_(std::move(node_of_rank)) {
    std::map<int, int> renumber;
    for (int& m : node_) {
        auto [it, fresh] = renumber.emplace(m, int(renumber.size()));
        m = it->second;
    }
    nodes_ = int(renumber.size());
}

NodeLayout NodeLayout::blocks(int n, int ranks_per_node) {
    if (ranks_per_node <= 0 || n % ranks_per_node != 0)
        throw UsageError("--ranks-per-node " + std::to_string(ranks_per_node) +
                         " must divide the number of ranks N=" + std::to_string(n) +
                         " (every node holds the same number of ranks)");
    std::vector<int> node(n);
    for (int r = 0; r < n; ++r) node[r] = r / ranks_per_node;
    return NodeLayout(std::move(node));
}

NodeLayout NodeLayout::detect(MPI_Comm comm) {
    int rank = 0, n = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    MPI_Comm shared = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared),
              "MPI_Comm_split_type");
    // A node is named by its lowest rank: rank 0 of the shared communicator, keyed by rank.
    int leader = rank;
    check_mpi(MPI_Bcast(&leader, 1, MPI_INT, 0, shared), "MPI_Bcast");
    MPI_Comm_free(&shared);
    std::vector<int> node(n);
    check_mpi(MPI_Allgather(&leader, 1, MPI_INT, node.data(), 1, MPI_INT, comm), "MPI_Allgather");
    return NodeLayout(std::move(node));
}

NodeLayout NodeLayout::from_flag(MPI_Comm comm, int ranks_per_node) {
    if (ranks_per_node < 0)
        throw UsageError("--ranks-per-node " + std::to_string(ranks_per_node) +
                         " is negative; give K >= 1 ranks per node, or 0 to detect the nodes");
    if (ranks_per_node == 0) return detect(comm);
    int n = 1;
    MPI_Comm_size(comm, &n);
    return blocks(n, ranks_per_node);
}

std::vector<int> NodeLayout::members(int node) const {
    std::vector<int> out;
    for (int r = 0; r < size(); ++r)
        if (node_[r] == node) out.push_back(r);
    return out;
}

int NodeLayout::local_index(int rank) const {
    int i = 0;
    for (int r = 0; r < rank; ++r) i += node_[r] == node_[rank] ? 1 : 0;
    return i;
}

int NodeLayout::uniform_ranks_per_node() const {
    if (nodes_ == 0) return 0;
    const int k = int(members(0).size());
    for (int m = 1; m < nodes_; ++m)
        if (int(members(m).size()) != k) return 0;
    return k;
}

NodeLayout NodeLayout::restrict_to(const std::vector<int>& ranks) const {
    std::vector<int> node;
    for (int r : ranks) node.push_back(node_.at(r));
    return NodeLayout(std::move(node));
}

std::string NodeLayout::describe() const {
    const int k = uniform_ranks_per_node();
    if (k > 0)
        return std::to_string(nodes_) + (nodes_ == 1 ? " node x " : " nodes x ") +
               std::to_string(k) + (k == 1 ? " rank" : " ranks");
    std::string s = std::to_string(nodes_) + " nodes:";
    for (int m = 0; m < nodes_; ++m) s += (m ? "+" : " ") + std::to_string(members(m).size());
    return s + " ranks";
}

} // namespace shardlab
