// Gather a unit, hash it, write it, let it go.
#include "launch/final_weights.h"

#include "launch/sha256.h"
#include "model/param_layout.h"
#include "model/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <memory>

namespace shardlab {

namespace {
// The file --save-weights names, opened on the lead; a failure is kept in `error`, not thrown: the
// other ranks are already in the gathers, and the run's report must still be written.
std::unique_ptr<SafeTensorsWriter> open_weights(const ParamLayout& layout, const GPTConfig& config,
                                                const std::string& path, std::string& error) {
    std::vector<TensorEntry> entries; // tensors in unit order: each unit is one write
    for (const ParamUnit& u : layout.units())
        for (const ParamInfo& p : u.params) entries.push_back({p.name, DType::f32, p.shape});
    try {
        return std::make_unique<SafeTensorsWriter>(
            path,
            std::map<std::string, std::string>{{"format", "pt"},
                                               {"config", config_to_json(config).dump()}},
            entries);
    } catch (const Error& e) {
        error = e.what();
        return nullptr;
    }
}
} // namespace

FinalWeights hash_and_save_weights(ZeroEngine& engine, const GPTConfig& config,
                                   const std::string& save_path, bool lead) {
    const ParamLayout layout(config);
    FinalWeights result;
    std::unique_ptr<SafeTensorsWriter> out;
    if (lead && !save_path.empty())
        out = open_weights(layout, config, save_path, result.save_error);
    Sha256 hash;
    std::uint64_t written = 0;
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        const std::vector<float> unit = engine.consolidated_unit(int(u)); // gather
        // Tensor by tensor, each its true elements: wte's padding rows are neither hashed nor
        // written, so the hash and the file are the same for every --vocab-multiple.
        for (const ParamInfo& p : layout.units()[u].params) {
            const float* first = unit.data() + p.offset;
            hash.update(first, p.numel * sizeof(float));
            try {
                if (out) out->write(written, first, p.numel * sizeof(float));
            } catch (const Error& e) { // e.g. a full disk: drop the file, keep gathering, hashing
                result.save_error = e.what();
                out.reset(); // removes the partial file
            }
            written += p.numel * sizeof(float);
        }
    } // each unit released before the next is gathered
    try {
        if (out) out->finish();
    } catch (const Error& e) {
        result.save_error = e.what();
    }
    result.hash = hash.hex();
    return result;
}

} // namespace shardlab
