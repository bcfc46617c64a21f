// Training text that needs no download: the license texts every Debian machine has under
// /usr/share/common-licenses (real English, ~300 KB), concatenated in name order as byte tokens
// (V = 256); and the split of any token stream into training and validation parts.
#pragma once

#include "model/token_data.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

// Regular files only (symlinks such as GPL -> GPL-3 would repeat text), sorted by name.
TokenData default_corpus(const std::string& dir = "/usr/share/common-licenses");

struct TrainValSplit {
    std::vector<std::uint16_t> train, val;
};
// The last `val_fraction` of the tokens is validation: never trained on.
TrainValSplit split_train_val(const std::vector<std::uint16_t>& tokens, double val_fraction);

} // namespace shardlab
