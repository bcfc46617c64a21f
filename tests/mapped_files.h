// The files this process has mapped, as /proc/self/maps lists them: what the loader really
// opened (test_shared_library, test_cublas_library), which neither the soname nor ldd tells.
#pragma once

#include <fstream>
#include <string>
#include <vector>

namespace shardlab::test {

// Each mapping's path, in the order of the maps file (a library appears once per segment).
inline std::vector<std::string> mapped_files() {
    std::vector<std::string> files;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);)
        if (const auto slash = line.find('/'); slash != std::string::npos)
            files.push_back(line.substr(slash));
    return files;
}

} // namespace shardlab::test
