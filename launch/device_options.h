// Where a command computes — `--device cpu|cuda` and each backend's own flags — and the one place
// that turns them into a Backend.
#pragma once

#include "model/backend.h"

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <memory>
#include <string>

namespace shardlab {

class WatchedComm; // comm/watched_calls.h

struct DeviceOptions {
    std::string device = "cpu";     // cpu | cuda
    int threads = 0;                // CPU: OpenMP threads per rank (0: default_threads())
    std::string comm_cpus;          // CPU: the comm and copy streams' CPUs (empty: unpinned)
    std::string gemm;               // CPU: auto | openblas | onednn (empty: $SHARDLAB_GEMM or auto)
    bool share_gpu = false;         // CUDA: more ranks than GPUs on a node
    std::string transport = "auto"; // CUDA: auto | nccl | mpi
};

// Registers --device, --threads, --gemm, --share-gpu, --transport (and --comm-cpus where asked).
void add_device_options(CLI::App& cmd, DeviceOptions& o, bool comm_cpus = false);

// A UsageError for values no backend accepts, found alike on every rank before any message.
void check_device_options(const DeviceOptions& o);

// Collective over `world`: every rank makes its backend. A failure on any rank (no GPU, more
// ranks than GPUs, a build without CUDA) is printed once by rank 0, naming the rank, and every
// rank exits with code 2 (AgreedFailure) — none is left waiting for another. In
// launch/backend_factory.cpp.
std::unique_ptr<Backend> make_backend(const DeviceOptions& o, MPI_Comm world);
// The same, agreeing through `agree`'s watched calls: a rank that never gets its device ready (a
// GPU held by another job) is named after the collective timeout instead of hanging the others.
std::unique_ptr<Backend> make_backend(const DeviceOptions& o, MPI_Comm world, WatchedComm& agree);

} // namespace shardlab
