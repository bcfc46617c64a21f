// MachineProfile: the rates of one machine and rank layout that the time model (docs/TIME.md)
// turns bytes and FLOPs into seconds with — GEMM FLOP/s per dtype, the memory-bound kernels'
// bandwidth, host<->device copy bandwidth, the host AdamW rate, and per link class each
// collective's alpha and beta. Measured by `shardlab calibrate` (measure/calibrate.h) or one of
// the built-in profiles (plan/builtin_profiles.h); written and read as JSON with a schema
// version, every value's unit in its key. A value: plan reads one, nothing writes to it.
#pragma once

#include "model/gemm_shape.h"
#include "plan/alpha_beta_fit.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardlab {

constexpr int kProfileSchemaVersion = 1;

struct GemmSample {
    GemmShape shape;
    double seconds = 0; // one call, the slowest rank's median
};
struct GemmRate {
    // The model's step-weighted rate: sum(per_step * flop) / sum(per_step * seconds) over the
    // shapes; a built-in profile's is the datasheet's peak (no shapes).
    double flop_per_s = 0;
    std::vector<GemmSample> shapes;
    // The same step-weighted rate at each micro-batch's token count calibrate timed (M of the
    // products: micro-batch x sequence), for products smaller or larger than the calibration's.
    // Empty (a built-in, an older profile): flop_per_s at every size.
    std::map<std::int64_t, double> by_tokens;
};

// The GEMM rate for products of M = tokens rows: by_tokens interpolated linearly in log(tokens)
// between the two timed sizes around it, the nearest one's outside them; flop_per_s without any.
double gemm_rate_at(const GemmRate& g, double tokens);

// Causal attention's own rate (the kernels of model/kernels/*/attention*, not a GEMM library's):
// the FLOPs docs/TIME.md section 5 counts for one forward and one backward over the calibration
// shape, over the measured seconds. Keyed by dtype, then "flash" | "materialize".
struct AttentionRate {
    double forward_flop_per_s = 0, backward_flop_per_s = 0;
    int batch = 0, seq = 0, heads = 0, head_dim = 0; // the shape timed
};

struct KernelSample {
    std::string name, dtype; // "layernorm.forward", "bf16"
    double bytes = 0;        // the bytes the kernel must read and write
    double seconds = 0;      // one call, the slowest rank's median
};

struct CollectiveSample {
    std::uint64_t bytes = 0; // the collective's buffer S
    int steps = 0;           // ring steps
    double step_bytes = 0;   // bytes a rank sends per step (S / N)
    double seconds = 0;      // one call, the slowest rank's
};
struct CollectiveFit {
    AlphaBeta fit;                         // per ring step
    std::vector<CollectiveSample> samples; // what it was fitted to (none in a built-in)
};
struct LinkProfile {
    std::vector<int> ranks;                   // the world ranks timed (a pair across the class)
    std::map<std::string, CollectiveFit> ops; // "allgather", "reduce_scatter", "allreduce"
};

struct MachineProfile {
    int schema_version = kProfileSchemaVersion;
    std::string name = "measured"; // or the built-in's name
    std::string description;       // a built-in's node, in words
    std::string cpu, device, date; // the host CPU, what the ranks computed on, ISO 8601 UTC
    int ranks = 1, nodes = 1;
    std::string layout;   // "1 node x 2 ranks"
    nlohmann::json model; // the model and micro-batch the GEMM shapes came from (measured only)
    std::map<std::string, GemmRate> gemm; // by dtype name: "fp32", "bf16", "fp16"
    // By dtype, then kind; absent (a built-in, or a profile written before it was measured):
    // attention is priced at the GEMM rate.
    std::map<std::string, std::map<std::string, AttentionRate>> attention;
    double memory_bound_bytes_per_s = 0; // sum of bytes / sum of seconds over the kernels
    std::vector<KernelSample> memory_kernels;
    // Per dtype: sum of bytes / sum of seconds over that dtype's kernels — derived from the
    // kernels on reading (so a profile written before it existed reads the same); a built-in has
    // no kernels and uses memory_bound_bytes_per_s for every dtype.
    std::map<std::string, double> memory_bound_by_dtype;
    std::uint64_t copy_bytes = 0; // the size the copies were timed at
    double h2d_pinned_bytes_per_s = 0, d2h_pinned_bytes_per_s = 0;
    double h2d_pageable_bytes_per_s = 0, d2h_pageable_bytes_per_s = 0;
    double host_adamw_params_per_s = 0; // the bare kernel (a built-in: the host's published rate)
    std::uint64_t host_adamw_params = 0;
    // By the parameters' dtype: offload's whole tile pipeline as a run gets it (copies,
    // conversions and AdamW sharing the host: measure/offload_rate.h); absent in a built-in or an
    // older profile, where the pipeline is priced from the kernel rate and the copy bandwidths.
    std::map<std::string, double> offload_params_per_s;
    std::map<std::string, LinkProfile> links;   // "intra_node", "inter_node": those present
    std::map<std::string, std::string> sources; // a built-in's citation for each value
};

// The kernels' aggregate per dtype: sum of bytes / sum of seconds of that dtype's samples.
std::map<std::string, double> memory_bound_per_dtype(const std::vector<KernelSample>& kernels);
// The memory-bound bandwidth for kernels in `dtype` ("bf16"): the dtype's aggregate where the
// profile has one, else the all-dtype memory_bound_bytes_per_s.
double memory_bound_rate(const MachineProfile& p, const std::string& dtype);
// The host update's rate per tile for `dtype` parameters: the measured pipeline where the profile
// has it, else the bare kernel's (docs/TIME.md section 7).
double host_update_rate(const MachineProfile& p, const std::string& dtype);

nlohmann::json profile_to_json(const MachineProfile& p);
// Checks the schema version and that every value is present and positive (alpha may be 0);
// throws UsageError naming the key, `where` (the file) and the fix.
MachineProfile profile_from_json(const nlohmann::json& j, const std::string& where);
// A built-in's name (plan/builtin_profiles.h) or a profile file; a UsageError naming the
// built-ins and `shardlab calibrate --out` for anything else.
MachineProfile load_profile(const std::string& name_or_file);
// Every value with its unit (and a built-in's sources), for `shardlab calibrate --show`.
std::string describe_profile(const MachineProfile& p);

} // namespace shardlab
