// Runs the peer script through popen and reads its last output line as JSON.
#include "launch/pytorch_peer.h"

#include "core/error.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace shardlab {

std::string peer_script_path() {
    const char* dir = std::getenv("SHARDLAB_TOOLS_DIR");
    return std::string(dir && *dir ? dir : SHARDLAB_SOURCE_DIR "/tools") + "/torch_bench_step.py";
}

namespace {
std::string quoted(const std::string& s) { // for /bin/sh: single quotes, ' as '\''
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}
} // namespace

nlohmann::json run_pytorch_peer(const PeerRun& r) {
    const std::string script = peer_script_path();
    if (!std::filesystem::exists(script))
        throw UsageError("--peer pytorch: the peer script " + script +
                         " is missing; set SHARDLAB_TOOLS_DIR to the tools/ folder of a shardlab "
                         "checkout");
    const GPTConfig& c = r.config;
    const std::string cmd = fmt::format(
        "{} {} --layers {} --hidden {} --heads {} --vocab {} --seq {} --batch {} --precision {} "
        "--threads {} --steps {} --warmup {} --device {} 2>&1",
        quoted(r.python), quoted(script), c.layers, c.hidden, c.heads, c.vocab, r.seq, r.batch,
        r.precision, r.threads, r.steps, r.warmup, r.device);
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) throw UsageError("--peer pytorch: could not start " + r.python);
    std::string output, last;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, pipe)) output += buf;
    const int status = pclose(pipe);
    const std::size_t end = output.find_last_not_of('\n');
    if (end != std::string::npos) {
        const std::size_t begin = output.rfind('\n', end);
        last = output.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin + 1));
    }
    if (status != 0 || last.empty() || last[0] != '{')
        throw UsageError("--peer pytorch: `" + r.python + " " + script + "` failed (is torch " +
                         "installed for it? choose the interpreter with --python):\n" + output);
    return nlohmann::json::parse(last);
}

} // namespace shardlab
