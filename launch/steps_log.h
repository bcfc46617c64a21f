// DIR/steps.jsonl, the per-step log: one JSON row per step, appended (and flushed) by rank 0 as
// the run goes, so a killed run leaves every finished step. Nothing is kept in memory: the
// report's step list is read back from the file at the end, so a 100,000-step run costs no RAM.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace shardlab {

class StepsLog {
  public:
    // Opens `path` to continue after step `resumed_at` (0: a new log): later rows, and a last line
    // a killed run left half written, are dropped (the latter with a warning).
    StepsLog(std::string path, int resumed_at);
    ~StepsLog();
    StepsLog(const StepsLog&) = delete;
    StepsLog& operator=(const StepsLog&) = delete;

    // Throws Error naming the file and the reason ("the disk is full") when the row cannot be
    // written: a log with holes would be read as the truth later.
    void append(const nlohmann::json& row);
    // The rows of steps after `step`, read back from the file.
    nlohmann::json rows_after(int step) const;

  private:
    std::string path_;
    std::FILE* file_ = nullptr;
};

} // namespace shardlab
