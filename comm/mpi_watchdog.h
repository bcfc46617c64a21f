// The collective watchdog: waits for a collective's MPI requests as MPI_Waitall would, but when
// the wait outlasts the timeout — or a peer's watchdog asks — every live rank tells every other
// which collective it waits in. Each then prints where it is and who did not answer, and the job
// ends (an Error, so the usual path prints it and calls MPI_Abort). A stopped or dead rank never
// answers and is named as "not arrived"; ranks waiting in different collectives at the same
// sequence number are named as a schedule mismatch, not a hang. Ranks are named by their world
// rank, and inside a process group by their rank in the group too (comm/world_ranks.h).
//
// It talks over a communicator of its own, from the one thread that waits (a comm stream's
// worker), so its messages never meet the collectives' traffic.
#pragma once

#include "comm/collective_id.h"
#include "comm/world_ranks.h"

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

// An MPI tag from (seq, op, bytes): ranks that disagree on the collective do not match each
// other's messages (which could complete with wrong data); they wait, and the watchdog says so.
int collective_tag(const CollectiveId& id);

// `comm` duplicated (MPI_Comm_idup, tested until done), within `timeout_s` (<= 0: forever). The
// watchdog's own communicators are made this way, so a rank that never joins (stopped, stuck or
// dead as the run starts) ends the job with an Error naming the wait instead of hanging it; no
// watchdog exists yet to ask the others where they are.
MPI_Comm duplicate_within(MPI_Comm comm, double timeout_s);

// The limit when nobody sets one: long enough for any single collective of a sane job, short
// enough that a hang ends while someone still looks.
constexpr double kDefaultCollectiveTimeout = 300;

class Watchdog {
  public:
    // Duplicates `comm` (a collective call). timeout_s <= 0: wait forever.
    Watchdog(MPI_Comm comm, double timeout_s);
    ~Watchdog();
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

    void set_timeout(double seconds) { timeout_s_ = seconds; }
    double timeout() const { return timeout_s_; }
    // The group's name for the report, which names ranks by world rank and this group's rank
    // ("world rank 3 (rank 1 of the replicate group)"); set before the first wait.
    void set_group_name(std::string name) { names_.set_group(std::move(name)); }

    // Completes every request, yielding the core between tests (MPI_Waitall spins, and the
    // waiting thread shares the cores with compute). Throws Error after the investigation when
    // the wait outlasts the timeout or another rank's watchdog fired.
    void wait_all(std::vector<MPI_Request>& reqs, const CollectiveId& id);

  private:
    [[noreturn]] void investigate(const CollectiveId& id, double waited);
    bool peer_is_asking();

    MPI_Comm comm_ = MPI_COMM_NULL;
    RankNames names_; // translates comm_'s ranks, the ones the messages use, for the report
    int rank_ = 0, size_ = 1;
    std::atomic<double> timeout_s_;
    bool arrived_late_ = false; // another rank's report was waiting when this rank arrived
    bool paused_ = false;       // this process did not run for a while during the wait
    std::string report_;        // what this rank told the others; outlives the sends
    std::vector<MPI_Request> report_requests_;
};

} // namespace shardlab
