// Temperature sampling with a counter-based RNG (identical on every rank).
#include "model/generate.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>

namespace shardlab {

std::vector<std::uint16_t> generate(Model& model, UnitParams& params,
                                    std::vector<std::uint16_t> tokens, int new_tokens,
                                    float temperature, std::uint64_t seed,
                                    const std::function<void()>& before_forward) {
    check(model.batch() == 1, "generate needs a model built for batch 1");
    check(!tokens.empty(), "generate needs a non-empty prompt");
    const int T_ = model.seq(), V = int(model.layout().units()[0].params[0].shape[0]);
    std::vector<std::uint16_t> window(T_), dummy(T_, 0);
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int k = 0; k < new_tokens; ++k) {
        const std::size_t keep = std::min<std::size_t>(tokens.size(), std::size_t(T_));
        std::fill(window.begin(), window.end(), 0);
        std::copy(tokens.end() - std::ptrdiff_t(keep), tokens.end(), window.begin());
        before_forward();
        model.forward(params, window.data(), dummy.data());
        model.take_losses(); // (of the dummy targets: not needed)
        const std::vector<float> all = model.logits();
        const float* logits = all.data() + (keep - 1) * std::size_t(V);
        std::vector<double> p(V);
        double maxv = -INFINITY, sum = 0;
        for (int v = 0; v < V; ++v) maxv = std::max(maxv, double(logits[v]) / temperature);
        for (int v = 0; v < V; ++v)
            sum += (p[v] = std::exp(double(logits[v]) / temperature - maxv));
        state ^= state >> 12, state ^= state << 25, state ^= state >> 27; // xorshift64*
        const double u = double((state * 2685821657736338717ull) >> 11) * 0x1p-53 * sum;
        double acc = 0;
        int pick = V - 1;
        for (int v = 0; v < V; ++v)
            if ((acc += p[v]) > u) {
                pick = v;
                break;
            }
        tokens.push_back(std::uint16_t(pick));
    }
    return tokens;
}

} // namespace shardlab
