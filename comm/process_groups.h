// ProcessGroups: the logical half of the rank mesh. The world is split two ways: into nodes
// (the NodeLayout: physical) and into shard groups of S consecutive ranks (logical: ZeRO shards
// inside a group, FSDP2's HSDP / DeepSpeed's MiCS). Every rank is in four groups, each its own
// Communicator with its own statistics and node layout, on the same comm stream:
//   world      all N ranks (the one passed in, not owned)
//   node       the ranks of this rank's node
//   shard      ranks [g*S, (g+1)*S) with g = rank / S: the group a ZeRO shard is spread over
//   replicate  ranks {rank % S + j*S}: the ranks holding the same shard, one per shard group
// With S = N (the default) the shard group has the world's ranks and each replicate group one.
// No globals: the engine is handed the groups it uses.
#pragma once

#include "comm/communicator.h"
#include "comm/node_layout.h"

#include <mpi.h>

#include <functional>
#include <memory>
#include <vector>

namespace shardlab {

// The members of each group, as world ranks in group rank order: pure arithmetic, for the plan
// and the tests. Throw UsageError naming the rule when S does not divide N.
std::vector<int> shard_group_members(int n, int shard_size, int rank);
std::vector<int> replicate_group_members(int n, int shard_size, int rank);
// S for "--shard-group node": the ranks per node, if every node is a block of consecutive ranks
// of one size (else a UsageError naming the layout).
int node_shard_size(const NodeLayout& layout);

class ProcessGroups {
  public:
    // Makes a communicator over an MPI communicator (the backend's: Backend::communicator).
    using Factory = std::function<std::unique_ptr<Communicator>(MPI_Comm)>;

    // Collective over world's ranks. shard_size 0 means N. Each group's node layout is the
    // world's restricted to its members.
    ProcessGroups(Communicator& world, int shard_size, const Factory& make);

    Communicator& world() { return world_; }
    Communicator& node() { return *node_; }
    Communicator& shard() { return *shard_; }
    Communicator& replicate() { return *replicate_; }
    int shard_size() const { return shard_size_; }
    int replicas() const { return world_.size() / shard_size_; }

  private:
    std::unique_ptr<Communicator> split(const std::vector<int>& members, const Factory& make,
                                        const char* name);

    Communicator& world_;
    int shard_size_ = 1;
    std::unique_ptr<Communicator> node_, shard_, replicate_;
};

} // namespace shardlab
