// Gather a unit, hash it and write it a piece at a time, let it go.
#include "launch/final_weights.h"

#include "launch/sha256.h"
#include "model/param_layout.h"
#include "model/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

namespace shardlab {

namespace {
// The file --save-weights names, opened on the lead; a failure is kept in `error`, not thrown: the
// other ranks are already in the gathers, and the run's report must still be written.
std::unique_ptr<SafeTensorsWriter> open_weights(const ParamLayout& layout,
                                                const ModelConfig& config, const std::string& path,
                                                std::string& error) {
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

FinalWeights hash_and_save_weights(ZeroEngine& engine, const ModelConfig& config,
                                   const std::string& save_path, bool lead, std::size_t piece) {
    const ParamLayout layout(config);
    FinalWeights result;
    std::unique_ptr<SafeTensorsWriter> out;
    if (lead && !save_path.empty())
        out = open_weights(layout, config, save_path, result.save_error);
    Sha256 hash;
    std::uint64_t written = 0;
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        // Piece by piece (the unit gathered once, on the device side), the part of each tensor
        // the piece holds: tensors' true elements only — wte's padding rows are neither hashed
        // nor written, so the hash and the file are the same for every --vocab-multiple.
        const auto& params = layout.units()[u].params;
        engine.for_each_consolidated_piece(
            int(u),
            [&](std::uint64_t lo, const float* values, std::size_t n) {
                for (const ParamInfo& p : params) {
                    const std::uint64_t a = std::max<std::uint64_t>(lo, p.offset);
                    const std::uint64_t b = std::min<std::uint64_t>(lo + n, p.offset + p.numel);
                    if (a >= b) continue;
                    const float* first = values + (a - lo);
                    hash.update(first, (b - a) * sizeof(float));
                    try {
                        if (out) out->write(written, first, (b - a) * sizeof(float));
                    } catch (const Error& e) { // e.g. a full disk: drop the file, keep hashing
                        result.save_error = e.what();
                        out.reset(); // removes the partial file
                    }
                    written += (b - a) * sizeof(float);
                }
            },
            piece);
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
