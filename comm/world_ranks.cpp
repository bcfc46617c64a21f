// World ranks by MPI_Group_translate_ranks, once per communicator.
#include "comm/world_ranks.h"

#include "comm/mpi_error.h"

#include <fmt/format.h>

#include <numeric>

namespace shardlab {

namespace {
std::string joined(const std::vector<int>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
}
} // namespace

RankNames::RankNames(MPI_Comm comm) {
    int n = 0, world_n = 0;
    MPI_Comm_size(comm, &n);
    MPI_Comm_size(MPI_COMM_WORLD, &world_n);
    MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    check_mpi(MPI_Comm_group(comm, &group), "MPI_Comm_group");
    check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
    std::vector<int> mine(std::size_t(n), 0);
    std::iota(mine.begin(), mine.end(), 0);
    world_.assign(std::size_t(n), MPI_UNDEFINED);
    check_mpi(MPI_Group_translate_ranks(group, n, mine.data(), world, world_.data()),
              "MPI_Group_translate_ranks");
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    world_is_identity_ = n == world_n && world_ == mine;
}

std::string RankNames::of_group() const {
    return group_.empty() ? "this group" : "the " + group_ + " group";
}

std::string RankNames::one(int r) const {
    if (world_is_identity_) return fmt::format("rank {}", r);
    return fmt::format("world rank {} (rank {} of {})", world_rank(r), r, of_group());
}

std::string RankNames::list(const std::vector<int>& ranks) const {
    if (ranks.size() == 1) return one(ranks.front());
    if (world_is_identity_) return "ranks " + joined(ranks);
    std::vector<int> world;
    for (int r : ranks) world.push_back(world_rank(r));
    return fmt::format("world ranks {} (ranks {} of {})", joined(world), joined(ranks), of_group());
}

std::string RankNames::members() const {
    if (world_is_identity_) return fmt::format("ranks 0-{}", world_.size() - 1);
    return fmt::format("world ranks {} ({})", joined(world_), of_group());
}

} // namespace shardlab
