// Runs the peer script (launch/python_tool.h) and reads its last output line as JSON.
#include "launch/pytorch_peer.h"

#include "core/error.h"
#include "launch/python_tool.h"
#include "model/family.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace shardlab {

std::string peer_script_path() {
    return tool_script_path("torch_bench_step.py");
}

// The peer's embedding and head get the rows shardlab's GEMMs run with (the padded V: a PyTorch
// user pads too, as nanoGPT does 50257 -> 50304); its CPU threads at least 1 (a GPU run's own
// count is 0: the host threads barely matter there).
nlohmann::json run_pytorch_peer(const PeerRun& r) {
    const ModelConfig& c = r.config;
    auto n = [](auto v) { return fmt::format("{}", v); };
    std::vector<std::string> args = {
        "--layers",    n(c.layers), "--hidden",  n(c.hidden),
        "--heads",     n(c.heads),  "--vocab",   n(c.padded_vocab()),
        "--seq",       n(r.seq),    "--batch",   n(r.batch),
        "--precision", r.precision, "--threads", n(std::max(1, r.threads)),
        "--steps",     n(r.steps),  "--warmup",  n(r.warmup),
        "--device",    r.device};
    const std::vector<std::string> family_args = family(c.arch).peer_args(c);
    args.insert(args.end(), family_args.begin(), family_args.end());
    const std::string output =
        run_python_tool("--peer pytorch", "torch", r.python, peer_script_path(), args);
    std::string last;
    const std::size_t end = output.find_last_not_of('\n');
    if (end != std::string::npos) {
        const std::size_t begin = output.rfind('\n', end);
        last = output.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin + 1));
    }
    if (last.empty() || last[0] != '{')
        throw UsageError("--peer pytorch: `" + r.python + " " + peer_script_path() +
                         "` printed no JSON line (is torch installed for it? choose the "
                         "interpreter with --python):\n" +
                         output);
    return nlohmann::json::parse(last);
}

} // namespace shardlab
