// Running one of shardlab's Python tools (tools/*.py) in a child process: where the tools live,
// which interpreter runs them, and what a failure says. Used by `bench step --peer pytorch`,
// `shardlab report` and `shardlab plan --plot`; the C++ side never links Python.
#pragma once

#include <string>
#include <vector>

namespace shardlab {

// The interpreter the tools default to: Debian's, which has numpy, matplotlib (and here torch);
// a `python3` first on PATH may be a virtualenv without them.
inline constexpr const char* kDefaultPython = "/usr/bin/python3";

// tools/NAME: under $SHARDLAB_TOOLS_DIR, else the source tree this binary was built from.
std::string tool_script_path(const std::string& name);

// Runs `python script args...` through /bin/sh with every word quoted and returns its output
// (stdout and stderr together). Throws UsageError starting with `what` (the flag or command) when
// the script is missing (naming SHARDLAB_TOOLS_DIR), or when it fails: "`python script` failed
// (is NEEDS installed for it? choose the interpreter with --python):" and its output.
std::string run_python_tool(const std::string& what, const std::string& needs,
                            const std::string& python, const std::string& script,
                            const std::vector<std::string>& args);

} // namespace shardlab
