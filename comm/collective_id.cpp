// How a collective is named in messages.
#include "comm/collective_id.h"

#include <fmt/format.h>

namespace shardlab {

std::string describe(const CollectiveId& id) {
    const std::string size = id.bytes < 10000 ? fmt::format("{} B", id.bytes)
                                              : fmt::format("{:.2f} MB", double(id.bytes) / 1e6);
    std::string s = fmt::format("#{} {} of {}", id.seq, id.op, size);
    return id.what.empty() ? s : s + " (" + id.what + ")";
}

} // namespace shardlab
