// `shardlab init`: freshly initialised weights of any family (seeded, its own init) to a
// safetensors file or a Hugging Face folder.
#include "core/error.h"
#include "launch/commands.h"
#include "launch/flag_checks.h"
#include "launch/model_options.h"
#include "model/families.h"
#include "model/weights_io.h"

#include <fmt/format.h>

#include <memory>

namespace shardlab {

CommandRunner add_init_command(CLI::App& cmd) {
    struct Options {
        ModelOptions model;
        std::uint64_t seed = 1337;
        std::string out, dtype = "fp32";
        std::uint64_t shard_size = kDefaultShardBytes;
    };
    auto o = std::make_shared<Options>();
    add_model_options(cmd, o->model);
    cmd.add_option("--seed", o->seed, "Initialisation seed (0 to 2^64 - 1)")->check(seed_range());
    cmd.add_option("--dtype", o->dtype, "Stored dtype: fp32 | bf16");
    cmd.add_option("--out", o->out,
                   "Output .safetensors file, or a folder (ending in '/', or an existing "
                   "directory) in Hugging Face's layout")
        ->required()
        ->check(CLI::Validator(
            [](std::string& path) -> std::string {
                return path.empty() ? "an empty path; give a .safetensors file or a folder" : "";
            },
            "a path"));
    cmd.add_option("--shard-size", o->shard_size,
                   "Largest shard of an --out folder, e.g. 5GB (the default), 500MB")
        ->transform(CLI::AsSizeValue(true))
        ->check(CLI::Range(std::uint64_t(1), std::uint64_t(1) << 50));
    return [o] {
        const ModelConfig c = o->model.config();
        const DType t = parse_dtype(o->dtype);
        if (t == DType::f16)
            throw UsageError("--dtype fp16 is not a storage format for weights; use fp32 or bf16");
        const ParamLayout layout(c);
        save_weights(o->out, c, initial_values(c, layout, o->seed), t, o->shard_size);
        fmt::print("wrote {}: {} seed {}, {}\n", o->out, c.describe(), o->seed, dtype_name(t));
        return 0;
    };
}

} // namespace shardlab
