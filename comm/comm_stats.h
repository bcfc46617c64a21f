// CommStats: per rank and per operation — calls, bytes sent, bytes received, seconds. Bytes are
// measured at the transport (what this rank actually handed to its point-to-point transfers), not
// computed from a formula, so tests can hold them against docs/COLLECTIVES.md's formulas. Seconds
// are the comm stream's time inside the call, waits for peers included.
#pragma once

#include "comm/link_bytes.h"

#include <cstdint>
#include <map>
#include <string>

namespace shardlab {

struct OpStats {
    std::uint64_t calls = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t bytes_received = 0;
    double seconds = 0.0;
    LinkBytes sent_by_link; // bytes_sent split by the class of link each crossed
    // False for the MPI library's own collectives: what they send internally is not visible to
    // us, so their bytes are reported as unknown rather than guessed.
    bool bytes_measured = true;
};

class CommStats {
  public:
    // Keys are op names ("allgather", ...), with "/native" appended for the MPI library's own.
    void record(const std::string& key, std::uint64_t sent, std::uint64_t received,
                const LinkBytes& sent_by_link, double seconds, bool bytes_measured);
    void add_seconds(const std::string& key, double seconds) { ops_[key].seconds += seconds; }
    const std::map<std::string, OpStats>& ops() const { return ops_; }
    OpStats get(const std::string& key) const; // zeros when never called
    void reset() { ops_.clear(); }
    // Adds another communicator's statistics, each key with `suffix` appended: a hybrid run's
    // shard and replicate groups report as "reduce_scatter@shard", "allreduce@replicate".
    void merge(const CommStats& other, const std::string& suffix);

  private:
    std::map<std::string, OpStats> ops_;
};

} // namespace shardlab
