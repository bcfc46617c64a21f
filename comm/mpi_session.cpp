// Implementation of comm/mpi_session.h.
#include "comm/mpi_session.h"

#include <mpi.h>

namespace shardlab {

MpiSession::MpiSession(int& argc, char**& argv) {
    // Each comm stream calls MPI from its own worker thread while the host thread may make its
    // own calls (on another communicator): that needs MPI_THREAD_MULTIPLE (checked where used).
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
}

MpiSession::~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

} // namespace shardlab
