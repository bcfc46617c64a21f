// Appending rows durably enough, and reading them back.
#include "launch/steps_log.h"

#include "core/error.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

namespace shardlab {

namespace {
[[noreturn]] void fail(const std::string& path, int err) {
    throw Error("cannot write the step log '" + path +
                "': " + write_failure(err, "check that --out is writable"));
}

// Every whole JSON row of the file (a torn one is reported once by the caller that asks).
std::vector<std::string> whole_rows(const std::string& path, bool warn) {
    std::vector<std::string> rows;
    std::ifstream in(path);
    int number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (line.empty()) continue;
        const nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
        if (row.is_discarded() || !row.is_object()) {
            if (warn)
                fmt::print(stderr,
                           "shardlab: {} line {} is not a whole JSON row (a run killed while "
                           "writing it?): dropped\n",
                           path, number);
            continue;
        }
        rows.push_back(line);
    }
    return rows;
}
} // namespace

StepsLog::StepsLog(std::string path, int resumed_at) : path_(std::move(path)) {
    std::vector<std::string> kept;
    if (resumed_at > 0)
        for (const std::string& line : whole_rows(path_, true))
            if (nlohmann::json::parse(line).value("step", 0) <= resumed_at) kept.push_back(line);
    file_ = std::fopen(path_.c_str(), "w");
    if (!file_) fail(path_, errno);
    for (const std::string& line : kept)
        if (std::fprintf(file_, "%s\n", line.c_str()) < 0) fail(path_, errno);
    if (std::fflush(file_) != 0) fail(path_, errno);
}

StepsLog::~StepsLog() {
    if (file_) std::fclose(file_);
}

void StepsLog::append(const nlohmann::json& row) {
    const std::string line = row.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
        fail(path_, errno);
}

nlohmann::json StepsLog::rows_after(int step) const {
    nlohmann::json rows = nlohmann::json::array();
    for (const std::string& line : whole_rows(path_, false)) {
        nlohmann::json row = nlohmann::json::parse(line);
        if (row.value("step", 0) > step) rows.push_back(std::move(row));
    }
    return rows;
}

} // namespace shardlab
