// shardlab::Error — the one exception type. Every message names the problem and, where there
// is one, the fix ("... ; use --foo" ), so a user never has to read the source to recover.
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace shardlab {

class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A mistake in what the user asked for — a flag, or an input file that is missing, corrupt or does
// not fit the model — found before any rank communicated: every rank finds it alike, so the
// program can report it once and exit cleanly (code 2) instead of aborting MPI.
class UsageError : public Error {
  public:
    explicit UsageError(const std::string& what) : Error(what) {}
};

// Why a write failed, for a message: "the disk is full (ENOSPC); free some space", or errno's
// text followed by `otherwise` (the fix for any other failure, e.g. "check that --out is
// writable").
inline std::string write_failure(int err, const std::string& otherwise) {
    return err == ENOSPC ? std::string("the disk is full (ENOSPC); free some space")
                         : std::string(std::strerror(err)) + "; " + otherwise;
}

// Throws Error(message) when cond is false. A function, not a macro: the message is built only
// by callers that pass a string, so keep hot loops free of checks.
inline void check(bool cond, const std::string& message) {
    if (!cond) throw Error(message);
}

} // namespace shardlab
