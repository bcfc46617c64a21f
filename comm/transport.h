// Transport: blocking point-to-point byte messages between ranks over MPI, and the byte
// counters CommStats reads. The collectives of comm/ are written on top of these calls only.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace shardlab {

// Throws Error("<what> failed: <MPI's own message>") unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* what);

class Transport {
  public:
    explicit Transport(MPI_Comm comm); // duplicates comm, so our tags never meet the user's
    ~Transport();
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    MPI_Comm comm() const { return comm_; }

    void send(const void* buf, std::size_t bytes, int dst);
    void recv(void* buf, std::size_t bytes, int src);
    // Sends to dst and receives from src at once: the ring step.
    void sendrecv(const void* send_buf, std::size_t send_bytes, int dst, void* recv_buf,
                  std::size_t recv_bytes, int src);

    std::uint64_t bytes_sent() const { return bytes_sent_; }
    std::uint64_t bytes_received() const { return bytes_received_; }

  private:
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
    std::uint64_t bytes_sent_ = 0, bytes_received_ = 0;
};

} // namespace shardlab
