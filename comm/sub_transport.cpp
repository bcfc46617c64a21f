// Rank translation onto the parent transport.
#include "comm/sub_transport.h"

#include "core/error.h"

#include <algorithm>

namespace shardlab {

SubTransport::SubTransport(Transport& parent, std::vector<int> members)
    : parent_(parent), members_(std::move(members)) {
    auto it = std::find(members_.begin(), members_.end(), parent.rank());
    check(it != members_.end(), "a sub-transport must include its own rank");
    rank_ = int(it - members_.begin());
}

void SubTransport::post(Stream& s, const std::vector<Transfer>& transfers) {
    std::vector<Transfer> out = transfers;
    for (Transfer& t : out) t.peer = members_.at(t.peer);
    parent_.exchange(s, out);
}

void SubTransport::native(Stream&, const CollectiveCall&) {
    throw Error("a sub-transport has no native collectives; run them on a group's communicator");
}

void SubTransport::native_barrier(Stream&) {
    throw Error("a sub-transport has no native barrier");
}

} // namespace shardlab
