// The MPI transport: each exchange becomes one stream task that posts every MPI_Isend / MPI_Irecv
// of the exchange and waits for all of them; the native collectives are MPI's own, run the same
// way. MPI counts are int, so a message larger than 1 GiB goes as several pieces (both sides cut
// it alike). Needs MPI_THREAD_MULTIPLE: the comm stream's worker thread makes these calls while
// the host thread may make its own on another communicator. Every wait goes through the
// watchdog (comm/mpi_watchdog.h), and messages are tagged by collective, so ranks that disagree on
// the schedule wait (and are reported) instead of exchanging the wrong data.
#pragma once

#include "comm/mpi_collectives.h"
#include "comm/mpi_watchdog.h"
#include "comm/transport.h"

#include <mpi.h>

#include <memory>

namespace shardlab {

class MpiTransport : public Transport {
  public:
    explicit MpiTransport(MPI_Comm comm); // duplicates comm, so our tags never meet the user's
    ~MpiTransport() override;
    MpiTransport(const MpiTransport&) = delete;
    MpiTransport& operator=(const MpiTransport&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    void native(Stream& s, const CollectiveCall& call) override;
    void native_barrier(Stream& s) override;
    void set_timeout(double seconds) override { watchdog_->set_timeout(seconds); }
    void set_group_name(const std::string& name) override { watchdog_->set_group_name(name); }

  protected:
    void post(Stream& s, const std::vector<Transfer>& transfers) override;

  private:
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
    std::unique_ptr<MpiCollectives> native_;
    std::unique_ptr<Watchdog> watchdog_; // used by the stream task that waits, one at a time
};

} // namespace shardlab
