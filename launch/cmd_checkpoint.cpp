// `shardlab checkpoint inspect DIR` (what a checkpoint holds, every file verified) and
// `shardlab checkpoint export DIR --out W.safetensors|FOLDER/` (the fp32 master weights,
// consolidated one rank file at a time, so it never holds more than one file's share of the model).
#include "core/error.h"
#include "core/file_target.h"
#include "launch/commands.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "model/weights_writer.h"
#include "optim/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>

namespace shardlab {

namespace {
namespace fs = std::filesystem;

std::string file_of(const std::string& cdir, int q) {
    return (fs::path(cdir) / fmt::format("rank-{}.bin", q)).string();
}

int inspect(const std::string& dir) {
    const std::string cdir = find_checkpoint_dir(dir);
    const nlohmann::json meta = read_checkpoint_meta(cdir);
    const nlohmann::json& c = meta["config"];
    const ModelConfig model = checkpoint_model(meta);
    const ParamLayout layout(model);
    const int N = meta["ranks"].get<int>();
    fmt::print("checkpoint {}\n  model      {}\n  training   {} ZeRO-{}, global batch {} "
               "sequences of {} tokens, step {} of {}\n  data       sha256 {}\n",
               cdir, model.describe(), c.value("precision", "?"), c.value("zero", -1),
               c.value("global_batch_seqs", 0), c.value("seq", 0), meta.value("iteration", 0),
               c.value("steps", 0), c.value("data_sha256", "?"));
    fmt::print("  units      {} (", layout.num_units());
    for (std::size_t u = 0; u < layout.num_units(); ++u)
        fmt::print("{}{} {}", u ? ", " : "", layout.units()[u].name, layout.units()[u].numel);
    fmt::print(" elements)\n  written by {} rank(s); each file holds its slice of every unit "
               "(fp32 master, m, v):\n",
               N);
    for (int q = 0; q < N; ++q) {
        const CheckpointFile f = read_rank_file(cdir, q, N, layout.unit_numels());
        std::uint64_t elements = 0;
        for (const CheckpointSection& s : f.units) elements += s.range.count;
        fmt::print("    rank-{}.bin  {:>12} bytes  {:>10} elements  step {}  loss scale {:g}  "
                   "checksum ok\n",
                   q, fs::file_size(file_of(cdir, q)), elements, f.iteration, f.loss_scale);
        check(f.iteration == meta.value("iteration", -1),
              fmt::format("rank-{}.bin is at step {}, meta.json says {}; the checkpoint is "
                          "inconsistent",
                          q, f.iteration, meta.value("iteration", -1)));
    }
    fmt::print("resumable at any rank count M with a global batch of {} sequences "
               "(M x micro-batch x grad-accum), at any ZeRO stage\n",
               c.value("global_batch_seqs", 0));
    return 0;
}

// --out inside the checkpoint being read, or inside another checkpoint of its run, would replace
// a rank file or meta.json with the weights (or be replaced by the run's next save).
void check_export_target(const std::string& out, const std::string& cdir) {
    std::vector<std::string> checkpoints = {cdir};
    for (const char* name : kCheckpointDirs)
        checkpoints.push_back((fs::path(run_directory_of(cdir)) / name).string());
    for (const std::string& c : checkpoints)
        if (is_within(out, c))
            throw UsageError(fmt::format("--out {} is inside the checkpoint directory {}, whose "
                                         "files it would replace; write the weights outside it",
                                         out, c));
}

int export_weights(const std::string& dir, const std::string& out, std::uint64_t shard_bytes) {
    const std::string cdir = find_checkpoint_dir(dir);
    check_export_target(out, cdir);
    const nlohmann::json meta = read_checkpoint_meta(cdir);
    const ModelConfig model = checkpoint_model(meta);
    const ParamLayout layout(model);
    WeightsWriter w(out, model, DType::f32, shard_bytes);
    const int N = meta["ranks"].get<int>();
    for (int q = 0; q < N; ++q) {
        const CheckpointFile f = read_rank_file(cdir, q, N, layout.unit_numels());
        check(f.iteration == meta.value("iteration", -1),
              fmt::format("rank-{}.bin is at step {}, meta.json says {}; the checkpoint is "
                          "inconsistent: {}",
                          q, f.iteration, meta.value("iteration", -1),
                          earlier_checkpoint_hint(cdir)));
        for (std::size_t u = 0; u < f.units.size(); ++u) { // each tensor's part of the slice
            const CheckpointSection& s = f.units[u];
            for_each_tensor_part(layout.units()[u].params, s.range.begin, s.range.count,
                                 [&](std::size_t k, std::uint64_t in_tensor, std::uint64_t in_range,
                                     std::uint64_t count) {
                                     w.write(int(u), k, in_tensor, s.master.data() + in_range,
                                             count);
                                 });
        }
    }
    w.finish();
    fmt::print("wrote {}: {}, fp32 master weights at step {} (from {} rank file(s))\n", out,
               model.describe(), meta.value("iteration", 0), N);
    return 0;
}
} // namespace

CommandRunner add_checkpoint_command(CLI::App& cmd) {
    struct Options {
        std::string dir, out;
        std::uint64_t shard_size = kDefaultShardBytes;
    };
    auto o = std::make_shared<Options>();
    cmd.require_subcommand(1);
    CLI::App* ins = cmd.add_subcommand("inspect", "What a checkpoint holds; verifies every file");
    ins->add_option("DIR", o->dir, "A run's --out directory (or its checkpoint/)")->required();
    CLI::App* exp = cmd.add_subcommand("export", "Consolidated fp32 weights as .safetensors");
    exp->add_option("DIR", o->dir, "A run's --out directory (or its checkpoint/)")->required();
    exp->add_option("--out", o->out,
                    "Output .safetensors file, or a folder (ending in '/', or an existing "
                    "directory) in Hugging Face's layout")
        ->required();
    exp->add_option("--shard-size", o->shard_size,
                    "Largest shard of an --out folder, e.g. 5GB (the default), 500MB")
        ->transform(CLI::AsSizeValue(true))
        ->check(CLI::Range(std::uint64_t(1), std::uint64_t(1) << 50));
    return [o, exp] {
        return exp->parsed() ? export_weights(o->dir, o->out, o->shard_size) : inspect(o->dir);
    };
}

} // namespace shardlab
