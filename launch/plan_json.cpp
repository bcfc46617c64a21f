// plan_json: every number of a plan under the names `plan --json` has always used.
#include "launch/plan_json.h"

#include "launch/train_report.h"
#include "model/attention_kind.h"

namespace shardlab {

namespace {
// A verdict needs a capacity: without --gpu, fits and max_micro_batch are null. A bare parameter
// count has no shape, so no activations and no largest micro-batch: fits then judges the model
// states alone.
nlohmann::json fits_json(const Plan& p) {
    return p.options.gpu_bytes ? nlohmann::json(p.fits) : nlohmann::json(nullptr);
}
nlohmann::json max_micro_batch_json(const Plan& p) {
    const bool known = p.options.gpu_bytes && p.model.arch() != Architecture::params_only;
    return known ? nlohmann::json(p.max_micro_batch) : nlohmann::json(nullptr);
}

} // namespace

nlohmann::json plan_json(const Plan& p) {
    const MemoryPlan& m = p.memory;
    nlohmann::json by_op = nlohmann::json::object();
    for (const auto& [op, b] : p.comm.by_op) by_op[op] = b;
    nlohmann::json by_op_link = nlohmann::json::object();
    for (const auto& [op, b] : p.comm.by_op_link)
        by_op_link[op] = {{"intra_node", b.intra_node}, {"inter_node", b.inter_node}};
    return {{"model",
             {{"name", p.model.name},
              {"params", p.model.params},
              {"layers", p.model.config.layers},
              {"hidden", p.model.config.hidden},
              {"heads", p.model.config.heads},
              {"kv_heads", p.model.config.kv_heads},
              {"ffn", p.model.config.ffn()},
              {"vocab", p.model.config.vocab},
              {"padded_vocab", p.model.config.padded_vocab()},
              {"params_unpadded", p.model.unpadded_params()},
              {"seq", p.options.seq ? p.options.seq : p.model.config.context}}},
            {"zero", p.options.zero},
            {"offload", p.options.offload},
            {"reproducible", p.options.reproducible},
            {"ranks", p.options.ranks},
            {"micro_batch", p.options.micro_batch},
            {"attention", attention_name(p.options.attention)},
            {"per_rank",
             {{"params", m.params},
              {"grads", m.grads},
              {"master", m.master},
              {"optimizer", m.optimizer},
              {"activations", m.activations},
              {"activations_generic", m.activations_generic},
              {"activations_exact", m.activations_exact},
              {"buffers", m.buffers},
              {"kv_cache", m.kv_cache},
              {"host_master", m.host_master},
              {"host_optimizer", m.host_optimizer},
              {"host_grads", m.host_grads},
              {"host_staging", m.host_staging},
              {"device_total", m.device_total},
              {"workspace", m.workspace ? nlohmann::json(*m.workspace) : nlohmann::json(nullptr)},
              {"host_total", m.host_total}}},
            {"comm",
             {{"bytes_per_step", p.comm.bytes_per_step},
              {"by_op", by_op},
              {"by_op_link", by_op_link},
              {"ratio_to_dp", p.comm.ratio_to_dp}}},
            {"host_device_bytes_per_step", p.comm.host_to_device + p.comm.device_to_host},
            {"reproducible_cost", reproducible_cost_json(p)},
            {"fits", fits_json(p)},
            {"max_micro_batch", max_micro_batch_json(p)},
            {"max_micro_batch_unbounded", p.max_micro_batch_unbounded}};
}

} // namespace shardlab
