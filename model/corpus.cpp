// Reads the license directory; splits by position.
#include "model/corpus.h"

#include "core/error.h"
#include "core/read_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace shardlab {

TrainValSplit default_corpus(double val_fraction, const std::string& dir) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
    if (ec || files.empty())
        throw Error("no default corpus: '" + dir +
                    "' is missing or empty (Debian's base-files provides it); "
                    "give a text file or token shard with --data");
    std::sort(files.begin(), files.end());
    TrainValSplit data;
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        const auto bytes = read_rest<std::vector<unsigned char>>(in);
        const std::vector<std::uint16_t> tokens(bytes.begin(), bytes.end());
        const TrainValSplit part = split_train_val(tokens, val_fraction);
        data.train.insert(data.train.end(), part.train.begin(), part.train.end());
        data.val.insert(data.val.end(), part.val.begin(), part.val.end());
    }
    return data;
}

TrainValSplit split_train_val(const std::vector<std::uint16_t>& tokens, double val_fraction) {
    const std::size_t n_val = std::size_t(double(tokens.size()) * val_fraction);
    TrainValSplit s;
    s.train.assign(tokens.begin(), tokens.end() - std::ptrdiff_t(n_val));
    s.val.assign(tokens.end() - std::ptrdiff_t(n_val), tokens.end());
    return s;
}

} // namespace shardlab
