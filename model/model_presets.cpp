// The table.
#include "model/model_presets.h"

#include "core/error.h"

namespace shardlab {

namespace {
struct Preset {
    const char* name;
    ModelConfig config;
};

ModelConfig gpt2(int L, int d, int H, int T, int V) {
    return ModelConfig{V, T, L, d, H, H};
}

// Llama-shaped: no vocabulary padding until the Llama model decides its storage (plan counts the
// model as Hugging Face holds it).
ModelConfig llama(int L, int d, int H, int Hkv, int ffn, int V, int T, bool tied, double rope_theta,
                  double eps) {
    ModelConfig c{V, T, L, d, H, Hkv, 1};
    c.arch = Architecture::llama;
    c.ffn_width = ffn;
    c.tied_head = tied;
    c.rope_theta = rope_theta;
    c.norm_eps = eps;
    return c;
}

// Llama 3.1 / 3.2's published rope_scaling: factor, low and high frequency factors, the context
// the frequencies were trained at.
ModelConfig rope_scaled(ModelConfig c, double factor, double low, double high, int context) {
    c.rope_factor = factor, c.rope_low_freq = low, c.rope_high_freq = high;
    c.rope_original_context = context;
    return c;
}

const Preset kPresets[] = {
    {"tiny", gpt2(4, 256, 4, 256, 256)},
    {"gpt2", gpt2(12, 768, 12, 1024, 50257)},
    {"gpt2-medium", gpt2(24, 1024, 16, 1024, 50257)},
    {"gpt2-large", gpt2(36, 1280, 20, 1024, 50257)},
    {"gpt2-xl", gpt2(48, 1600, 25, 1024, 50257)},
    // For tests: tiny's size, grouped-query attention, an untied head, an ffn not 4 x hidden
    // (688 = 8/3 x 256 rounded up to a multiple of 16, Llama's rule).
    {"tiny-llama", llama(4, 256, 4, 2, 688, 256, 256, false, 1e4, 1e-5)},
    {"smollm-135m", llama(30, 576, 9, 3, 1536, 49152, 2048, true, 1e4, 1e-5)},
    {"tinyllama-1.1b", llama(22, 2048, 32, 4, 5632, 32000, 2048, false, 1e4, 1e-5)},
    {"llama-3.2-1b",
     rope_scaled(llama(16, 2048, 32, 8, 8192, 128256, 131072, true, 5e5, 1e-5), 32, 1, 4, 8192)},
    {"llama-3-8b", llama(32, 4096, 32, 8, 14336, 128256, 8192, false, 5e5, 1e-5)},
    {"7b", llama(32, 4096, 32, 32, 11008, 32000, 4096, false, 1e4, 1e-5)}, // Llama-2-7b
    {"13b", llama(40, 5120, 40, 40, 13824, 32000, 4096, false, 1e4, 1e-5)},
    {"70b", llama(80, 8192, 64, 8, 28672, 32000, 4096, false, 1e4, 1e-5)},
};
} // namespace

const ModelConfig* find_model_preset(const std::string& name) {
    for (const Preset& p : kPresets)
        if (name == p.name) return &p.config;
    return nullptr;
}

ModelConfig model_preset(const std::string& name) {
    if (const ModelConfig* c = find_model_preset(name)) return *c;
    throw UsageError("unknown preset '" + name + "'; use " + std::string(kModelPresets));
}

} // namespace shardlab
