// Gather a unit, hash it and write it a piece at a time, let it go.
#include "launch/final_weights.h"

#include "launch/sha256.h"
#include "model/param_layout.h"
#include "model/weights_writer.h"

#include <algorithm>
#include <memory>

namespace shardlab {

namespace {
// The file or folder --save-weights names, opened on the lead; a failure is kept in `error`, not
// thrown: the other ranks are already in the gathers, and the run's report must still be written.
std::unique_ptr<WeightsWriter> open_weights(const ModelConfig& config, const std::string& path,
                                            std::uint64_t shard_bytes, std::string& error) {
    try {
        return std::make_unique<WeightsWriter>(path, config, DType::f32, shard_bytes);
    } catch (const Error& e) {
        error = e.what();
        return nullptr;
    }
}
} // namespace

FinalWeights hash_and_save_weights(ZeroEngine& engine, const ModelConfig& config,
                                   const std::string& save_path, bool lead,
                                   std::uint64_t shard_bytes, std::size_t piece) {
    const ParamLayout layout(config);
    FinalWeights result;
    std::unique_ptr<WeightsWriter> out;
    if (lead && !save_path.empty())
        out = open_weights(config, save_path, shard_bytes, result.save_error);
    Sha256 hash;
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        // Piece by piece (the unit gathered once, on the device side), the part of each tensor
        // the piece holds: tensors' true elements only — wte's padding rows are neither hashed
        // nor written, so the hash and the file are the same for every --vocab-multiple.
        const auto& params = layout.units()[u].params;
        engine.for_each_consolidated_piece(
            int(u),
            [&](std::uint64_t lo, const float* values, std::size_t n) {
                for_each_tensor_part(
                    params, lo, n,
                    [&](std::size_t k, std::uint64_t in_tensor, std::uint64_t in_piece,
                        std::uint64_t count) {
                        const float* first = values + in_piece;
                        hash.update(first, count * sizeof(float));
                        try {
                            if (out) out->write(int(u), k, in_tensor, first, count);
                        } catch (const Error& e) { // e.g. a full disk: drop the file, keep hashing
                            result.save_error = e.what();
                            out.reset(); // removes the partial files
                        }
                    });
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
