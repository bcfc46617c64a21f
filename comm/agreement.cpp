// Implementation of comm/agreement.h.
#include "comm/agreement.h"

#include "comm/gather_to_root.h"
#include "core/error.h"

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

namespace shardlab {

namespace {
// Rank 0 prints each distinct message once, with every rank that raised it.
void print_failures(const std::vector<std::string>& all) {
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].empty()) continue;
        bool first = true;
        for (std::size_t j = 0; j < i; ++j) first = first && all[j] != all[i];
        if (!first) continue;
        std::string ranks;
        for (std::size_t j = i; j < all.size(); ++j)
            if (all[j] == all[i]) ranks += (ranks.empty() ? "" : ",") + std::to_string(j);
        fmt::print(stderr, "shardlab: error{}: {}\n",
                   all.size() > 1 ? " on rank " + ranks : std::string(), all[i]);
    }
    std::fflush(stderr);
}

std::string failure_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const std::exception& e) {
        return error_message(e);
    }
    return "";
}
} // namespace

void collectively(const std::function<void()>& fn, MPI_Comm comm) {
    const std::string message = failure_of(fn);
    int failed = message.empty() ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm);
    if (!failed) return;
    print_failures(gather_to_root(message, comm));
    throw AgreedFailure();
}

void collectively(const std::function<void()>& fn, WatchedComm& comm) {
    const std::string message = failure_of(fn);
    int failed = message.empty() ? 0 : 1;
    comm.allreduce(&failed, 1, MPI_MAX, "error agreement: did any rank fail");
    if (!failed) return;
    print_failures(comm.gather(message, 0, "error agreement: the messages"));
    throw AgreedFailure();
}

} // namespace shardlab
