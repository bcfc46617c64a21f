// flock(2) on OUT/.lock, and the holder's name written into it for the refusal's message.
#include "launch/run_lock.h"

#include "core/error.h"

#include <fmt/format.h>

#include <cerrno>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace shardlab {

namespace {
std::string holder_of(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line.empty() ? "another process" : line;
}

std::string this_process() {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const std::time_t now = std::time(nullptr);
    char when[32] = {};
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    return fmt::format("pid {} on {}, since {}", ::getpid(), host, when);
}
} // namespace

RunLock::RunLock(const std::string& dir) {
    const std::string path = (std::filesystem::path(dir) / ".lock").string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return; // the directory was checked writable: no lock to take here
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        ::close(fd_);
        fd_ = -1;
        if (err != EWOULDBLOCK) return; // a file system without flock
        throw UsageError(fmt::format("--out {} is in use by another shardlab run ({}); wait for "
                                     "it to end or stop it (Ctrl-C saves a checkpoint), or choose "
                                     "another --out",
                                     dir, holder_of(path)));
    }
    // The holder's name, for another run's refusal only: the lock holds without it.
    const std::string me = this_process() + "\n";
    if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, me.data(), me.size(), 0);
}

RunLock::~RunLock() {
    if (fd_ >= 0) ::close(fd_); // releases the lock
}

} // namespace shardlab
