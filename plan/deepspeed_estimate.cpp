// DeepSpeed's ZeRO-2 and ZeRO-3 model-state estimates, step by step as its Python evaluates them
// (docs/MEMORY.md, "DeepSpeed's estimator, side by side", cites the lines).
#include "plan/deepspeed_estimate.h"

#include "model/family.h"

#include <algorithm>

namespace shardlab {

namespace {
// Python's int(x) for a non-negative float: truncation.
std::uint64_t py_int(double x) {
    return std::uint64_t(x);
}

// Python's n / d for ints. The quotient is rounded once, as Python rounds it, while n is exact in
// a double (n < 2^53).
double py_div(std::uint64_t n, std::uint64_t d) {
    return double(n) / double(d);
}

// Python's `total * max(k, f) * factor` with an int k and a float f: max keeps k unless f is
// larger, and an int k keeps total * k an exact int until the float factor.
double times_max(std::uint64_t total, std::uint64_t k, double f, double factor) {
    return f > double(k) ? double(total) * f * factor : double(total * k) * factor;
}
} // namespace

DeepSpeedModelCounts deepspeed_model_counts(const PlanModel& m) {
    DeepSpeedModelCounts out;
    // shardlab counts a tied weight once, as DeepSpeed does. DeepSpeed runs Hugging Face's model,
    // whose wte has the true vocabulary: the padding shardlab stores is not in its count.
    out.total_params = m.unpadded_params();
    if (m.arch() == Architecture::params_only) { // no modules: _all_cold would need the number
        out.largest_layer = "unknown (a bare parameter count has no layers; taken as 0)";
        return out;
    }
    // The candidates in model.modules() order; DeepSpeed keeps the first maximum it meets.
    const std::vector<DeepSpeedModule> modules = family(m.arch()).deepspeed_modules(m.config);
    for (const DeepSpeedModule& mod : modules)
        if (mod.params > out.largest_layer_params)
            out.largest_layer_params = mod.params, out.largest_layer = mod.name;
    return out;
}

DeepSpeedRow deepspeed_zero2(std::uint64_t total_params, DeepSpeedCluster c, bool offload_optimizer,
                             double buffer_factor) {
    const std::uint64_t P = total_params, gpus = std::uint64_t(c.nodes) * c.gpus_per_node;
    DeepSpeedRow r;
    r.stage = 2;
    r.offload_optimizer = offload_optimizer;
    if (offload_optimizer) {
        r.gpu_bytes = 2 * P;
        r.cpu_bytes = py_int(double(P * std::max<std::uint64_t>(4 * gpus, 16)) * buffer_factor);
    } else {
        // 2 (16-bit params) + 18 / N (16-bit and fp32 grads, fp32 params, Adam m and v).
        r.gpu_bytes = 2 * P + py_int(py_div(18 * P, gpus));
        r.cpu_bytes = py_int(double(P * 4 * std::uint64_t(c.gpus_per_node)) * buffer_factor);
    }
    return r;
}

DeepSpeedRow deepspeed_zero3(std::uint64_t total_params, std::uint64_t largest_layer_params,
                             DeepSpeedCluster c, bool offload_optimizer, bool offload_param,
                             bool zero_init, double buffer_factor) {
    const std::uint64_t P = total_params, gpus = std::uint64_t(c.nodes) * c.gpus_per_node,
                        per_node = std::uint64_t(c.gpus_per_node);
    const double gpus_factor = 1.0 / double(c.nodes);
    const std::uint64_t largest_layer_memory = 4 * largest_layer_params;
    DeepSpeedRow r;
    r.stage = 3;
    r.offload_optimizer = offload_optimizer;
    r.offload_param = offload_param;
    r.zero_init = zero_init;
    if (offload_optimizer) {
        // The host keeps 18 (or 16 without parameter offload) bytes per parameter per node;
        // without zero_init each process first builds the whole fp32 model on the host.
        const std::uint64_t host = offload_param ? 18 : 16;
        r.gpu_bytes = largest_layer_memory + (offload_param ? 0 : py_int(py_div(2 * P, gpus)));
        r.cpu_bytes =
            zero_init
                ? py_int(double(P * host) * gpus_factor * buffer_factor)
                : py_int(times_max(P, 4 * per_node, double(host) * gpus_factor, buffer_factor));
    } else { // DeepSpeed ignores offload_param here (its printer never asks for it)
        r.gpu_bytes = largest_layer_memory + py_int(py_div(18 * P, gpus));
        r.cpu_bytes = zero_init
                          ? py_int(double(largest_layer_params * 4 * per_node) * buffer_factor)
                          : py_int(double(P * 4 * per_node) * buffer_factor);
    }
    return r;
}

std::vector<DeepSpeedRow> deepspeed_rows(const DeepSpeedModelCounts& m, DeepSpeedCluster c) {
    std::vector<DeepSpeedRow> rows;
    for (bool offload_optimizer : {true, false})
        rows.push_back(deepspeed_zero2(m.total_params, c, offload_optimizer));
    for (bool offload_optimizer : {true, false})
        for (bool offload_param : {true, false}) {
            if (!offload_optimizer && offload_param) continue; // as DeepSpeed's loop skips it
            for (bool zero_init : {true, false})
                rows.push_back(deepspeed_zero3(m.total_params, m.largest_layer_params, c,
                                               offload_optimizer, offload_param, zero_init));
        }
    return rows;
}

} // namespace shardlab
