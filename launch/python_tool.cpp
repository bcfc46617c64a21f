// popen with quoted words: the tools' own output (and errors) come back as text.
#include "launch/python_tool.h"

#include "core/error.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace shardlab {

std::string tool_script_path(const std::string& name) {
    const char* dir = std::getenv("SHARDLAB_TOOLS_DIR");
    return std::string(dir && *dir ? dir : SHARDLAB_SOURCE_DIR "/tools") + "/" + name;
}

namespace {
std::string quoted(const std::string& s) { // for /bin/sh: single quotes, ' as '\''
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}
} // namespace

std::string run_python_tool(const std::string& what, const std::string& needs,
                            const std::string& python, const std::string& script,
                            const std::vector<std::string>& args) {
    if (!std::filesystem::exists(script))
        throw UsageError(what + ": the tool script " + script +
                         " is missing; set SHARDLAB_TOOLS_DIR to the tools/ folder of a shardlab "
                         "checkout");
    std::string cmd = quoted(python) + " " + quoted(script);
    for (const std::string& a : args) cmd += " " + quoted(a);
    FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
    if (!pipe)
        throw UsageError(what + ": could not start " + python + "; choose another with --python");
    std::string output;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, pipe)) output += buf;
    if (pclose(pipe) != 0)
        throw UsageError(what + ": `" + python + " " + script + "` failed (is " + needs +
                         " installed for it? choose the interpreter with --python):\n" + output);
    return output;
}

} // namespace shardlab
