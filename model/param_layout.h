// ParamLayout: where every parameter lives. Parameters are grouped into sharding units — the
// embeddings, each transformer block, the final unit (GPT-2's ln_f; a Llama's norm and untied
// lm_head) — each one flat buffer; a tensor is a named view (Hugging Face name and shape; GPT-2's
// Conv1D [in, out], a Llama's nn.Linear [out, in]: model/llama/llama_layout.h) at an offset.
// wte is the one tensor that may take more room than its shape: it is stored with padded_vocab()
// rows, and the rows past V — `stored - numel` elements after it — are zero padding that belongs
// to no tensor: files never see it, the optimizer never updates it (optim/updater.cpp cuts
// segments by numel), the loss masks it (docs/DECISIONS.md, "Vocabulary padding").
#pragma once

#include "model/model_config.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

struct ParamInfo {
    std::string name;                // "transformer.h.3.attn.c_attn.weight"
    std::vector<std::int64_t> shape; // [768, 2304]
    std::size_t offset = 0;          // elements from the start of its unit
    std::size_t numel = 0;           // elements of `shape`: what a weights file holds
    bool decay = false;              // weight decay applies: the 2-D weights only
    std::size_t stored = 0;          // elements reserved in the unit: numel, or more (wte padded)
};

struct ParamUnit {
    std::string name; // "embeddings", "h.3", "ln_f"
    std::vector<ParamInfo> params;
    std::size_t numel = 0;
};

// Appends a tensor to the unit at its end; returns its offset. `stored`: the elements it takes in
// the unit when more than its shape's (the padded vocabulary's rows after it).
std::size_t add_param(ParamUnit& u, std::string name, std::vector<std::int64_t> shape,
                      std::size_t stored = 0);

// The tensors that elements [begin, begin + count) of their unit hold, each's true elements only
// (padding is skipped): fn(k, the first element in params[k], the same element's index from
// `begin`, how many). How a unit's slice (a gathered piece, a checkpoint's range) is written out
// tensor by tensor.
template <class Fn>
void for_each_tensor_part(const std::vector<ParamInfo>& params, std::uint64_t begin,
                          std::uint64_t count, Fn&& fn) {
    for (std::size_t k = 0; k < params.size(); ++k) {
        const std::uint64_t lo = std::max<std::uint64_t>(begin, params[k].offset);
        const std::uint64_t hi =
            std::min<std::uint64_t>(begin + count, params[k].offset + params[k].numel);
        if (lo < hi) fn(k, lo - params[k].offset, lo - begin, hi - lo);
    }
}

// The units are the family's own (Family::units: model/gpt2/gpt_layout.h,
// model/llama/llama_layout.h); so are the offsets inside a block (each family's *_block_offsets).
class ParamLayout {
  public:
    explicit ParamLayout(const ModelConfig& c);

    const std::vector<ParamUnit>& units() const { return units_; }
    std::size_t num_units() const { return units_.size(); }
    std::vector<std::uint64_t> unit_numels() const; // every unit's elements, in order
    std::size_t total_numel() const { return total_; }
    // Unit indices: 0 = embeddings, 1..L = blocks, L+1 = ln_f.
    static constexpr int kEmbeddings = 0;
    int block_unit(int layer) const { return 1 + layer; }
    int final_unit() const { return int(units_.size()) - 1; }
    std::size_t wte_offset() const { return 0; }       // the token embedding leads the first unit
    int vocab() const { return vocab_; }               // V: wte's rows in files
    int padded_vocab() const { return padded_vocab_; } // Vp: wte's rows in the unit
    // The output head is the token embedding (GPT-2): the head's forward and backward acquire the
    // embeddings unit again (optim/gather_schedule.h).
    bool tied_head() const { return tied_head_; }

    // (unit index, tensor) by Hugging Face name; nullptr when there is no such tensor.
    const ParamInfo* find(const std::string& name, int* unit = nullptr) const;

  private:
    std::vector<ParamUnit> units_;
    std::size_t total_ = 0;
    int vocab_ = 0, padded_vocab_ = 0;
    bool tied_head_ = true;
};

} // namespace shardlab
