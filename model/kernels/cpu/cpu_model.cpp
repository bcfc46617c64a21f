// Reads the first "model name" line of /proc/cpuinfo.
#include "model/kernels/cpu/cpu_model.h"

#include <fstream>

namespace shardlab::cpu {

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) {
            const std::size_t colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size())
                return line.substr(colon + 2);
        }
    return "unknown CPU";
}

} // namespace shardlab::cpu
