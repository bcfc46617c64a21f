// MPI point-to-point with byte counts. MPI counts are int, so a message larger than 1 GiB is
// sent as several pieces (both sides cut it the same way).
#include "comm/transport.h"

#include "core/error.h"

#include <algorithm>
#include <string>
#include <vector>

namespace shardlab {

namespace {
constexpr std::size_t kPiece = std::size_t(1) << 30;
constexpr int kTag = 7;
} // namespace

void check_mpi(int rc, const char* what) {
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        throw Error(std::string(what) + " failed: " + std::string(msg, len));
    }
}

Transport::Transport(MPI_Comm comm) {
    check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
}

Transport::~Transport() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

// Each direction is cut into pieces independently; MPI matches messages between a pair of
// ranks in order, so the receiver's pieces line up with the sender's.
void Transport::send(const void* buf, std::size_t bytes, int dst) {
    sendrecv(buf, bytes, dst, nullptr, 0, MPI_PROC_NULL);
}

void Transport::recv(void* buf, std::size_t bytes, int src) {
    sendrecv(nullptr, 0, MPI_PROC_NULL, buf, bytes, src);
}

void Transport::sendrecv(const void* send_buf, std::size_t send_bytes, int dst, void* recv_buf,
                         std::size_t recv_bytes, int src) {
    std::vector<MPI_Request> reqs;
    auto post = [&](char* p, std::size_t bytes, int peer, bool is_send) {
        if (peer == MPI_PROC_NULL) return;
        std::size_t done = 0;
        do {
            int n = int(std::min(kPiece, bytes - done));
            reqs.emplace_back();
            int rc = is_send ? MPI_Isend(p + done, n, MPI_BYTE, peer, kTag, comm_, &reqs.back())
                             : MPI_Irecv(p + done, n, MPI_BYTE, peer, kTag, comm_, &reqs.back());
            check_mpi(rc, is_send ? "MPI_Isend" : "MPI_Irecv");
            done += std::size_t(n);
        } while (done < bytes);
    };
    post(static_cast<char*>(recv_buf), recv_bytes, src, false);
    post(const_cast<char*>(static_cast<const char*>(send_buf)), send_bytes, dst, true);
    check_mpi(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    if (dst != MPI_PROC_NULL) bytes_sent_ += send_bytes;
    if (src != MPI_PROC_NULL) bytes_received_ += recv_bytes;
}

} // namespace shardlab
