// CommStats accumulation.
#include "comm/comm_stats.h"

namespace shardlab {

void CommStats::record(const std::string& key, std::uint64_t sent, std::uint64_t received,
                       const LinkBytes& sent_by_link, double seconds, bool bytes_measured) {
    OpStats& s = ops_[key];
    s.calls += 1;
    s.bytes_sent += sent;
    s.bytes_received += received;
    s.sent_by_link += sent_by_link;
    s.seconds += seconds;
    s.bytes_measured = bytes_measured;
}

void CommStats::merge(const CommStats& other, const std::string& suffix) {
    for (const auto& [key, o] : other.ops()) {
        OpStats& s = ops_[key + suffix];
        s.calls += o.calls;
        s.bytes_sent += o.bytes_sent;
        s.bytes_received += o.bytes_received;
        s.sent_by_link += o.sent_by_link;
        s.seconds += o.seconds;
        s.bytes_measured = o.bytes_measured;
    }
}

OpStats CommStats::get(const std::string& key) const {
    auto it = ops_.find(key);
    return it == ops_.end() ? OpStats{} : it->second;
}

} // namespace shardlab
