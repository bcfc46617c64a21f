// The PyTorch peer of `shardlab bench step --peer pytorch`: runs tools/torch_bench_step.py (the
// same model, batch, threads and AdamW, written the way a PyTorch user would) in a child process
// after shardlab's own measurement — never at the same time — and returns its JSON line.
#pragma once

#include "model/model_config.h"

#include <nlohmann/json.hpp>

#include <string>

namespace shardlab {

struct PeerRun {
    ModelConfig config;
    int batch = 0, seq = 0, threads = 0, steps = 0, warmup = 0;
    std::string precision, device, python; // python: an interpreter that can import torch
};

// Throws UsageError naming the problem (no such interpreter, no torch, the script failed).
nlohmann::json run_pytorch_peer(const PeerRun& run);

// tools/torch_bench_step.py, found as launch/python_tool.h finds every tool.
std::string peer_script_path();

} // namespace shardlab
