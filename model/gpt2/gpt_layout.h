// GPT-2's parameters as sharding units, under Hugging Face GPT2LMHeadModel's names and shapes
// (Conv1D's [in, out]): the embeddings (wte, stored with the padded vocabulary's rows, then wpe);
// one unit per block — ln_1, c_attn, attn.c_proj, ln_2, c_fc, mlp.c_proj, weights and biases; the
// final unit, ln_f. The head is tied to wte, so it has no tensor of its own.
#pragma once

#include "model/model_config.h"

#include <cstddef>
#include <vector>

namespace shardlab {

// Element offsets of one block's tensors inside its unit (the same for every block).
struct Gpt2BlockOffsets {
    std::size_t ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, mproj_w,
        mproj_b;
};

struct ParamUnit;
// The units ParamLayout(config) holds for a GPT-2 config.
std::vector<ParamUnit> gpt2_units(const ModelConfig& c);
Gpt2BlockOffsets gpt2_block_offsets(const ModelConfig& c);
// Offset of wpe in the embeddings unit: after wte's padded rows.
inline std::size_t gpt2_wpe_offset(const ModelConfig& c) {
    return std::size_t(c.padded_vocab()) * std::size_t(c.hidden);
}

} // namespace shardlab
