// Training text that needs no download: the license texts every Debian machine has under
// /usr/share/common-licenses (real English, ~300 KB), concatenated in name order as byte tokens
// (V = 256); and the split of any token stream into training and validation parts.
#pragma once

#include "model/token_data.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

struct TrainValSplit {
    std::vector<std::uint16_t> train, val;
};

// Regular files only (symlinks such as GPL -> GPL-3 would repeat text), sorted by name. The last
// `val_fraction` of each file is validation, so both parts hold every license's kind of English
// (a tail split of the concatenation would validate on the Mozilla licenses alone).
inline constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";
TrainValSplit default_corpus(double val_fraction, const std::string& dir = kDefaultCorpusDir);
// The last `val_fraction` of the tokens is validation: never trained on.
TrainValSplit split_train_val(const std::vector<std::uint16_t>& tokens, double val_fraction);

} // namespace shardlab
