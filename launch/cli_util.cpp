// Implementation of launch/cli_util.h.
#include "launch/cli_util.h"

#include "core/error.h"

#include <fmt/format.h>
#include <mpi.h>

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace shardlab {

std::size_t parse_size(const std::string& text) {
    std::size_t pos = 0;
    unsigned long long value = 0;
    try {
        value = std::stoull(text, &pos);
    } catch (const std::exception&) {
        throw UsageError("bad size '" + text + "'; write a byte count like 1048576, 64K, 1M or 2G");
    }
    std::string suffix = text.substr(pos);
    if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
    std::size_t scale = 1;
    if (suffix == "K" || suffix == "k") scale = std::size_t(1) << 10;
    else if (suffix == "M" || suffix == "m") scale = std::size_t(1) << 20;
    else if (suffix == "G" || suffix == "g") scale = std::size_t(1) << 30;
    else if (!suffix.empty())
        throw UsageError("bad size suffix in '" + text + "'; use K, M or G (powers of 1024)");
    return std::size_t(value) * scale;
}

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

int launcher_rank() {
    for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
        if (const char* v = std::getenv(var)) return std::atoi(v);
    return 0;
}

std::string format_bytes(std::uint64_t bytes) {
    return fmt::format("{} B ({:.2f} MB, {:.2f} MiB)", bytes, double(bytes) / 1e6,
                       double(bytes) / double(1 << 20));
}

MpiSession::MpiSession(int& argc, char**& argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
}

MpiSession::~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

} // namespace shardlab
