// StepIO: token ids checked and uploaded, losses read back once per forward.
#include "model/step_io.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace shardlab {

StepIO::StepIO(DeviceContext& context, int batch, int seq, int vocab)
    : ctx_(context), B_(batch), T_(seq), V_(vocab) {}

void StepIO::upload_tokens(const std::uint16_t* inputs, const std::uint16_t* targets) {
    for (int i = 0; i < B_ * T_; ++i)
        if (inputs[i] >= V_ || targets[i] >= V_)
            throw Error(fmt::format(
                "token id {} at position {} is not below the vocabulary size {}; "
                "use a model with --vocab > {} or data of this vocabulary",
                std::max(inputs[i], targets[i]), i, V_, std::max(inputs[i], targets[i])));
    Stream& s = ctx_.compute();
    const std::size_t bytes = std::size_t(B_) * T_ * sizeof(std::uint16_t);
    inputs_ = ctx_.tracker().allocate(bytes, Category::workspace, s);
    targets_ = ctx_.tracker().allocate(bytes, Category::workspace, s);
    s.upload(inputs_.data(), inputs, bytes);
    s.upload(targets_.data(), targets, bytes);
}

void StepIO::release_tokens() {
    inputs_.release();
    targets_.release();
}

double* StepIO::next_loss() {
    losses_.push_back(ctx_.tracker().allocate(sizeof(double), Category::workspace, ctx_.compute()));
    return losses_.back().as<double>();
}

std::vector<double> StepIO::take_losses() {
    std::vector<double> out(losses_.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        ctx_.compute().memcpy(&out[i], losses_[i].data(), sizeof(double));
    ctx_.compute().synchronize();
    losses_.clear();
    return out;
}

std::vector<float> StepIO::unpadded_logits(const Tensor& logits) {
    const std::size_t V = std::size_t(V_), Vp = std::size_t(logits.shape[1]);
    std::vector<float> all = to_host_f32(ctx_.compute(), logits);
    for (std::size_t r = 0; r < std::size_t(B_) * T_ && Vp != V; ++r) // drop the padded columns
        std::copy_n(all.begin() + std::ptrdiff_t(r * Vp), V, all.begin() + std::ptrdiff_t(r * V));
    all.resize(std::size_t(B_) * T_ * V);
    return all;
}

} // namespace shardlab
