// Where a file that is written beside and then renamed over (so a reader sees the old file or the
// whole new one) really goes. A rename replaces the directory entry it lands on, so without this
// an output named through a symbolic link would replace the link with a file and leave its target
// stale, and one named /dev/null or /dev/stdout would replace the device node itself.
#pragma once

#include <string>

namespace shardlab {

struct FileTarget {
    std::string path; // the file to replace: the one named, or what its links lead to
    bool in_place;    // a device, a pipe or a socket: written directly, no temporary, no rename
    // Where the bytes are written first: beside the target, or the target itself when in place.
    std::string temporary() const { return in_place ? path : path + ".tmp"; }
};

// In place if what `path` reaches is no regular file or folder; otherwise the path its symbolic
// links (a chain; relative ones from their own folder) name, existing or not yet.
FileTarget file_target(const std::string& path);

// Whether `path` is `dir` or lies inside it, both resolved (links followed, `..` removed); false
// when either cannot be resolved. How an output is kept out of files another writer owns.
bool is_within(const std::string& path, const std::string& dir);

} // namespace shardlab
