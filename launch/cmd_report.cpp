// `shardlab report DIR`: the plots of a finished training run — loss, memory measured vs planned,
// per-phase peaks, communication, step time — and a one-page summary.md embedding them, drawn by
// tools/report.py (matplotlib) in a child process (launch/python_tool.h). This side checks DIR
// first, so a wrong directory gets a message naming the fix instead of a Python traceback.
#include "core/error.h"
#include "launch/cli_util.h"
#include "launch/commands.h"
#include "launch/python_tool.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <memory>

namespace shardlab {

namespace {
struct ReportFlags {
    std::string dir, out, python = kDefaultPython;
};

// DIR must hold the report.json a training run writes when it ends.
void check_run_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(dir, ec))
        throw UsageError(dir + " does not exist; run `shardlab train --out " + dir +
                         "` first, then `shardlab report " + dir + "`");
    if (!fs::is_directory(dir, ec))
        throw UsageError(dir + " is not a directory; give the --out directory of a training run");
    const std::string report = (fs::path(dir) / "report.json").string();
    if (!fs::exists(report, ec))
        throw UsageError(dir + " has no report.json (a run writes it when it ends); run " +
                         "`shardlab train --out " + dir + "` first, or finish a killed run " +
                         "with `shardlab train --resume " + dir + "`");
    std::ifstream in(report);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(report + " is not valid JSON (" + e.what() + "); run `shardlab train " +
                         "--out " + dir + " --overwrite` again to write a new one");
    }
    if (!j.is_object() || !j.contains("config") || !j.contains("ranks") || !j.contains("steps"))
        throw UsageError(report + " is not a shardlab training report (it lacks config, ranks " +
                         "or steps); give the --out directory of `shardlab train`");
}

int run_report(const ReportFlags& f) {
    check_run_dir(f.dir);
    const std::string out = f.out.empty() ? f.dir : f.out;
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    check_writable_directory(out, "--out " + out);
    fmt::print("{}", run_python_tool("report", "matplotlib", f.python,
                                     tool_script_path("report.py"), {f.dir, "--out", out}));
    return 0;
}
} // namespace

CommandRunner add_report_command(CLI::App& cmd) {
    auto f = std::make_shared<ReportFlags>();
    cmd.add_option("dir", f->dir, "A training run's --out directory (holding report.json)")
        ->required();
    cmd.add_option("--out", f->out, "Where the PNGs and summary.md go (default: DIR)");
    cmd.add_option("--python", f->python, "The interpreter that runs tools/report.py (matplotlib)");
    return [f] { return run_report(*f); };
}

} // namespace shardlab
