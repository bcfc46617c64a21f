// MPI point-to-point as stream tasks.
#include "comm/mpi_transport.h"

#include "comm/mpi_error.h"

#include <algorithm>
#include <exception>

namespace shardlab {

namespace {
constexpr std::size_t kPiece = std::size_t(1) << 30;

// Posts every piece of every transfer, receives first, then waits for all of them.
void run_exchange(MPI_Comm comm, const std::vector<Transfer>& transfers, const CollectiveId& id,
                  Watchdog& watchdog) {
    const int tag = collective_tag(id);
    std::vector<MPI_Request> reqs;
    for (bool sends : {false, true})
        for (const Transfer& t : transfers) {
            if (t.is_send != sends) continue;
            char* p = static_cast<char*>(t.buf);
            std::size_t done = 0;
            do { // each direction is cut alike, and MPI matches a pair's messages in order
                const int n = int(std::min(kPiece, t.bytes - done));
                reqs.emplace_back();
                const int rc =
                    t.is_send ? MPI_Isend(p + done, n, MPI_BYTE, t.peer, tag, comm, &reqs.back())
                              : MPI_Irecv(p + done, n, MPI_BYTE, t.peer, tag, comm, &reqs.back());
                check_mpi(rc, t.is_send ? "MPI_Isend" : "MPI_Irecv");
                done += std::size_t(n);
            } while (done < t.bytes);
        }
    watchdog.wait_all(reqs, id);
}

void wait_one(Watchdog& w, MPI_Request& r, const CollectiveId& id) {
    std::vector<MPI_Request> one{r};
    w.wait_all(one, id);
    r = one[0];
}
} // namespace

MpiTransport::MpiTransport(MPI_Comm comm) {
    int level = 0;
    MPI_Query_thread(&level);
    check(level >= MPI_THREAD_MULTIPLE,
          "the MPI library was started without MPI_THREAD_MULTIPLE; shardlab's comm stream calls "
          "MPI from its own thread (start MPI through MpiSession, or an MPI built with thread "
          "support)");
    check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    native_ = std::make_unique<MpiCollectives>(comm_);
    watchdog_ = std::make_unique<Watchdog>(comm_, kDefaultCollectiveTimeout);
}

MpiTransport::~MpiTransport() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // While unwinding from an error a stream task may still be inside MPI on this communicator:
    // leave it (the process is about to end) rather than free it under that task.
    if (finalized || std::uncaught_exceptions() > 0) {
        native_.release();
        watchdog_.release();
        return;
    }
    native_.reset();
    watchdog_.reset();
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiTransport::post(Stream& s, const std::vector<Transfer>& transfers) {
    s.enqueue([comm = comm_, transfers, id = call(), w = watchdog_.get()] {
        run_exchange(comm, transfers, id, *w);
    });
}

void MpiTransport::native(Stream& s, const CollectiveCall& c) {
    s.enqueue([n = native_.get(), c, id = call(), w = watchdog_.get()] {
        n->run(c, [&](MPI_Request& r) { wait_one(*w, r, id); });
    });
}

void MpiTransport::native_barrier(Stream& s) {
    s.enqueue([n = native_.get(), id = call(), w = watchdog_.get()] {
        n->barrier([&](MPI_Request& r) { wait_one(*w, r, id); });
    });
}

} // namespace shardlab
