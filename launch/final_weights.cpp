// Gather a unit, hash it, write it, let it go.
#include "launch/final_weights.h"

#include "launch/sha256.h"
#include "model/param_layout.h"
#include "model/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <memory>

namespace shardlab {

std::string hash_and_save_weights(ZeroEngine& engine, const GPTConfig& config,
                                  const std::string& save_path, bool lead) {
    const ParamLayout layout(config);
    std::unique_ptr<SafeTensorsWriter> out;
    if (lead && !save_path.empty()) { // tensors in unit order: each unit is one write
        std::vector<TensorEntry> entries;
        for (const ParamUnit& u : layout.units())
            for (const ParamInfo& p : u.params) entries.push_back({p.name, DType::f32, p.shape});
        out = std::make_unique<SafeTensorsWriter>(
            save_path,
            std::map<std::string, std::string>{{"format", "pt"},
                                               {"config", config_to_json(config).dump()}},
            entries);
    }
    Sha256 hash;
    std::uint64_t written = 0;
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        const std::vector<float> unit = engine.consolidated_unit(int(u)); // gather
        hash.update(unit.data(), unit.size() * sizeof(float));
        if (out) out->write(written, unit.data(), unit.size() * sizeof(float));
        written += unit.size() * sizeof(float);
    } // each unit released before the next is gathered
    if (out) out->finish();
    return hash.hex();
}

} // namespace shardlab
