// shardlab::Error — the one exception type. Every message names the problem and, where there
// is one, the fix ("... ; use --foo" ), so a user never has to read the source to recover.
#pragma once

#include <cerrno>
#include <cstring>
#include <new>
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

// An exception's message for the user. The standard library's own say only "std::bad_alloc" or
// "cannot create std::vector larger than max_size()": these name the problem and the fix.
inline std::string error_message(const std::exception& e) {
    if (dynamic_cast<const std::bad_alloc*>(&e))
        return "out of host memory: this needs more memory than the machine has free; make it "
               "smaller (the model, --micro-batch or --batch, --seq), or see what a run needs "
               "with `shardlab plan` and the same model flags";
    if (dynamic_cast<const std::length_error*>(&e))
        return std::string("a size too large to allocate (") + e.what() +
               "); a flag asks for more elements than a buffer can hold: make it smaller";
    const std::string message = e.what();
    return message.empty() ? "unknown error" : message;
}

// Throws Error(message) when cond is false. A function, not a macro: the message is built only
// by callers that pass a string, so keep hot loops free of checks.
inline void check(bool cond, const std::string& message) {
    if (!cond) throw Error(message);
}

} // namespace shardlab
