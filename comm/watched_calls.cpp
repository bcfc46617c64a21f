// Each call: its non-blocking form on our own communicator, then the watchdog's wait.
#include "comm/watched_calls.h"

#include "comm/mpi_error.h"

namespace shardlab {

WatchedComm::WatchedComm(MPI_Comm comm, double timeout_s)
    : comm_(duplicate_within(comm, timeout_s)), watchdog_(comm, timeout_s) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
}

WatchedComm::~WatchedComm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
}

void WatchedComm::wait(MPI_Request request, const char* op, std::uint64_t bytes,
                       const std::string& what) {
    std::vector<MPI_Request> reqs{request};
    watchdog_.wait_all(reqs, CollectiveId{++seq_, op, bytes, what});
}

void WatchedComm::barrier(const std::string& what) {
    MPI_Request r;
    check_mpi(MPI_Ibarrier(comm_, &r), "MPI_Ibarrier");
    wait(r, "barrier/outside-training", 0, what);
}

void WatchedComm::allreduce(int* values, int count, MPI_Op op, const std::string& what) {
    MPI_Request r;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_INT, op, comm_, &r),
              "MPI_Iallreduce");
    wait(r, "allreduce/outside-training", std::uint64_t(count) * sizeof(int), what);
}

void WatchedComm::bcast(void* buffer, int bytes, int root, const std::string& what) {
    MPI_Request r;
    check_mpi(MPI_Ibcast(buffer, bytes, MPI_BYTE, root, comm_, &r), "MPI_Ibcast");
    wait(r, "broadcast/outside-training", std::uint64_t(bytes), what);
}

std::vector<std::string> WatchedComm::gather(const std::string& mine, int root,
                                             const std::string& what) {
    int len = int(mine.size());
    const std::size_t n = static_cast<std::size_t>(size_);
    std::vector<int> lens(n, 0), displs(n, 0);
    MPI_Request r;
    check_mpi(MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, comm_, &r),
              "MPI_Igather");
    wait(r, "gather/outside-training", sizeof(int) * std::uint64_t(size_), what + ": sizes");
    int total = 0;
    for (int i = 0; i < size_; ++i) displs[std::size_t(i)] = total, total += lens[std::size_t(i)];
    std::string all(std::size_t(rank_ == root ? total : 0), '\0');
    check_mpi(MPI_Igatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(),
                           MPI_CHAR, root, comm_, &r),
              "MPI_Igatherv");
    wait(r, "gatherv/outside-training", 0, what); // sizes differ per rank: 0 on all
    std::vector<std::string> out;
    if (rank_ == root)
        for (int i = 0; i < size_; ++i)
            out.push_back(
                all.substr(std::size_t(displs[std::size_t(i)]), std::size_t(lens[std::size_t(i)])));
    return out;
}

} // namespace shardlab
