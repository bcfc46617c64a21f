// Error agreement: a check whose outcome can differ between ranks (files each node reads for
// itself, checkpoints, data) is run on every rank, and every rank learns whether any failed.
#pragma once

#include "comm/watched_calls.h"

#include <exception>
#include <functional>
#include <mpi.h>

namespace shardlab {

// Thrown on every rank once `collectively` has reported a failure: exit code 2, nothing more to
// say.
struct AgreedFailure : std::exception {
    const char* what() const noexcept override { return "reported"; }
};

// Runs fn on every rank at a point every rank reaches (nothing else in flight). If it throws on
// any rank, rank 0 prints each distinct message once with the ranks that raised it, and every
// rank throws AgreedFailure — a clean exit instead of a hang or an abort. For checks whose outcome
// can differ between ranks: files each node reads for itself, checkpoints, data.
void collectively(const std::function<void()>& fn, MPI_Comm comm);
// The same through watched calls: a rank that never reaches the agreement is named and the job
// ends after the collective timeout (comm/watched_calls.h). What a training run uses.
void collectively(const std::function<void()>& fn, WatchedComm& comm);

} // namespace shardlab
