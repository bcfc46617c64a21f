// The NCCL transport: an exchange is one ncclGroupStart / ncclSend / ncclRecv / ncclGroupEnd on
// the stream it is given, so shardlab's own ring collectives run over NVLink and InfiniBand as
// NCCL's do; the native collectives are NCCL's. One GPU per rank (NCCL refuses two ranks on one
// GPU: ranks that share a GPU use the MPI transport, staged through host memory).
#pragma once

#include "comm/transport.h"

#include <mpi.h>

#include <memory>

namespace shardlab {

// Collective over `comm`: rank 0 makes NCCL's unique id and broadcasts it over MPI, then every
// rank joins with ncclCommInitRank. Defined only in builds with CUDA or its emulator.
std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm);

} // namespace shardlab
