// Copy bandwidth in stream order: within a device (the ceiling `collectives bench` reads its
// bandwidths against) and between host and device, pinned and pageable (what offload's tile
// pipeline and the time model's copy terms use).
#pragma once

#include "core/device_context.h"

#include <mpi.h>

#include <cstddef>

namespace shardlab {

// The median seconds of `iters` copies of `bytes` from src to dst on `s` (each waited for), after
// one untimed copy that touches the pages.
double copy_seconds(Stream& s, void* dst, const void* src, std::size_t bytes, int iters);

// Bytes per second of host<->device copies on the context's copy stream, the slowest rank's.
// Pinned: host memory from the tracker's host arena (page-locked on CUDA); pageable: a plain
// std::vector. On the CPU backend all four are memcpy within host memory.
struct CopyRates {
    double h2d_pinned = 0, d2h_pinned = 0, h2d_pageable = 0, d2h_pageable = 0;
};
// Collective over comm (every rank copies at once).
CopyRates measure_copy_rates(DeviceContext& ctx, std::size_t bytes, int iters, MPI_Comm comm);

} // namespace shardlab
