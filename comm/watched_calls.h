// The blocking MPI calls outside the training collectives — a checkpoint save's barrier and
// agreement, the resume broadcast, the error agreement, the report gathers (report.json,
// --log-memory's samples, --trace's events and its starting barrier) — made non-blocking
// (MPI_Ibarrier, MPI_Iallreduce, MPI_Ibcast, MPI_Igather(v)) and waited by a Watchdog, so that a
// rank stopped or stuck in any of them (a SIGSTOP, a debugger, a slow NFS write) is named with
// where every rank is, and the job ends after --collective-timeout instead of hanging forever.
//
// WatchedComm holds its own duplicate of the communicator (the calls never meet the collectives'
// traffic) and its own Watchdog; whoever makes such calls is handed one explicitly.
#pragma once

#include "comm/mpi_watchdog.h"

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

class WatchedComm {
  public:
    // Duplicates `comm` (a collective call). timeout_s <= 0: wait forever.
    WatchedComm(MPI_Comm comm, double timeout_s);
    ~WatchedComm();
    WatchedComm(const WatchedComm&) = delete;
    WatchedComm& operator=(const WatchedComm&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }

    // `what` names the call in the watchdog's report ("checkpoint save: every rank wrote").
    void barrier(const std::string& what);
    void allreduce(int* values, int count, MPI_Op op, const std::string& what); // in place
    void bcast(void* buffer, int bytes, int root, const std::string& what);
    // One string per rank on `root` in rank order (empty elsewhere).
    std::vector<std::string> gather(const std::string& mine, int root, const std::string& what);

  private:
    void wait(MPI_Request request, const char* op, std::uint64_t bytes, const std::string& what);

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
    std::uint64_t seq_ = 0;
    Watchdog watchdog_;
};

} // namespace shardlab
