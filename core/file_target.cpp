// Resolving an output's path to the file a rename must replace (file_target.h).
#include "core/file_target.h"

#include "core/error.h"

#include <filesystem>

namespace shardlab {

FileTarget file_target(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    // What the kernel reaches through every link: a device or a pipe is written where it is
    // (/dev/stdout's link leads to "pipe:[N]", no path at all).
    const fs::file_status reached = fs::status(path, ec);
    if (!ec && fs::exists(reached) && !fs::is_regular_file(reached) && !fs::is_directory(reached))
        return {path, true};
    fs::path p(path);
    for (int hops = 0; fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
        if (hops == 40) // the kernel's own limit (ELOOP)
            throw Error("'" + path + "': too many levels of symbolic links; name the file itself");
        const fs::path to = fs::read_symlink(p, ec);
        if (ec) break;
        p = to.is_absolute() ? to : p.parent_path() / to;
    }
    return {p.string(), false}; // a regular file, a folder or nothing yet: replaced by a rename
}

bool is_within(const std::string& path, const std::string& dir) {
    std::error_code ec;
    const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
    if (ec) return false;
    const std::filesystem::path d = std::filesystem::weakly_canonical(dir, ec);
    if (ec) return false;
    return p == d || p.string().rfind(d.string() + "/", 0) == 0;
}

} // namespace shardlab
