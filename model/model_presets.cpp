// The table: the families' presets, in model/family_list.h's order.
#include "model/model_presets.h"

#include "core/error.h"
#include "model/family.h"

namespace shardlab {

std::string model_preset_names() {
    std::string s;
    for (const Family* f : all_families()) {
        if (!s.empty()) s += "; ";
        for (const ModelPreset& p : f->presets())
            s += (&p == f->presets().data() ? "" : ", ") + std::string(p.name);
        s += std::string(" (") + f->name + ")";
    }
    return s;
}

const ModelConfig* find_model_preset(const std::string& name) {
    for (const Family* f : all_families())
        for (const ModelPreset& p : f->presets())
            if (name == p.name) return &p.config;
    return nullptr;
}

ModelConfig model_preset(const std::string& name) {
    if (const ModelConfig* c = find_model_preset(name)) return *c;
    throw UsageError("unknown preset '" + name + "'; use " + model_preset_names());
}

} // namespace shardlab
