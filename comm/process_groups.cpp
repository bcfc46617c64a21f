// Splitting the world into groups: MPI_Comm_split by a color every member computes alike.
#include "comm/process_groups.h"

#include "comm/mpi_error.h"
#include "core/error.h"

namespace shardlab {

namespace {
void check_divides(int n, int s) {
    if (s <= 0 || n % s != 0)
        throw UsageError("a shard group of " + std::to_string(s) +
                         " ranks must divide the number of ranks N=" + std::to_string(n) +
                         " (the N/S replicas each hold a whole copy)");
}
} // namespace

std::vector<int> shard_group_members(int n, int s, int rank) {
    check_divides(n, s);
    std::vector<int> m;
    for (int j = 0; j < s; ++j) m.push_back(rank / s * s + j);
    return m;
}

std::vector<int> replicate_group_members(int n, int s, int rank) {
    check_divides(n, s);
    std::vector<int> m;
    for (int g = 0; g < n / s; ++g) m.push_back(g * s + rank % s);
    return m;
}

int node_shard_size(const NodeLayout& layout) {
    const int k = layout.uniform_ranks_per_node();
    bool blocks = k > 0;
    for (int r = 0; blocks && r < layout.size(); ++r) blocks = layout.node(r) == r / k;
    if (!blocks)
        throw UsageError("a shard group per node needs every node to be a block of consecutive "
                         "ranks of one size; this layout is " +
                         layout.describe());
    return k;
}

ProcessGroups::ProcessGroups(Communicator& world, int shard_size, const Factory& make)
    : world_(world), shard_size_(shard_size > 0 ? shard_size : world.size()) {
    const int n = world.size(), r = world.rank();
    const NodeLayout& layout = world.node_layout();
    node_ = split(layout.members(layout.node(r)), make, "node");
    shard_ = split(shard_group_members(n, shard_size_, r), make, "shard");
    replicate_ = split(replicate_group_members(n, shard_size_, r), make, "replicate");
}

// Every member computes the same member list, so its lowest rank names the group.
std::unique_ptr<Communicator> ProcessGroups::split(const std::vector<int>& members,
                                                   const Factory& make, const char* name) {
    MPI_Comm sub = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(world_.mpi_comm(), members.front(), world_.rank(), &sub),
              "MPI_Comm_split");
    std::unique_ptr<Communicator> c = make(sub);
    MPI_Comm_free(&sub); // the communicator and its transport hold duplicates
    c->set_node_layout(world_.node_layout().restrict_to(members));
    c->set_name(name);
    return c;
}

} // namespace shardlab
