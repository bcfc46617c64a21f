// Reads the variable on each call: hooks sit on rare paths (a save), never in a step's loop.
#include "core/test_hook.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace shardlab {

void test_hook_stop(const char* point, int rank) {
    const char* spec = std::getenv("SHARDLAB_TEST_STOP_AT");
    if (!spec || std::string(spec) != std::string(point) + ":" + std::to_string(rank)) return;
    std::fprintf(stderr,
                 "shardlab: rank %d: test hook SHARDLAB_TEST_STOP_AT=%s: stopping (SIGSTOP)\n",
                 rank, spec);
    std::fflush(stderr);
    std::raise(SIGSTOP);
}

} // namespace shardlab
