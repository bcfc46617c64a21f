// MPI return codes as shardlab errors.
#pragma once

#include "core/error.h"

#include <mpi.h>

#include <string>

namespace shardlab {

// Throws Error("<what> failed: <MPI's own message>") unless rc is MPI_SUCCESS.
inline void check_mpi(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(std::string(what) + " failed: " + std::string(msg, std::size_t(len)));
}

} // namespace shardlab
