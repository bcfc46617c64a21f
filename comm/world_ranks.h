// Naming a rank of a communicator by its world rank. A shard, replicate or node group numbers its
// members 0..n-1, but a person looking for the stopped process looks for MPI_COMM_WORLD's rank
// (what mpirun, the log lines and `ps` show): messages about a group name the world rank first and
// the rank inside the group after it. On the world itself (or a copy) the names stay "rank N".
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace shardlab {

class RankNames {
  public:
    // Translates comm's ranks to MPI_COMM_WORLD's (local, not collective).
    explicit RankNames(MPI_Comm comm);

    // The group's name ("replicate"), used in the words "rank 1 of the replicate group".
    void set_group(std::string name) { group_ = std::move(name); }
    bool is_world() const { return world_is_identity_; }
    int world_rank(int group_rank) const { return world_[std::size_t(group_rank)]; }

    // "rank 3" on the world; "world rank 3 (rank 1 of the replicate group)" in a group.
    std::string one(int group_rank) const;
    // "ranks 1,3" on the world; "world ranks 1,3 (ranks 0,1 of the shard group)" in a group.
    std::string list(const std::vector<int>& group_ranks) const;
    // All members: "ranks 0-3" on the world; "world ranks 0,2 (the replicate group)" in a group.
    std::string members() const;

  private:
    std::string of_group() const;

    std::vector<int> world_; // world rank by group rank
    bool world_is_identity_ = true;
    std::string group_;
};

} // namespace shardlab
