// Implementation of launch/cli_util.h.
#include "launch/cli_util.h"

#include "comm/agreement.h"
#include "core/error.h"
#include "core/file_target.h"

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

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
    if (suffix == "K" || suffix == "k")
        scale = std::size_t(1) << 10;
    else if (suffix == "M" || suffix == "m")
        scale = std::size_t(1) << 20;
    else if (suffix == "G" || suffix == "g")
        scale = std::size_t(1) << 30;
    else if (!suffix.empty())
        throw UsageError("bad size suffix in '" + text + "'; use K, M or G (powers of 1024)");
    return std::size_t(value) * scale;
}

int launcher_rank() {
    for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
        if (const char* v = std::getenv(var)) return std::atoi(v);
    return 0;
}

// Written to PATH.tmp, flushed, then renamed over PATH (what its links name; a device or pipe is
// written in place: core/file_target.h): a reader sees the old file or the whole new
// one, never a torn one. A failure names the file and the reason (ENOSPC: the disk is full).
void write_json_file(const std::string& path, const nlohmann::json& j) {
    const FileTarget target = file_target(path); // through links; a device written in place
    const std::string tmp = target.temporary();
    const std::string text = j.dump(2) + "\n";
    auto fail = [&](const std::string& what, int err) {
        if (!target.in_place) std::remove(tmp.c_str());
        throw Error("cannot " + what + " '" + path +
                    "': " + write_failure(err, "check that the directory is writable"));
    };
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail("write", errno);
    const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    int err = written ? 0 : errno;
    if (std::fflush(f) != 0 && !err) err = errno;
    if (std::fclose(f) != 0 && !err) err = errno;
    if (err) fail("write", err);
    if (!target.in_place && std::rename(tmp.c_str(), target.path.c_str()) != 0)
        fail("replace", errno);
}

void check_writable_directory(const std::string& dir, const std::string& what) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        throw UsageError(what + ": " + dir + " is not a directory; create it or choose another");
    // A file actually created (and removed): access(W_OK) says yes to root on a read-only disk.
    std::string probe = (std::filesystem::path(dir) / ".shardlab-write-test-XXXXXX").string();
    const int fd = ::mkstemp(probe.data());
    if (fd < 0)
        throw UsageError(what + ": cannot write in " + dir + " (" + std::strerror(errno) +
                         "); choose a writable directory");
    ::close(fd);
    ::unlink(probe.c_str());
}

void check_json_output(const std::string& path, const std::string& flag) {
    const std::filesystem::path p(path);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec))
        throw UsageError(flag + " " + path + " is a directory; give a file name, e.g. " +
                         (p / "out.json").string());
    check_writable_directory(p.has_parent_path() ? p.parent_path().string() : ".",
                             flag + " " + path);
}

std::string short_bytes(double bytes) {
    if (bytes < 1e6) return fmt::format("{:.1f} KB", bytes / 1e3);
    if (bytes < 1e9) return fmt::format("{:.1f} MB", bytes / 1e6);
    return fmt::format("{:.2f} GB", bytes / 1e9);
}

int run_guarded(const std::function<int()>& body) {
    auto report = [](const std::exception& e, bool usage) {
        int initialized = 0, finalized = 0;
        MPI_Initialized(&initialized);
        MPI_Finalized(&finalized);
        const bool mpi_live = initialized && !finalized;
        int rank = launcher_rank(), size = 1;
        if (mpi_live) {
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            MPI_Comm_size(MPI_COMM_WORLD, &size);
        }
        if (usage && !(mpi_live && size > 1)) {
            if (rank == 0) fmt::print(stderr, "shardlab: error: {}\n", error_message(e));
            return 2;
        }
        fmt::print(stderr, "shardlab: rank {}: error: {}\n", rank, error_message(e));
        std::fflush(stderr);
        if (mpi_live && size > 1)
            MPI_Abort(MPI_COMM_WORLD, usage ? 2 : 1); // the other ranks stop too
        return usage ? 2 : 1;
    };
    try {
        return body();
    } catch (const AgreedFailure&) {
        return 2;
    } catch (const UsageError& e) {
        return report(e, true);
    } catch (const std::exception& e) {
        return report(e, false);
    }
}

} // namespace shardlab
