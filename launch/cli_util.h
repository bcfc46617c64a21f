// Small helpers the subcommands share: size suffixes, comma lists, the launcher's rank before
// MPI starts, byte formatting, and the MPI session.
#pragma once

#include "comm/watched_calls.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mpi.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardlab {

// "1M" -> 1048576; suffixes K, M, G (powers of 1024, as nccl-tests), optional trailing B.
std::size_t parse_size(const std::string& text);
std::vector<std::string> split_list(const std::string& text);
// This process's rank as the launcher (mpirun, Slurm) announced it; 0 when run alone.
int launcher_rank();
// Writes j (indented) to path; throws Error naming the path when it cannot.
void write_json_file(const std::string& path, const nlohmann::json& j);

// "33554432 B (33.55 MB, 32.00 MiB)": exact integer first, then GB = 1e9 and GiB = 2^30 labelled.
std::string format_bytes(std::uint64_t bytes);

// Runs a command body with shardlab's error policy. A UsageError before MPI starts (or on a
// single rank) prints once and returns 2; one after MPI started, on one rank of several, cannot be
// known to the others, so — like any other error — it prints with its rank and aborts every rank
// through MPI_Abort: no rank waits forever for one that stopped.
int run_guarded(const std::function<int()>& body);

// Thrown on every rank once `collectively` has reported a failure: exit code 2, nothing more to
// say.
struct AgreedFailure : std::exception {
    const char* what() const noexcept override { return "reported"; }
};

// Runs fn on every rank at a point every rank reaches (nothing else in flight). If it throws on
// any rank, rank 0 prints each distinct message once with the ranks that raised it, and every
// rank throws AgreedFailure — a clean exit instead of a hang or an abort. For checks whose outcome
// can differ between ranks: files each node reads for itself, checkpoints, data.
void collectively(const std::function<void()>& fn, MPI_Comm comm);
// The same through watched calls: a rank that never reaches the agreement is named and the job
// ends after the collective timeout (comm/watched_calls.h). What a training run uses.
void collectively(const std::function<void()>& fn, WatchedComm& comm);

// One string per rank, collected on rank 0 in rank order (empty elsewhere). Plain MPI: for
// reports and walkthroughs, outside the statistics of shardlab's own collectives.
std::vector<std::string> gather_to_root(const std::string& mine, MPI_Comm comm);

// MPI_Init / MPI_Finalize for the commands that communicate.
class MpiSession {
  public:
    MpiSession(int& argc, char**& argv);
    ~MpiSession();
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;
};

} // namespace shardlab
