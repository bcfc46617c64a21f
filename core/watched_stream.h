// A stream whose host waits are watched — the CUDA backend's (core/cuda/cuda_stream.h); host
// streams have their collectives' watchdog instead (comm/mpi_watchdog.h). The host waits for such
// a stream's device at most the stall timeout before it reports the stream and what the device
// was doing with its peers, and throws: a stalled GPU is caught like a stalled rank.
#pragma once

#include <string>

namespace shardlab {

class WatchedStream {
  public:
    virtual ~WatchedStream() = default;
    // Seconds (<= 0: forever), for every stream of this stream's device.
    virtual void set_stall_timeout(double timeout_s) = 0;
    // What the device was last given to do with its peers (a collective and its ranks).
    virtual void note_activity(const std::string& activity) = 0;
};

} // namespace shardlab
