// available_host_bytes against /proc/meminfo read here independently: at most MemTotal plus
// SwapTotal, and more than nothing on a machine that runs this test.
#include "core/host_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <string>

using namespace shardlab;

TEST(HostMemory, IsWhatTheKernelCanStillGiveAtMost) {
    std::map<std::string, std::uint64_t> kb;
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    std::uint64_t value = 0;
    while (meminfo >> key >> value && std::getline(meminfo, unit)) kb[key] = value;
    if (!kb.count("MemAvailable:")) GTEST_SKIP() << "no /proc/meminfo with MemAvailable here";
    const std::optional<std::uint64_t> available = available_host_bytes();
    ASSERT_TRUE(available.has_value());
    EXPECT_GT(*available, 0u);
    EXPECT_LE(*available, (kb["MemTotal:"] + kb["SwapTotal:"]) * 1024);
}
