// One run at a time in a run directory. Rank 0 holds an exclusive flock(2) on OUT/.lock for the
// run's life, and the kernel drops it when the process ends, however it ends, so a killed run
// never leaves a stale lock. A second run on the same --out while the first trains (a --resume
// or --overwrite of a live run) is refused with the holder's pid and host, which the holder
// writes into the file; two runs there interleaved their step logs and removed each other's
// checkpoints. A file system without locks (flock fails other than "held") is run on unlocked.
#pragma once

#include <string>

namespace shardlab {

class RunLock {
  public:
    explicit RunLock(const std::string& dir); // throws UsageError naming the holder when held
    ~RunLock();
    RunLock(const RunLock&) = delete;
    RunLock& operator=(const RunLock&) = delete;

  private:
    int fd_ = -1;
};

} // namespace shardlab
